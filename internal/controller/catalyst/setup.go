package catalyst

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/registry"
)

// Config holds the catalyst flags.
type Config struct {
	PreviewDomain      string
	IngressNamespace   string
	BuildNamespace     string
	KanikoImage        string
	BuildKitImage      string
	BuildHelperImage   string
	PodSecurityLevel   string
	PublicEgress       bool
	Concurrency        int
	GitTimeout         time.Duration
	ValidationInterval time.Duration
	RegistryInFlight   int
	CheckoutDir        string
	DeployerRole       string
	DeployerNamespace  string
	RenderTimeout      time.Duration
	RenderMaxBytes     int64
	RenderMaxMemory    int64
	RenderConcurrency  int
	LookupTimeout      time.Duration
	LookupMaxBytes     int64
	// NamespaceAnnotations are put on every environment namespace (--catalyst-namespace-annotation).
	NamespaceAnnotations map[string]string
}

// Controller returns the Catalyst system (Projects and Environments) for the operator binary.
func Controller() operator.Controller {
	cfg := &Config{}
	return operator.Controller{
		Name:      "catalyst",
		BindFlags: cfg.bindFlags,
		Setup: func(ctx context.Context, mgr ctrl.Manager, opts operator.Options) error {
			return cfg.setup(ctx, mgr, opts)
		},
		// Build Jobs run in the build namespace alone, where Catalyst's Jobs rule is a Role.
		JobNamespaces: func() []string { return []string{cfg.BuildNamespace} },
	}
}

// bindFlags binds the catalyst flags of fs to cfg.
func (cfg *Config) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&cfg.PreviewDomain, "catalyst-preview-domain", "", "preview domain of Projects that set none: environments are served at <environment>.<domain>; empty means no Ingress for them")
	fs.StringVar(&cfg.IngressNamespace, "catalyst-ingress-namespace", DefaultIngressNamespace, "namespace of the ingress controller, allowed into environment namespaces by their NetworkPolicy")
	fs.StringVar(&cfg.BuildNamespace, "catalyst-build-namespace", DefaultBuildNamespace, "namespace the image build Jobs and their Secrets live in; its Pod Security level must admit the build engine (kaniko: baseline, buildkit: privileged)")
	fs.StringVar(&cfg.KanikoImage, "catalyst-kaniko-image", DefaultKanikoImage, "Kaniko executor image of build Jobs (build.engine kaniko)")
	fs.StringVar(&cfg.BuildKitImage, "catalyst-buildkit-image", DefaultBuildKitImage, "rootless BuildKit image of build Jobs (build.engine buildkit)")
	fs.StringVar(&cfg.BuildHelperImage, "catalyst-build-helper-image", DefaultBuildHelperImage, "image of the containers of build Jobs that fetch the commit and push the image with the credentials, apart from the build: the operator's own image")
	fs.StringVar(&cfg.PodSecurityLevel, "catalyst-pod-security-level", DefaultPodSecurityLevel, "pod-security standard enforced in environment namespaces: restricted or baseline")
	fs.BoolVar(&cfg.PublicEgress, "catalyst-public-egress", true, "let environment pods reach public IP addresses (not private, link-local or shared ranges) besides DNS and their own namespace")
	fs.IntVar(&cfg.Concurrency, "catalyst-concurrency", DefaultConcurrency, "Environments reconciled in parallel (Projects: a quarter of it, at least 1)")
	fs.DurationVar(&cfg.GitTimeout, "catalyst-git-timeout", DefaultGitTimeout, "bound of one git operation (resolving a branch, fetching a commit)")
	fs.DurationVar(&cfg.ValidationInterval, "catalyst-project-validation-interval", DefaultValidationInterval, "how often a Project's branch head is checked (±10 %)")
	fs.IntVar(&cfg.RegistryInFlight, "catalyst-registry-max-in-flight", DefaultRegistryInFlight, "registry operations in flight across all environments")
	fs.StringVar(&cfg.DeployerRole, "catalyst-deployer-cluster-role", DefaultDeployerClusterRole, "ClusterRole an environment's deployer is bound to in its namespace when its Project names none; the deployment is rendered and applied as that deployer, and the operator must be allowed to bind the role")
	fs.StringVar(&cfg.DeployerNamespace, "catalyst-deployer-namespace", DefaultDeployerNamespace, "namespace of the environments' deployers: each environment deploys as the ServiceAccount named after its namespace there, which the operator impersonates (its Role there allows it) and never creates; nothing may run in it")
	fs.DurationVar(&cfg.RenderTimeout, "catalyst-render-timeout", deploy.DefaultRenderTimeout, "bound of rendering one Helm chart's templates or building one kustomization (in a child process); a longer render fails the deploy with RenderFailed")
	fs.Int64Var(&cfg.RenderMaxBytes, "catalyst-render-max-bytes", deploy.DefaultRenderMaxBytes, "bound of one Helm chart's or kustomization's rendered output")
	fs.Int64Var(&cfg.RenderMaxMemory, "catalyst-render-max-memory", deploy.DefaultRenderMaxMemory, "bound of the heap of the child process rendering one Helm chart or kustomization, in bytes")
	fs.IntVar(&cfg.RenderConcurrency, "catalyst-render-concurrency", deploy.DefaultRenderConcurrency, "Helm charts and kustomizations rendered at once (each a child process on one CPU, at low priority)")
	cfg.LookupTimeout, cfg.LookupMaxBytes = deploy.DefaultLookupTimeout, deploy.DefaultLookupMaxBytes
	fs.Var(positiveDuration{&cfg.LookupTimeout}, "catalyst-render-lookup-timeout", "bound of each API request a Helm chart's lookup function makes through the operator while it renders, a positive `duration`; a longer one fails the deploy with RenderFailed")
	fs.Var(positiveBytes{&cfg.LookupMaxBytes}, "catalyst-render-lookup-max-bytes", "bound of each answer to a Helm chart's lookup function, a positive number of `bytes`; a larger one fails the deploy with RenderFailed")
	fs.Var(annotationsFlag{&cfg.NamespaceAnnotations}, "catalyst-namespace-annotation", "KEY=VALUE, an annotation every environment namespace carries, kept by the operator (repeat for more): "+
		"e.g. scheduler.alpha.kubernetes.io/node-selector=pool=previews sends every preview's pods to a node pool where the API server runs the PodNodeSelector admission plugin")
	fs.StringVar(&cfg.CheckoutDir, "catalyst-checkout-dir", "", "writable directory for the temporary checkouts deployed (default: the system's temporary directory; an emptyDir in the operator's pod)")
}

