package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/go-logr/logr"
	"helm.sh/helm/v4/pkg/action"
	ci "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"
	"helm.sh/helm/v4/pkg/kube"
	ri "helm.sh/helm/v4/pkg/release"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/slipway-dev/slipway/internal/helmkit"
)

// helmKit is what every Helm action shares: one REST client getter (no kubeconfig file: the
// rest.Config, a cached discovery client and the engine's REST mapper) and one kubectl factory
// made from it, so discovery and OpenAPI schemas are fetched once, not per deploy.
type helmKit struct {
	getter  *helmkit.Getter
	factory kube.Factory
}

func newHelmKit(cfg *rest.Config, dc discovery.CachedDiscoveryInterface, mapper meta.RESTMapper) *helmKit {
	g := helmkit.NewGetter(cfg, dc, mapper)
	return &helmKit{getter: g, factory: kube.New(g).Factory}
}

// actionConfig is a Helm action configuration for one namespace: releases stored as Secrets
// there, objects applied there, logs through the context's logger (Helm's debug messages at
// verbosity 4).
func (e *Engine) actionConfig(ctx context.Context, namespace string) *action.Configuration {
	h := logr.ToSlogHandler(ctrl.LoggerFrom(ctx).WithName("helm"))
	kc := &kube.Client{Factory: e.helm.factory, Namespace: namespace}
	kc.SetLogger(h)
	secrets := driver.NewSecrets(e.clientset.CoreV1().Secrets(namespace))
	secrets.SetLogger(h)
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(h))
	cfg.RESTClientGetter = e.helm.getter
	cfg.KubeClient = kc
	cfg.Releases = storage.Init(secrets)
	cfg.Releases.SetLogger(h)
	cfg.SetHookOutputFunc(func(_, _, _ string) io.Writer { return io.Discard })
	return cfg
}

// renderedChart is the chart Helm installs: the templates' output as rendered by the renderer
// (renderTemplates), under the same template paths, so hooks, NOTES.txt and the release's
// manifest come out as Helm makes them, while Helm executes none of the pull request's templates.
// Each template calls renderedFunc with its index in the returned list; the chart's metadata is
// the original's, without dependencies (they are rendered in).
func renderedChart(orig *chart.Chart, rendered map[string]string) (*chart.Chart, []string) {
	md := *orig.Metadata
	md.Dependencies = nil
	out := &chart.Chart{Metadata: &md}
	contents := make([]string, 0, len(rendered))
	for _, key := range slices.Sorted(maps.Keys(rendered)) {
		name := key
		if _, rest, ok := strings.Cut(key, "/"); ok {
			name = rest // the path below the chart's own name, as allTemplates joins it back
		}
		out.Templates = append(out.Templates, &common.File{Name: name,
			Data: []byte("{{ " + renderedFunc + " " + strconv.Itoa(len(contents)) + " }}")})
		contents = append(contents, rendered[key])
	}
	return out, contents
}

// renderedFunc is the template function of renderedChart's templates.
const renderedFunc = "slipwayRendered"

