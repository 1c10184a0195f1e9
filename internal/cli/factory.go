package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/cli/iostreams"
	"github.com/slipway-dev/slipway/internal/cli/output"
)

// Factory is what commands are built from (gh's pattern): the streams, the environment, the
// global flags' values, and lazily the config file, the manager client and the kubeconfig. Each
// command copies what it needs into its Options in NewCmdX, so a test builds commands over a
// Factory of buffers.
type Factory struct {
	IOStreams *iostreams.IOStreams
	// Getenv reads the environment (tests give a map's).
	Getenv func(string) string
	// Now is the clock of relative times and waits.
	Now func() time.Time
	// Global are the root command's flags, set before any command runs.
	Global *GlobalOptions
	// Config loads the contexts file once.
	Config func() (*config.Config, error)
	// Client is the manager client of the chosen context (--context, --server, the current one).
	Client func() (*client.Client, error)
	// KubeConfig holds the kubeconfig flags of the commands that talk to Kubernetes directly
	// (registered on a command by AddKubeFlags); its client config is read only when a command
	// asks for one (ToRESTConfig, ToRawKubeConfigLoader), KUBECONFIG honoured as kubectl does.
	KubeConfig *KubeFlags
	// NewWatcher gives the deployment watch view that deploy --watch runs after submitting;
	// nil leaves deploy without --watch.
	NewWatcher func() Watcher
}

// Watcher follows one deployment until it ends, as `deployment watch` does: its flags
// (--progress, --exit-status, ...) are added to deploy when deploy has --watch.
type Watcher interface {
	AddFlags(fs *pflag.FlagSet)
	Watch(ctx context.Context, deploymentID string) error
}

// GlobalOptions are the root command's persistent flags.
type GlobalOptions struct {
	Context string
	Server  string
	Timeout time.Duration
	Output  string
}

// DefaultTimeout is --timeout's default (flux's).
const DefaultTimeout = 5 * time.Minute

// EnvContext names the variable that picks the context when --context is not given.
const EnvContext = "SLIPWAY_CONTEXT"

// EnvToken names the variable whose token replaces the context's (for CI).
const EnvToken = "SLIPWAY_TOKEN"

// NewFactory builds the factory over ios and an environment.
func NewFactory(ios *iostreams.IOStreams, getenv func(string) string) *Factory {
	f := &Factory{IOStreams: ios, Getenv: getenv, Now: time.Now,
		Global: &GlobalOptions{Timeout: DefaultTimeout, Output: string(output.FormatTable)}}
	f.Config = sync.OnceValues(func() (*config.Config, error) {
		path, err := config.Path(f.Getenv)
		if err != nil {
			return nil, err
		}
		return config.Load(path)
	})
	f.Client = func() (*client.Client, error) {
		conn, err := f.Connection()
		if err != nil {
			return nil, err
		}
		return conn.Client()
	}
	f.KubeConfig = &KubeFlags{}
	f.NewWatcher = func() Watcher { return NewWatchOptions(f) }
	return f
}

// OutputFormat is --output, checked by the root command before any command runs.
func (f *Factory) OutputFormat() output.Format { return output.Format(f.Global.Output) }

// Connection is a resolved context: the server, the token, TLS settings.
type Connection struct {
	// Context is the context's name ("" with --server and no context).
	Context  string
	Server   string
	Token    string
	CAFile   string
	Insecure bool
}

// Client builds the API client of the connection.
func (c Connection) Client() (*client.Client, error) {
	return client.New(client.Options{Server: c.Server, Token: c.Token, CAFile: c.CAFile, Insecure: c.Insecure,
		UserAgent: "slipway/" + versionString()})
}

// ErrSignedOut is the connection error of a context whose token slipway logout removed.
var ErrSignedOut = errors.New("signed out")

// ErrNotSignedIn is the connection error when no context is chosen and no --server given.
var ErrNotSignedIn = errors.New("not signed in to a manager: run slipway login SERVER (or pass --server with SLIPWAY_TOKEN set)")

// Connection resolves the manager to talk to: the --context (else $SLIPWAY_CONTEXT, else the
// current) context, its server replaced by --server and its token by $SLIPWAY_TOKEN when those
// are given.
func (f *Factory) Connection() (Connection, error) {
	cfg, err := f.Config()
	if err != nil {
		return Connection{}, err
	}
	name := f.Global.Context
	if name == "" {
		name = f.Getenv(EnvContext)
	}
	explicit := name != ""
	if name == "" {
		name = cfg.CurrentContext
	}
	var conn Connection
	if name != "" {
		ctx, ok := cfg.Context(name)
		if !ok {
			if explicit {
				return Connection{}, cfg.Use(name) // the error naming the contexts there are
			}
			return Connection{}, fmt.Errorf("the current context %q is not in %s: pick one with slipway context NAME", name, cfg.File())
		}
		conn = Connection{Context: name, Server: ctx.Server, CAFile: ctx.CertificateAuthority, Insecure: ctx.InsecureSkipTLSVerify}
		if u, ok := cfg.User(ctx.User); ok {
			conn.Token = u.Token
		}
		if conn.CAFile != "" && !filepath.IsAbs(conn.CAFile) {
			conn.CAFile = filepath.Join(filepath.Dir(cfg.File()), conn.CAFile)
		}
	}
	if f.Global.Server != "" {
		conn.Server = f.Global.Server
	}
	if tok := f.Getenv(EnvToken); tok != "" {
		conn.Token = tok
	}
	if conn.Server == "" {
		return Connection{}, &AuthError{Err: ErrNotSignedIn}
	}
	if conn.Token == "" && conn.Context != "" {
		return Connection{}, &AuthError{Err: fmt.Errorf("%w of the context %s (its token was removed by slipway logout): "+
			"sign in again with slipway login %s --name %s", ErrSignedOut, conn.Context, conn.Server, conn.Context)}
	}
	return conn, nil
}

// AddKubeFlags registers the kubeconfig flags on a command that talks to Kubernetes directly:
// --kubeconfig (default $KUBECONFIG, then ~/.kube/config), --kube-context and -n/--namespace
// (default: the kubeconfig context's namespace). Read them through f.KubeConfig
// (ToRESTConfig, ToRawKubeConfigLoader().Namespace()).
func (f *Factory) AddKubeFlags(fs *pflag.FlagSet) {
	kf := f.KubeConfig
	fs.StringVar(&kf.KubeConfig, "kubeconfig", kf.KubeConfig, "path to the kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&kf.Context, "kube-context", kf.Context, "the kubeconfig context to use (default: its current context)")
	fs.StringVarP(&kf.Namespace, "namespace", "n", kf.Namespace, "the namespace (default: the kubeconfig context's)")
}
