package deploy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// Request is one deploy of an environment.
type Request struct {
	// Namespace is the target namespace; it must exist. Every object lands there.
	Namespace string
	// Release names the Helm release, or the inventory of a manifest or kustomize deploy: one
	// per environment. At most 53 characters, a DNS-1123 label (Helm's rule, kept for all types
	// so an environment can change type).
	Release string
	// Type is helm, manifest or kustomize.
	Type catalystv1alpha1.DeploymentType
	// Source is the local directory holding the repository checked out at the commit. Nothing
	// outside it is read, symbolic links included.
	Source string
	// Path is the chart, manifest directory or kustomization directory inside the repository,
	// relative to its root ("." or "" for the root itself).
	Path string
	// Values are the project's Helm values (type helm only). The injected values are merged
	// over them; see the package documentation for the keys.
	Values map[string]any
	// Image is the image to run: built for the commit, or an existing one. Empty injects none.
	Image Image
	// Host is the ingress host of the environment (e.g. pr-123.preview.example.dev). Empty
	// injects none.
	Host string
	// Env are set on every container and init container of every workload rendered, whatever
	// the type (helm: by the post-renderer); a variable of the same name is replaced.
	Env []corev1.EnvVar
	// Labels are put on every object deployed (and on Helm's release Secrets), typically the
	// catalyst.dev/* labels of the environment.
	Labels map[string]string
	// Reserved are objects of the namespace that belong to the caller (its Ingress, the Secrets
	// it copies in): a deploy that renders one of them is refused rather than taking it over.
	Reserved []Reserved
	// ServiceAccount is the identity the deploy acts as (system:serviceaccount:<namespace>:<name>):
	// everything the source renders and applies (Helm's install, upgrade, hooks and lookup,
	// manifests, kustomize output, pruning) goes to the API server impersonating it, so the
	// deploy can do no more than its RoleBinding in Namespace grants. It need not be of Namespace,
	// nor exist as an object: impersonation asks the operator's RBAC, not the ServiceAccount.
	// Required.
	ServiceAccount types.NamespacedName
	// Policy says which kinds the deploy may hold besides the built-in refusals.
	Policy Policy
}

// Reserved names one object a deploy must not touch.
type Reserved struct {
	schema.GroupKind
	Name string
}

// Image is an image reference split into repository and tag.
type Image struct {
	// Repository without tag or digest, e.g. registry.example.dev/org/app.
	Repository string
	// Tag, e.g. the commit SHA; a value starting with "sha256:" is used as a digest. Empty keeps
	// the tag (or digest) the manifests give.
	Tag string
}

// String is repository:tag (or repository@digest), or the repository alone without a tag.
func (i Image) String() string {
	switch {
	case i.Tag == "":
		return i.Repository
	case strings.HasPrefix(i.Tag, "sha256:"):
		return i.Repository + "@" + i.Tag
	}
	return i.Repository + ":" + i.Tag
}

// Result says what a deploy applied.
type Result struct {
	// Revision is the Helm release version, or the inventory revision of a manifest or
	// kustomize deploy; both count deploys from 1.
	Revision string
	// Objects are the objects applied, for health checks (kstatus) by the caller. Helm hooks
	// are not included.
	Objects []ObjectRef
	// EnvContainers is how many containers (init containers and Helm hooks included, Helm test
	// hooks not) received Request.Env.
	EnvContainers int
}

// ObjectRef identifies one applied object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// GroupVersionKind of the object.
func (r ObjectRef) GroupVersionKind() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
}

// String is Kind/name, or Kind.group/name for a kind outside the core group.
func (r ObjectRef) String() string {
	gk := r.GroupVersionKind().GroupKind()
	if gk.Group == "" {
		return gk.Kind + "/" + r.Name
	}
	return gk.Kind + "." + gk.Group + "/" + r.Name
}

// Deployer deploys environments into their namespaces.
type Deployer interface {
	// Deploy installs or upgrades the release in req.Namespace. It returns once the objects are
	// applied, without waiting for them to become ready (unless Options.Helm asks Helm to wait):
	// the caller checks Result.Objects. Deploy must not run concurrently for the same release.
	Deploy(ctx context.Context, req Request) (Result, error)
	// Uninstall deletes what the release deployed, whatever its type: the Helm release (its
	// objects and its release Secrets) and the inventory's objects and inventory, acting as the
	// ServiceAccount as (Request.ServiceAccount). It returns once the deletes are accepted; an
	// absent release is not an error.
	Uninstall(ctx context.Context, namespace string, as types.NamespacedName, release string) error
	// Reader reads objects of the namespace as the ServiceAccount as: what a deploy applied, for
	// the caller's readiness checks, with no more rights than the deploy had.
	Reader(namespace string, as types.NamespacedName) (client.Reader, error)
}