// renderLimits are the render flags as the deploy engine takes them.
func (cfg *Config) renderLimits() deploy.RenderLimits {
	return deploy.RenderLimits{Timeout: cfg.RenderTimeout, MaxBytes: cfg.RenderMaxBytes, MaxMemory: cfg.RenderMaxMemory,
		Concurrency: cfg.RenderConcurrency, LookupTimeout: cfg.LookupTimeout, LookupMaxBytes: cfg.LookupMaxBytes}
}

// positiveDuration and positiveBytes are flag values that refuse zero and negative values when the
// command line is parsed, so the chart's and config/'s tests, which parse the arguments they give
// the operator, catch them too: a lookup with no time or size limit is not a setting.
type positiveDuration struct{ d *time.Duration }

func (v positiveDuration) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("%s is not a positive duration", s)
	}
	*v.d = d
	return nil
}

type positiveBytes struct{ n *int64 }

func (v positiveBytes) String() string {
	if v.n == nil {
		return ""
	}
	return strconv.FormatInt(*v.n, 10)
}

func (v positiveBytes) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("not a whole number of bytes")
	}
	if n <= 0 {
		return fmt.Errorf("%d is not a positive number of bytes", n)
	}
	*v.n = n
	return nil
}

// annotationsFlag collects KEY=VALUE annotations, refusing an invalid key or one of the
// operator's own domains (catalyst.dev and below: the branch, the admission parameters, the
// copies' records), which it writes and must be able to trust, when the command line is parsed.
type annotationsFlag struct{ m *map[string]string }

func (v annotationsFlag) String() string {
	if v.m == nil || len(*v.m) == 0 {
		return ""
	}
	kv := make([]string, 0, len(*v.m))
	for k, val := range *v.m {
		kv = append(kv, k+"="+val)
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}

func (v annotationsFlag) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("%q: want KEY=VALUE", s)
	}
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return fmt.Errorf("annotation key %q: %s", k, strings.Join(errs, "; "))
	}
	if domain, _, ok := strings.Cut(k, "/"); ok && (domain == "catalyst.dev" || strings.HasSuffix(domain, ".catalyst.dev")) {
		return fmt.Errorf("annotation key %q: the operator's own domain (catalyst.dev) is not settable", k)
	}
	if *v.m == nil {
		*v.m = map[string]string{}
	}
	(*v.m)[k] = val
	return nil
}

func (cfg *Config) setup(ctx context.Context, mgr ctrl.Manager, opts operator.Options) error {
	switch cfg.PodSecurityLevel {
	case "restricted", "baseline":
	default:
		return fmt.Errorf("--catalyst-pod-security-level must be restricted or baseline, not %q", cfg.PodSecurityLevel)
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	buildNS := cfg.BuildNamespace
	if buildNS == "" {
		return errors.New("--catalyst-build-namespace must not be empty")
	}
	if cfg.DeployerNamespace == "" {
		return errors.New("--catalyst-deployer-namespace must not be empty")
	}
	deployer, err := newDeployer(mgr.GetConfig(), cfg.renderLimits())
	if err != nil {
		return err
	}
	env := &EnvironmentReconciler{
		Client:               mgr.GetClient(),
		APIReader:            mgr.GetAPIReader(),
		Recorder:             opts.EventRecorder(mgr, "catalyst-environment-controller"),
		Deployer:             deployer,
		DeployerClusterRole:  cfg.DeployerRole,
		DeployerNamespace:    cfg.DeployerNamespace,
		Logs:                 PodLogs{REST: cs.CoreV1().RESTClient()},
		Limiter:              registry.NewLimiter(cfg.RegistryInFlight),
		PreviewDomain:        cfg.PreviewDomain,
		IngressNamespace:     cfg.IngressNamespace,
		BuildNamespace:       buildNS,
		KanikoImage:          cfg.KanikoImage,
		BuildKitImage:        cfg.BuildKitImage,
		BuildHelperImage:     cfg.BuildHelperImage,
		PodSecurityLevel:     cfg.PodSecurityLevel,
		PublicEgress:         cfg.PublicEgress,
		NamespaceAnnotations: cfg.NamespaceAnnotations,
		GitTimeout:           cfg.GitTimeout,
		CheckoutDir:          cfg.CheckoutDir,
	}
	if err := env.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: max(cfg.Concurrency, 1)}); err != nil {
		return err
	}
	proj := &ProjectReconciler{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		Recorder:           opts.EventRecorder(mgr, "catalyst-project-controller"),
		GitTimeout:         cfg.GitTimeout,
		ValidationInterval: cfg.ValidationInterval,
	}
	return proj.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: max(cfg.Concurrency/4, 1)})
}
