// Command operator runs the slipway in-cluster controllers.
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"syscall"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/slipway-dev/slipway/internal/buildhelper"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/operator/command"
	"github.com/slipway-dev/slipway/internal/scheme"
)

func main() {
	// In a build Job's pod the same image fetches the commit and pushes the image (docs/catalyst.md,
	// Build): the containers that hold the credentials, apart from the one that builds.
	if len(os.Args) > 1 && os.Args[1] == buildhelper.Command {
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := buildhelper.Main(ctx, os.Args[2:], os.Stderr)
		cancel()
		os.Exit(code)
	}
	// The same flag set the tests parse the chart's and config/'s arguments with.
	fs, flags := command.NewFlagSet(os.Args[0], flag.ContinueOnError)
	if err := command.Parse(fs, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	opts, controllers := flags.Options, flags.Controllers
	// Not zap.New: it samples, and every note standing in for a dropped Event must be logged.
	ctrl.SetLogger(operator.NewLogger(flags.Zap))
	log := ctrl.Log.WithName("setup")
	if limit := operator.SetMemoryLimit(0.9); limit > 0 {
		log.Info("Set the Go memory limit from the container's", "bytes", limit)
	}
	if operator.SetGCPercent(operator.DefaultGCPercent) {
		log.Info("Set the Go collector's target (GOGC unset)", "percent", operator.DefaultGCPercent)
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