// Defaults of Options.
const (
	DefaultFieldOwner     = "slipway-catalyst"
	DefaultHelmMaxHistory = 5
	DefaultHelmTimeout    = 5 * time.Minute
	DefaultMaxSourceBytes = 256 << 20
	// DefaultRenderTimeout, DefaultRenderMaxBytes, DefaultRenderMaxMemory and
	// DefaultRenderConcurrency bound the rendering of a chart's templates (RenderLimits).
	DefaultRenderTimeout     = 30 * time.Second
	DefaultRenderMaxBytes    = 16 << 20
	DefaultRenderMaxMemory   = 512 << 20
	DefaultRenderConcurrency = 2
	// DefaultLookupTimeout and DefaultLookupMaxBytes bound each read a chart's `lookup` makes.
	DefaultLookupTimeout  = 10 * time.Second
	DefaultLookupMaxBytes = 4 << 20
)

// Options configure an Engine. The zero value is usable.
type Options struct {
	// FieldOwner is the server-side apply field manager of manifest and kustomize deploys
	// (default slipway-catalyst). Ownership of conflicting fields is forced.
	FieldOwner string
	// MaxSourceBytes bounds the size of the files read from the checkout for one deploy
	// (default 256 MiB).
	MaxSourceBytes int64
	// Helm configures the helm type.
	Helm HelmOptions
	// Render bounds the rendering of a chart's templates.
	Render RenderLimits
}

// RenderLimits bound the rendering of a Helm chart's templates and the build of a kustomization,
// which come from a pull request and may loop or expand without end. Both run in a child process
// of the operator (the same binary), one CPU and low priority, killed when it passes a limit; the
// operator never runs them itself. The zero value of each field takes its default.
type RenderLimits struct {
	// Timeout bounds one rendering (default 30 s).
	Timeout time.Duration
	// MaxBytes bounds the rendered output, every template together (default 16 MiB).
	MaxBytes int64
	// MaxMemory bounds the renderer's heap (default 512 MiB).
	MaxMemory int64
	// Concurrency bounds the renderings in flight across all environments (default 2).
	Concurrency int
	// LookupTimeout bounds each API request of a chart's `lookup` (default 10 s).
	LookupTimeout time.Duration
	// LookupMaxBytes bounds each answer to a chart's `lookup` (default 4 MiB).
	LookupMaxBytes int64
}

// HelmOptions configure Helm installs and upgrades.
type HelmOptions struct {
	// RollbackOnFailure uninstalls a failed install and rolls a failed upgrade back to the last
	// deployed revision (Helm's --atomic). It implies Wait.
	RollbackOnFailure bool
	// Wait makes Helm wait, up to Timeout, until the release's resources are ready (kstatus).
	// Without it (the default) Deploy returns once they are applied; hooks are always waited for.
	Wait bool
	// Timeout bounds hooks and waits (default 5 minutes).
	Timeout time.Duration
	// MaxHistory is the number of release revisions kept (default 5).
	MaxHistory int
}

// Engine is the Deployer for the three deployment types. It is safe for concurrent use by
// different releases.
//
// Its own credentials (those New is given) serve discovery alone; every request about an
// environment's objects impersonates the environment's ServiceAccount (see impersonating).
type Engine struct {
	opts      Options
	config    *rest.Config
	client    client.Client
	mapper    meta.RESTMapper
	clientset kubernetes.Interface
	discovery discovery.CachedDiscoveryInterface
	helm      *helmKit
	renders   *renderSlots
	caps      *capabilities
	// validators are shared by every identity (see impersonating).
	validators *validators
	// user is the impersonated user of an Engine made by impersonating, "" for New's.
	user string
}

var _ Deployer = (*Engine)(nil)

// New returns an Engine that talks to the cluster of cfg. It shares one HTTP client, REST mapper
// and discovery cache between all deploys.
func New(cfg *rest.Config, opts Options) (*Engine, error) {
	if opts.FieldOwner == "" {
		opts.FieldOwner = DefaultFieldOwner
	}
	if opts.MaxSourceBytes <= 0 {
		opts.MaxSourceBytes = DefaultMaxSourceBytes
	}
	if opts.Helm.Timeout <= 0 {
		opts.Helm.Timeout = DefaultHelmTimeout
	}
	if opts.Helm.MaxHistory <= 0 {
		opts.Helm.MaxHistory = DefaultHelmMaxHistory
	}
	opts.Render = opts.Render.withDefaults()
	cfg = rest.CopyConfig(cfg)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return newEngine(cfg, httpClient, opts)
}

func newEngine(cfg *rest.Config, httpClient *http.Client, opts Options) (*Engine, error) {
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	clientset, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	e := &Engine{opts: opts, config: cfg, client: c, mapper: mapper, clientset: clientset,
		discovery: memory.NewMemCacheClient(dc), renders: newRenderSlots(opts.Render.Concurrency)}
	e.helm = newHelmKit(cfg, e.discovery, mapper)
	e.validators = &validators{factory: e.helm.factory}
	e.caps = &capabilities{discovery: e.discovery}
	return e, nil
}

