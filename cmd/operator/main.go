// Command operator runs the slipway in-cluster controllers.
package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controller/webapp"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/scheme"
)

// controllers lists every system the operator can host.
var controllers = []operator.Controller{
	werfbundle.Controller(),
	webapp.Controller(),
	catalyst.Controller(),
}

func main() {
	var opts operator.Options
	opts.BindFlags(flag.CommandLine, controllers)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	// Not zap.New: it samples, and every note standing in for a dropped Event must be logged.
	ctrl.SetLogger(operator.NewLogger(zapOpts))
	log := ctrl.Log.WithName("setup")
	if limit := operator.SetMemoryLimit(0.9); limit > 0 {
		log.Info("Set the Go memory limit from the container's", "bytes", limit)
	}

	ctx := ctrl.SetupSignalHandler()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Failed to load kubeconfig")
		os.Exit(1)
	}
	mgr, err := operator.NewManager(ctx, cfg, scheme.New(), opts, controllers)
	if err != nil {
		log.Error(err, "Failed to set up the operator")
		os.Exit(1)
	}
	log.Info("Starting manager")
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Manager stopped with an error")
		os.Exit(1)
	}
	log.Info("Stopped")
}