// deployHelm installs the chart at req.Path, or upgrades the release when it exists.
func (e *Engine) deployHelm(ctx context.Context, req Request, root *os.Root) (Result, error) {
	dir, _ := cleanRepoPath(req.Path)
	chrt, files, err := loadChart(root, dir, newBudget(e.opts.MaxSourceBytes))
	if err != nil {
		return Result{}, err
	}
	values := helmValues(req.Values, req.Image, req.Host)
	cfg := e.actionConfig(ctx, req.Namespace)
	if cfg.Capabilities, err = e.caps.get(); err != nil {
		return Result{}, err
	}
	post := &postRenderer{req: req, scope: e.namespaced}
	wait := kube.HookOnlyStrategy
	if e.opts.Helm.Wait {
		wait = kube.StatusWatcherStrategy
	}

	lastR, err := cfg.Releases.Last(req.Release)
	var last *release.Release
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
	case err != nil:
		return Result{}, fmt.Errorf("reading release %s: %w", req.Release, err)
	default:
		if last, err = helmkit.ToRelease(lastR); err != nil {
			return Result{}, err
		}
	}

	install := last == nil || last.Info.Status == rcommon.StatusUninstalled
	opts := common.ReleaseOptions{Name: req.Release, Namespace: req.Namespace, Revision: 1, IsInstall: true}
	if !install {
		opts = common.ReleaseOptions{Name: req.Release, Namespace: req.Namespace, Revision: last.Version + 1, IsUpgrade: true}
	}
	rendered, err := e.renderTemplates(ctx, files, values, opts)
	if err != nil {
		return Result{}, helmError("rendering", req.Release, err)
	}
	chrt, contents := renderedChart(chrt, rendered)
	// A release that was of type manifest or kustomize before: remove its objects first (they may
	// share names), then let the API server judge what Helm will write.
	if err := e.uninstallInventory(ctx, req.Namespace, req.Release); err != nil {
		return Result{}, err
	}
	admitted, err := e.admitChart(ctx, req, rendered)
	if err != nil {
		return Result{}, err
	}
	cfg.CustomTemplateFuncs = template.FuncMap{renderedFunc: func(i int) string { return contents[i] }}

	var relR ri.Releaser
	if install {
		in := action.NewInstall(cfg)
		in.ReleaseName = req.Release
		in.Namespace = req.Namespace
		in.Replace = last != nil
		in.ServerSideApply = true
		in.ForceConflicts = true
		in.WaitStrategy = wait
		in.RollbackOnFailure = e.opts.Helm.RollbackOnFailure
		in.Timeout = e.opts.Helm.Timeout
		in.SkipCRDs = true
		in.Labels = req.Labels
		in.PostRenderer = post
		in.Description = "Installed by " + e.opts.FieldOwner
		relR, err = in.RunWithContext(ctx, chrt, values)
		if err != nil {
			return Result{}, helmApplyError("installing", req.Release, err, admitted)
		}
	} else {
		if last.Info.Status.IsPending() {
			// A deploy was interrupted (the operator stopped mid-way): Helm would refuse every
			// later upgrade. Deploys of one release never overlap, so nothing is in progress.
			last.SetStatus(rcommon.StatusFailed, "Interrupted while "+last.Info.Status.String())
			if err := cfg.Releases.Update(last); err != nil {
				return Result{}, fmt.Errorf("marking the interrupted revision %d of %s failed: %w", last.Version, req.Release, err)
			}
		}
		up := action.NewUpgrade(cfg)
		up.Namespace = req.Namespace
		up.ServerSideApply = "true"
		up.ForceConflicts = true
		up.ResetValues = true
		up.WaitStrategy = wait
		up.RollbackOnFailure = e.opts.Helm.RollbackOnFailure
		up.Timeout = e.opts.Helm.Timeout
		up.MaxHistory = e.opts.Helm.MaxHistory
		up.SkipCRDs = true
		up.Labels = req.Labels
		up.PostRenderer = post
		up.Description = "Upgraded by " + e.opts.FieldOwner
		relR, err = up.RunWithContext(ctx, req.Release, chrt, values)
		if err != nil {
			return Result{}, helmApplyError("upgrading", req.Release, err, admitted)
		}
	}
	rel, err := helmkit.ToRelease(relR)
	if err != nil {
		return Result{}, err
	}
	ms, err := parseManifests("release "+req.Release, []byte(rel.Manifest))
	if err != nil {
		return Result{}, err
	}
	refs := make([]ObjectRef, len(ms))
	for i, m := range ms {
		refs[i] = m.ref()
		refs[i].Namespace = req.Namespace
	}
	return Result{Revision: strconv.Itoa(rel.Version), Objects: refs, EnvContainers: post.envContainers}, nil
}

// helmReleasePresent reports whether the namespace holds release Secrets of the release. It reads
// the API server's cache (resourceVersion 0), which is enough to find a release deployed before.
func (e *Engine) helmReleasePresent(ctx context.Context, namespace, name string) (bool, error) {
	list, err := e.clientset.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{
		LabelSelector:   labels.SelectorFromSet(labels.Set{"owner": "helm", "name": name}).String(),
		ResourceVersion: "0",
	})
	if err != nil {
		return false, fmt.Errorf("looking for Helm release %s: %w", name, err)
	}
	return len(list.Items) > 0, nil
}

// uninstallHelm uninstalls the release (its objects, then its release Secrets) when it exists.
func (e *Engine) uninstallHelm(ctx context.Context, namespace, name string) error {
	cfg := e.actionConfig(ctx, namespace)
	hist, err := cfg.Releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) || (err == nil && len(hist) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading release %s: %w", name, err)
	}
	un := action.NewUninstall(cfg)
	un.IgnoreNotFound = true
	un.KeepHistory = false
	un.WaitStrategy = kube.HookOnlyStrategy
	un.Timeout = e.opts.Helm.Timeout
	un.DeletionPropagation = "background"
	if _, err := un.Run(name); err != nil {
		return helmError("uninstalling", name, err)
	}
	return nil
}

// helmErrorMarkers are in the messages of the errors Helm returns for a chart that does not
// render: template parse and execution errors, YAML the templates produce, values that fail the
// chart's schema, a kubeVersion constraint, objects the OpenAPI schema refuses. Helm's errors
// have no types to tell them apart.
var helmErrorMarkers = []string{
	"parse error", "execution error", "YAML parse error", "error converting YAML to JSON",
	"values don't meet the specifications", "chart requires kubeVersion", "unable to build kubernetes objects",
	"error validating data", "rendering template failed", "template: ",
}