// Deploy implements Deployer.
func (e *Engine) Deploy(ctx context.Context, req Request) (Result, error) {
	if err := req.validate(); err != nil {
		return Result{}, err
	}
	root, err := openSource(req.Source)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = root.Close() }()
	as, err := e.impersonating(req.ServiceAccount)
	if err != nil {
		return Result{}, err
	}
	switch req.Type {
	case catalystv1alpha1.DeploymentTypeHelm:
		return as.deployHelm(ctx, req, root)
	case catalystv1alpha1.DeploymentTypeManifest, catalystv1alpha1.DeploymentTypeKustomize:
		return as.deployObjects(ctx, req, root)
	}
	return Result{}, fmt.Errorf("%w: unknown deployment type %q", ErrInvalidRequest, req.Type)
}

// Uninstall implements Deployer.
func (e *Engine) Uninstall(ctx context.Context, namespace string, sa types.NamespacedName, release string) error {
	if namespace == "" || release == "" {
		return fmt.Errorf("%w: namespace and release are required", ErrInvalidRequest)
	}
	if err := validServiceAccount(sa); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	as, err := e.impersonating(sa)
	if err != nil {
		return err
	}
	return errors.Join(as.uninstallHelm(ctx, namespace, release), as.uninstallInventory(ctx, namespace, release))
}

// Reader implements Deployer.
func (e *Engine) Reader(namespace string, sa types.NamespacedName) (client.Reader, error) {
	if err := validServiceAccount(sa); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	as, err := e.impersonating(sa)
	if err != nil {
		return nil, err
	}
	return as.client, nil
}

// validServiceAccount checks the name of a ServiceAccount to act as.
func validServiceAccount(sa types.NamespacedName) error {
	errs := validation.IsDNS1123Label(sa.Namespace)
	errs = append(errs, validation.IsDNS1123Subdomain(sa.Name)...)
	if len(errs) > 0 {
		return fmt.Errorf("ServiceAccount %q to act as: %s", sa, strings.Join(errs, "; "))
	}
	return nil
}

// maxReleaseName is Helm's bound on release names.
const maxReleaseName = 53

func (r *Request) validate() error {
	var problems []string
	if errs := validation.IsDNS1123Label(r.Namespace); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("namespace %q: %s", r.Namespace, strings.Join(errs, "; ")))
	}
	if errs := validation.IsDNS1123Label(r.Release); len(errs) > 0 || len(r.Release) > maxReleaseName {
		problems = append(problems, fmt.Sprintf("release %q must be a DNS-1123 label of at most %d characters", r.Release, maxReleaseName))
	}
	switch r.Type {
	case catalystv1alpha1.DeploymentTypeHelm, catalystv1alpha1.DeploymentTypeManifest, catalystv1alpha1.DeploymentTypeKustomize:
	default:
		problems = append(problems, fmt.Sprintf("unknown deployment type %q", r.Type))
	}
	if r.Type != catalystv1alpha1.DeploymentTypeHelm && len(r.Values) > 0 {
		problems = append(problems, "values apply to type helm only")
	}
	if r.Source == "" {
		problems = append(problems, "no source directory")
	}
	if err := validServiceAccount(r.ServiceAccount); err != nil {
		problems = append(problems, err.Error())
	}
	if _, err := cleanRepoPath(r.Path); err != nil {
		problems = append(problems, err.Error())
	}
	if r.Image.Tag != "" && r.Image.Repository == "" {
		problems = append(problems, "an image tag without a repository")
	}
	for k, v := range r.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			problems = append(problems, fmt.Sprintf("label key %q: %s", k, strings.Join(errs, "; ")))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			problems = append(problems, fmt.Sprintf("label %s value %q: %s", k, v, strings.Join(errs, "; ")))
		}
	}
	for _, ev := range r.Env {
		if ev.Name == "" {
			problems = append(problems, "an environment variable without a name")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(problems, ", "))
	}
	return nil
}

// cleanRepoPath turns a repository path into a clean slash path relative to the root, "." for
// the root. Absolute paths and paths that leave the repository are refused.
func cleanRepoPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if path.IsAbs(p) || strings.HasPrefix(p, `\`) {
		return "", fmt.Errorf("path %q is absolute; it is relative to the repository root", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q leaves the repository", p)
	}
	return clean, nil
}

// openSource opens the checkout as an os.Root: reads through it cannot leave the directory,
// even through symbolic links.
func openSource(dir string) (*os.Root, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: source directory: %w", ErrInvalidRequest, err)
	}
	return root, nil
}
