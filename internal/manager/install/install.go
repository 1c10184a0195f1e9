package install

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/helmkit"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// The design's span names; helm.rollback mirrors helm.install (the design's operator.rollback
// is the engine's span around a whole rollback).
const (
	spanHelmInstall      = "helm.install"
	spanCRDApply         = "crd.apply"
	spanControllerDeploy = "controller.deploy"
	spanHelmRollback     = "helm.rollback"
)

// DefaultTimeout bounds a call whose Release.Timeout is 0, or whose context has no deadline.
const DefaultTimeout = 5 * time.Minute

// MaxHistory is the number of revisions kept per release (Helm's release Secrets); older ones are
// pruned on upgrade, so a rollback can go back that far.
const MaxHistory = 10

// Release is what Install puts into a cluster.
type Release struct {
	// Name is the Helm release name (a DNS-1123 label of at most 53 characters).
	Name string
	// Namespace holds the release and its namespaced objects; created when missing.
	Namespace string
	// Chart is the loaded chart (operators.Charts.Fetch's Chart.Chart). Install changes it, as
	// Helm does the chart it installs (its metadata is sanitised, dependencies enabled or dropped):
	// installs that run at once each need a chart of their own.
	Chart *chart.Chart
	// Values are the release's values, in full: values of a previous revision are not reused.
	Values map[string]any
	// Timeout bounds the whole install: CRDs, release and readiness. 0 means DefaultTimeout.
	Timeout time.Duration
}

// Result is what an install, upgrade or rollback did.
type Result struct {
	// Revision is the release revision the call made (0 when it made none).
	Revision int
	// Version is the chart version of that revision.
	Version string
	// PreviousRevision and PreviousVersion are the revision that was deployed before the call
	// and its chart version (0 and "" for a first install): the target of an automatic rollback.
	PreviousRevision int
	PreviousVersion  string
	// Upgrade is true when a deployed or failed release existed (helm upgrade), false for an install.
	Upgrade bool
	// CRDs are the names of the CRDs applied from the chart's crds/ directory.
	CRDs []string
	// APIRequests counts the Kubernetes API requests the call made (discovery and watches included).
	APIRequests int64
	// Duration is the call's wall time.
	Duration time.Duration
}