// helmError classifies an error of a Helm action.
func helmError(verb, name string, err error) error {
	switch {
	case errors.Is(err, ErrInvalidChart):
		return err // the renderer's: classified and worded already
	case errors.Is(err, ErrRefusedObject), errors.Is(err, ErrInvalidManifest):
		return fmt.Errorf("helm: %s release %s: %w", verb, name, err)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		switch {
		case apierrors.IsConflict(err):
			return fmt.Errorf("%w: %s release %s: %w", ErrApplyConflict, verb, name, err)
		case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
			return fmt.Errorf("%w: %s release %s: %w", ErrApplyRejected, verb, name, err)
		}
		return fmt.Errorf("%w: %s release %s: %w", ErrHelmRelease, verb, name, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "exists and cannot be imported into the current release") {
		// An object of the chart exists and belongs to something else.
		return fmt.Errorf("%w: %s release %s: %w", ErrApplyConflict, verb, name, err)
	}
	for _, m := range helmErrorMarkers {
		if strings.Contains(msg, m) {
			return fmt.Errorf("%w: %s release %s: %w", ErrInvalidChart, verb, name, err)
		}
	}
	return fmt.Errorf("%w: %s release %s: %w", ErrHelmRelease, verb, name, err)
}

// utf8BOM is dropped from the start of chart files, as Helm's directory loader does.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// loadChart loads the chart in dir through root, honouring .helmignore like Helm's directory
// loader, but reading nothing outside the checkout. Dependencies must be vendored in charts/
// (directories or .tgz archives); nothing is downloaded. Charts with CRDs (crds/) are refused.
func loadChart(root *os.Root, dir string, b *budget) (*chart.Chart, []*archive.BufferedFile, error) {
	fsys := root.FS()
	if st, err := fs.Stat(fsys, path.Join(dir, "Chart.yaml")); err != nil || st.IsDir() {
		if _, derr := fs.Stat(fsys, dir); derr != nil {
			return nil, nil, fmt.Errorf("%w: %q does not exist in the repository", ErrPathNotFound, dir)
		}
		return nil, nil, fmt.Errorf("%w: no Helm chart at %q (no Chart.yaml)", ErrPathNotFound, dir)
	}
	rules := ignore.Empty()
	if data, err := fs.ReadFile(fsys, path.Join(dir, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrInvalidChart, path.Join(dir, ignore.HelmIgnore), err)
		}
	}
	rules.AddDefaults()
	files, err := readTree(root, dir, b, func(rel string, info fs.FileInfo) bool {
		return !rules.Ignore(rel, info)
	})
	if err != nil {
		return nil, nil, wrapAs(ErrInvalidChart, err)
	}
	buffered := make([]*archive.BufferedFile, len(files))
	for i, f := range files {
		buffered[i] = &archive.BufferedFile{Name: f.Name, ModTime: f.Info.ModTime(), Data: bytes.TrimPrefix(f.Data, utf8BOM)}
	}
	chrt, err := chartloader.LoadFiles(buffered)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrInvalidChart, dir, err)
	}
	if err := chrt.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrInvalidChart, dir, err)
	}
	if chrt.Metadata.Type != "" && chrt.Metadata.Type != "application" {
		return nil, nil, fmt.Errorf("%w: %s: a %s chart cannot be installed", ErrInvalidChart, dir, chrt.Metadata.Type)
	}
	deps := make([]ci.Dependency, len(chrt.Metadata.Dependencies))
	for i, d := range chrt.Metadata.Dependencies {
		deps[i] = d
	}
	if err := action.CheckDependencies(chrt, deps); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w (vendor them: helm dependency build, then commit charts/)", ErrInvalidChart, dir, err)
	}
	if crds := chrt.CRDObjects(); len(crds) > 0 {
		names := make([]string, len(crds))
		for i, c := range crds {
			names[i] = c.Filename
		}
		return nil, nil, fmt.Errorf("%w: chart %s has CustomResourceDefinitions (%s), which are cluster-scoped; install them with the cluster, not with an environment",
			ErrRefusedObject, dir, strings.Join(names, ", "))
	}
	return chrt, buffered, nil
}

// postRenderer checks and labels what a chart renders, hooks included: every object must be
// namespaced and in the environment's namespace, and gets req.Labels; every container of every
// workload (test hooks aside) gets req.Env, whatever the chart's values look like.
type postRenderer struct {
	req   Request
	scope scopeFunc
	// envContainers counts the containers that received req.Env.
	envContainers int
}

func (p *postRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	ms, err := parseManifests("the rendered chart", rendered.Bytes())
	if err != nil {
		return nil, err
	}
	for i := range ms {
		// Helm names each document's template in an annotation it removes after this.
		if name := ms[i].obj.GetAnnotations()[helmFilenameAnnotation]; name != "" {
			ms[i].origin = name
		}
	}
	n, err := prepare(ms, p.req, p.scope, prepareOptions{injectEnv: true})
	if err != nil {
		return nil, err
	}
	p.envContainers += n
	return marshalManifests(ms)
}
