// Package command is the operator binary's command line: the systems it can host and its flag
// set. cmd/operator parses os.Args with it, and the tests of the chart and of config/ parse the
// arguments those manifests give the container with the very same flag set, so a flag the
// operator does not know, or a value it refuses, fails a test instead of a pod.
package command

import (
	"flag"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controller/webapp"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/operator"
)

// Controllers lists every system the operator can host, each with its own flags.
func Controllers() []operator.Controller {
	return []operator.Controller{
		werfbundle.Controller(),
		webapp.Controller(),
		catalyst.Controller(),
	}
}

// Flags is where a parsed command line lands.
type Flags struct {
	// Options configure the manager and select the controllers.
	Options operator.Options
	// Zap configures the logger (--zap-log-level and the other --zap-* flags).
	Zap zap.Options
	// Controllers are the systems whose flags the set holds (Controllers()).
	Controllers []operator.Controller
}

// NewFlagSet returns the operator's flag set, named name, and where its flags land: the manager's
// options, every controller's flags, the logger's and controller-runtime's --kubeconfig. Every
// call makes fresh controllers, so two flag sets share no value but --kubeconfig (one variable in
// controller-runtime).
func NewFlagSet(name string, handling flag.ErrorHandling) (*flag.FlagSet, *Flags) {
	fs := flag.NewFlagSet(name, handling)
	f := &Flags{Zap: zap.Options{Development: false}, Controllers: Controllers()}
	f.Options.BindFlags(fs, f.Controllers)
	f.Zap.BindFlags(fs)
	config.RegisterFlags(fs)
	return fs, f
}

// Parse parses args (without the program name) into fs. An argument that is not a flag is an
// error too: the flag package would stop there and silently ignore it and every flag after it.
// Errors are also reported on fs.Output(), as the flag package reports its own.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("argument %q is not a flag (flags are --name=value); it and everything after it would be ignored", fs.Arg(0))
		fmt.Fprintln(fs.Output(), err)
		return err
	}
	return nil
}