// Install applies the chart's CRDs server-side, then installs the release or upgrades it (helm
// upgrade --install, CRDs skipped, server-side apply), and waits until its resources are ready.
//
// A bad Release is *invalid.Error. Workloads not ready within the timeout give a *NotReadyError
// naming each one and why; the failed revision stays in the history (roll back with Rollback).
// The Result is returned with an error too, holding what is known (APIRequests, Duration, the
// revision made if any).
func Install(ctx context.Context, cfg *rest.Config, rel Release) (res *Result, err error) {
	if err := rel.validate(); err != nil {
		return nil, err
	}
	timeout := rel.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	start := time.Now()
	res = &Result{Version: rel.Chart.Metadata.Version}
	ctx, span := telemetry.Tracer().Start(ctx, spanHelmInstall, trace.WithAttributes(
		attribute.String("release.name", rel.Name), attribute.String("release.namespace", rel.Namespace),
		attribute.String("chart.name", rel.Chart.Name()), attribute.String("chart.version", res.Version)))
	s, err := newSession(ctx, cfg)
	if err != nil {
		endSpan(span, err)
		return nil, err
	}
	defer func() {
		res.Duration = time.Since(start)
		res.APIRequests = s.requests.Load()
		telemetry.ObserveKubeAPIRequests("install", res.APIRequests)
		telemetry.ObserveHelmInstall(err, res.Duration)
		span.SetAttributes(attribute.Int("release.revision", res.Revision), attribute.Int64("k8s.requests", res.APIRequests))
		endSpan(span, err)
		level, msg := s.log.InfoContext, "install: Release installed"
		if err != nil {
			level, msg = s.log.WarnContext, "install: Install failed"
		}
		level(ctx, msg, "release", rel.Name, "namespace", rel.Namespace, "chartVersion", res.Version,
			"revision", res.Revision, "previousRevision", res.PreviousRevision, "duration", res.Duration,
			"apiRequests", res.APIRequests, "error", err)
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	crds, err := chartCRDs(rel.Chart)
	if err != nil {
		return res, err
	}
	cctx, cspan := telemetry.Tracer().Start(ctx, spanCRDApply, trace.WithAttributes(attribute.Int("crd.count", len(crds))))
	s.follow(cctx)
	res.CRDs, err = applyCRDs(cctx, s, crds)
	endSpan(cspan, err)
	if err != nil {
		return res, err
	}

	dctx, dspan := telemetry.Tracer().Start(ctx, spanControllerDeploy)
	s.follow(dctx)
	err = deployRelease(dctx, s, rel, res)
	var nr *NotReadyError
	if errors.As(err, &nr) {
		nr.Timeout = timeout
	}
	endSpan(dspan, err)
	return res, err
}

func (rel Release) validate() error {
	switch {
	case rel.Chart == nil || rel.Chart.Metadata == nil:
		return invalid.Reasoned("chart", "required", nil, "a chart is required")
	case len(rel.Name) > 53:
		return invalid.Field("name", "release name %q is longer than 53 characters", rel.Name)
	}
	if errs := validation.IsDNS1123Label(rel.Name); len(errs) > 0 {
		return invalid.Field("name", "release name %q: %s", rel.Name, errs[0])
	}
	if errs := validation.IsDNS1123Label(rel.Namespace); len(errs) > 0 {
		return invalid.Field("namespace", "namespace %q: %s", rel.Namespace, errs[0])
	}
	if err := rel.Chart.Validate(); err != nil {
		return invalid.Reasoned("chart", "format", err, "chart %s: %v", rel.Chart.Name(), err)
	}
	return nil
}

// deployRelease is helm upgrade --install of rel, the CRDs already applied.
func deployRelease(ctx context.Context, s *session, rel Release, res *Result) error {
	if err := ensureNamespace(ctx, s, rel.Namespace); err != nil {
		return err
	}
	ac := s.actionConfig(rel.Namespace)
	last, err := lastRelease(ac, rel.Name)
	if err != nil {
		return err
	}
	if dep, err := ac.Releases.Deployed(rel.Name); err == nil {
		if d, err := helmkit.ToRelease(dep); err == nil {
			res.PreviousRevision, res.PreviousVersion = d.Version, d.Chart.Metadata.Version
		}
	}
	remaining := remainingTime(ctx)
	wait := []kube.WaitOption{kube.WithWaitContext(ctx)}
	values := rel.Values
	if values == nil {
		values = map[string]any{}
	}
	if last == nil || last.Info.Status == rcommon.StatusUninstalled {
		in := action.NewInstall(ac)
		in.ReleaseName = rel.Name
		in.Namespace = rel.Namespace
		in.Replace = last != nil
		in.ServerSideApply = true
		in.ForceConflicts = true
		in.SkipCRDs = true
		in.WaitStrategy = kube.StatusWatcherStrategy
		in.WaitOptions = wait
		in.Timeout = remaining
		in.PostRenderer = keepCRDs{}
		in.Description = "Installed by " + FieldManager
		_, err = in.RunWithContext(ctx, rel.Chart, values)
	} else {
		res.Upgrade = true
		if err := clearPending(ac, last); err != nil {
			return err
		}
		up := action.NewUpgrade(ac)
		up.Namespace = rel.Namespace
		up.ServerSideApply = "true"
		up.ForceConflicts = true
		up.ResetValues = true
		up.SkipCRDs = true
		up.MaxHistory = MaxHistory
		up.WaitStrategy = kube.StatusWatcherStrategy
		up.WaitOptions = wait
		up.Timeout = remaining
		up.PostRenderer = keepCRDs{}
		up.Description = "Upgraded by " + FieldManager
		_, err = up.RunWithContext(ctx, rel.Name, rel.Chart, values)
	}
	return s.outcome(ctx, ac, rel.Name, rel.Namespace, last, remaining, err, res)
}

// outcome sets res.Revision from the release's last revision when the action made one, and
// turns a failed wait into a *NotReadyError.
func (s *session) outcome(ctx context.Context, ac *action.Configuration, name, namespace string, before *release.Release, timeout time.Duration, err error, res *Result) error {
	after, lerr := lastRelease(ac, name)
	if lerr == nil && after != nil && (before == nil || after.Version > before.Version) {
		res.Revision = after.Version
		res.Version = after.Chart.Metadata.Version
	}
	if err == nil {
		return nil
	}
	if res.Revision == 0 || after == nil {
		return fmt.Errorf("release %s (namespace %s): %w", name, namespace, err)
	}
	// The revision was recorded and applied: tell what is not ready (a workload, a hook Job).
	// The action's context may have ended, so look with a fresh one.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	manifest := after.Manifest
	for _, h := range after.Hooks {
		manifest += "\n---\n" + h.Manifest
	}
	nr, derr := diagnose(dctx, s, namespace, manifest)
	if derr != nil || len(nr) == 0 {
		return fmt.Errorf("release %s (namespace %s, revision %d): %w", name, namespace, after.Version, err)
	}
	return &NotReadyError{Release: name, Namespace: namespace, Revision: after.Version, Timeout: timeout, Resources: nr, Err: err}
}

// clearPending marks rel failed when it is pending: a call was interrupted (a replica died
// mid-way). The engine runs one call per release at a time, so nothing is in progress, and Helm
// would refuse every later upgrade or rollback.
func clearPending(ac *action.Configuration, rel *release.Release) error {
	if rel == nil || !rel.Info.Status.IsPending() {
		return nil
	}
	rel.SetStatus(rcommon.StatusFailed, "Interrupted while "+rel.Info.Status.String())
	if err := ac.Releases.Update(rel); err != nil {
		return fmt.Errorf("marking the interrupted revision %d of %s failed: %w", rel.Version, rel.Name, err)
	}
	return nil
}

// lastRelease is the release's last revision, nil when there is none.
func lastRelease(ac *action.Configuration, name string) (*release.Release, error) {
	r, err := ac.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading release %s: %w", name, err)
	}
	return helmkit.ToRelease(r)
}

func ensureNamespace(ctx context.Context, s *session, name string) error {
	_, err := s.clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = s.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
			metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return nil
}

// remainingTime is the time left before ctx's deadline, DefaultTimeout without one.
func remainingTime(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left > 0 {
			return left
		}
		return time.Millisecond
	}
	return DefaultTimeout
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
