// Package health checks one installed operator on one cluster, as the rollout engine does every
// 30 s for each (operator, cluster) it watches (issue 12 §3, FR-OP-005):
//
//   - controller pods: the pods of the Helm release (label app.kubernetes.io/instance=<release>
//     in the release's namespace, or Target.PodSelector) Running and Ready, fewer than 3 restarts
//     in 5 minutes, none in CrashLoopBackOff, within their resource limits where metrics.k8s.io is
//     served;
//   - webhooks: the release's Validating/MutatingWebhookConfigurations (label
//     app.kubernetes.io/instance=<release>, or Helm's meta.helm.sh/release-name and
//     release-namespace annotations) and the conversion webhooks of its CRDs each answer a minimal
//     review with 200 within 1 s, with a serving certificate that is valid and verifies against
//     the configuration's caBundle;
//   - CRD reconciliation: fewer than 5 % of the release's custom resources fail by the operator's
//     fault: not reconciled by it (observedGeneration behind, Reconciling that never ends, no
//     status, past the grace period) or Ready in the target's baseline and not Ready now; a
//     resource Ready=False while reconciled is its tenant's and never counts (judge);
//   - metrics: the operator's own reconcile error rate, panics and workqueues, read from its
//     metrics Service through the API server's proxy and compared with the baseline's snapshot
//     (MetricsStatus.judge); an operator without readable metrics is judged on the other parts,
//     and the detail says so.
//
// A Checker runs the checks and remembers restart counts between them. The rollout engine stores
// each result (store.OperatorHealthRecord, which counts consecutive Unhealthy checks: the
// rollback signal); Overall builds the API's response from stored results and Tally the gauges.
//
// Nothing is reported as passed that did not run: a check that could not run says "not checked:
// why" and makes its part Degraded at best.
package health

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// Defaults of Config.
const (
	DefaultWebhookTimeout = time.Second
	DefaultRestartWindow  = 5 * time.Minute
	DefaultMaxRestarts    = 3
	DefaultFreshFor       = 5 * time.Minute
	DefaultMaxErrorRate   = 0.05
	DefaultCheckTimeout   = 10 * time.Second
)

// InstanceLabel is the Helm convention label that selects a release's pods and webhooks.
const InstanceLabel = "app.kubernetes.io/instance"

// Helm's ownership annotations on every object a release creates.
const (
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// Config tunes a Checker. Zero values take the defaults.
type Config struct {
	// WebhookTimeout bounds one webhook call, connection and TLS included (default 1 s).
	WebhookTimeout time.Duration
	// RestartWindow and MaxRestarts: a container restarted MaxRestarts times or more within
	// RestartWindow makes the pods Unhealthy (defaults 5 minutes, 3).
	RestartWindow time.Duration
	MaxRestarts   int
	// FreshFor is how recent a Ready condition's lastTransitionTime must be when its
	// observedGeneration is not current (default 5 minutes).
	FreshFor time.Duration
	// MaxErrorRate is the share of custom resources Ready=False (or stale) from which the
	// reconciliation is Unhealthy (default 0.05).
	MaxErrorRate float64
	// CheckTimeout bounds each of the three parts (default 10 s).
	CheckTimeout time.Duration
	// Now is the clock (default time.Now); restart windows, certificate validity and freshness
	// use it.
	Now func() time.Time
	// Logger receives one debug line per check (default slog.Default()).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.WebhookTimeout <= 0 {
		c.WebhookTimeout = DefaultWebhookTimeout
	}
	if c.RestartWindow <= 0 {
		c.RestartWindow = DefaultRestartWindow
	}
	if c.MaxRestarts <= 0 {
		c.MaxRestarts = DefaultMaxRestarts
	}
	if c.FreshFor <= 0 {
		c.FreshFor = DefaultFreshFor
	}
	if c.MaxErrorRate <= 0 {
		c.MaxErrorRate = DefaultMaxErrorRate
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = DefaultCheckTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Target is one installed operator on one cluster.
type Target struct {
	// OperatorName is the operator's registered name (spans, results).
	OperatorName string
	// Namespace and Release are the Helm release's namespace and name.
	Namespace string
	Release   string
	// CRDs are the names of the operator's CRDs ("widgets.example.com"): their custom resources
	// are checked for reconciliation, their conversion webhooks called.
	CRDs []string
	// PodSelector, when set, selects the controller pods instead of
	// app.kubernetes.io/instance=<Release> (label selector syntax).
	PodSelector string
	// Baseline is what the operator's resources and metrics looked like before the deployment
	// (or at the last Healthy check); nil when there is none.
	Baseline *Baseline
}

func (t Target) validate() error {
	switch {
	case t.OperatorName == "":
		return invalid.Field("operatorName", "the operator's name is required")
	case t.Namespace == "":
		return invalid.Field("namespace", "the release's namespace is required")
	case t.Release == "":
		return invalid.Field("release", "the Helm release's name is required")
	}
	if t.PodSelector != "" {
		if _, err := labels.Parse(t.PodSelector); err != nil {
			return invalid.Reasoned("podSelector", "format", err, "not a label selector: %v", err)
		}
	}
	return nil
}

func (t Target) podSelector() string {
	if t.PodSelector != "" {
		return t.PodSelector
	}
	return InstanceLabel + "=" + t.Release
}

// Checker checks operators. It is safe for concurrent use; keep one for the process, since it
// remembers the restart counts it has seen (the restart window spans checks).
type Checker struct {
	cfg Config

	mu       sync.Mutex
	restarts map[string]*restartHistory
}

// NewChecker returns a Checker with cfg (zero values are the defaults).
func NewChecker(cfg Config) *Checker {
	return &Checker{cfg: cfg.withDefaults(), restarts: map[string]*restartHistory{}}
}

// clients are the API clients of one check.
type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	apiext  apiextclient.Interface
}

func newClients(rc *rest.Config) (*clients, error) {
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	ext, err := apiextclient.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &clients{kube: kube, dynamic: dyn, apiext: ext}, nil
}

// Check checks target on the cluster named cluster, reached through rc, and returns the result.
// The four parts run concurrently, each within Config.CheckTimeout, in span
// operator.healthcheck with children pod.healthcheck, webhook.healthcheck, crd.reconciliation.check
// and operator.metrics.check.
// An unreachable cluster is a result (parts not checked), not an error; an invalid target is an
// *invalid.Error.
func (c *Checker) Check(ctx context.Context, cluster string, rc *rest.Config, target Target) (Result, error) {
	if err := target.validate(); err != nil {
		return Result{}, err
	}
	if rc == nil {
		return Result{}, invalid.Field("cluster", "no connection to cluster %q", cluster)
	}
	start := time.Now()
	ctx, span := telemetry.Tracer().Start(ctx, telemetry.SpanOperatorHealthcheck)
	defer span.End()
	span.SetAttributes(attribute.String("operator", target.OperatorName), attribute.String("cluster", cluster),
		attribute.String("namespace", target.Namespace), attribute.String("release", target.Release))

	res := Result{OperatorHealthCheck: api.OperatorHealthCheck{ClusterName: cluster}}
	// Discovery calls take no context: their requests go out under operator.healthcheck.
	rc = rest.CopyConfig(rc)
	telemetry.FollowSpan(ctx, rc)
	cl, err := newClients(rc)
	if err != nil {
		res.OperatorHealthCheck = NotCheckedOn(cluster, "no client for the cluster: "+err.Error(), time.Time{})
	} else {
		var wg sync.WaitGroup
		var seen map[string][]BaselineResource
		var snap *MetricsSnapshot
		wg.Go(func() { res.Pods = c.runPods(ctx, cl, cluster, target) })
		wg.Go(func() { res.Webhooks = c.runWebhooks(ctx, cl, target) })
		wg.Go(func() { res.CRDs, seen = c.runCRDs(ctx, cl, target) })
		wg.Go(func() { res.Metrics, snap = c.runMetrics(ctx, cl, target) })
		wg.Wait()
		if seen != nil {
			res.Observed = &Baseline{CapturedAt: c.cfg.Now().UTC(), Resources: seen, Metrics: snap}
		}
	}
	res.Health = judge(res.OperatorHealthCheck)
	summarize(&res.OperatorHealthCheck)
	res.LastChecked = c.cfg.Now().UTC()

	elapsed := time.Since(start)
	telemetry.ObserveOperatorHealthCheck(telemetry.HealthCheckAll, elapsed)
	span.SetAttributes(attribute.String("health", string(res.Health)))
	if res.Health == api.Unhealthy {
		span.SetStatus(codes.Error, "operator unhealthy")
	}
	c.cfg.Logger.DebugContext(ctx, "health: Checked", "operator", target.OperatorName, "cluster", cluster,
		"health", res.Health, "durationMs", elapsed.Milliseconds())
	return res, nil
}

// part runs one part of a check in its span, with the part's timeout and duration metric.
func part[T any](ctx context.Context, c *Checker, span, check string, run func(ctx context.Context) T, health func(T) api.HealthState) T {
	start := time.Now()
	ctx, sp := telemetry.Tracer().Start(ctx, span)
	defer sp.End()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CheckTimeout)
	defer cancel()
	out := run(ctx)
	h := health(out)
	sp.SetAttributes(attribute.String("health", string(h)))
	if h == api.Unhealthy {
		sp.SetStatus(codes.Error, check+" unhealthy")
	}
	telemetry.ObserveOperatorHealthCheck(check, time.Since(start))
	return out
}

func (c *Checker) runPods(ctx context.Context, cl *clients, cluster string, t Target) api.PodsStatus {
	return part(ctx, c, telemetry.SpanHealthcheckPods, telemetry.HealthCheckPods,
		func(ctx context.Context) api.PodsStatus { return c.checkPods(ctx, cl, cluster, t) },
		func(s api.PodsStatus) api.HealthState { return s.Health })
}

func (c *Checker) runWebhooks(ctx context.Context, cl *clients, t Target) api.WebhooksStatus {
	return part(ctx, c, telemetry.SpanHealthcheckWebhooks, telemetry.HealthCheckWebhooks,
		func(ctx context.Context) api.WebhooksStatus { return c.checkWebhooks(ctx, cl, t) },
		func(s api.WebhooksStatus) api.HealthState { return s.Health })
}

func (c *Checker) runCRDs(ctx context.Context, cl *clients, t Target) (api.ReconciliationStatus, map[string][]BaselineResource) {
	type out struct {
		st   api.ReconciliationStatus
		seen map[string][]BaselineResource
	}
	o := part(ctx, c, telemetry.SpanHealthcheckCRDs, telemetry.HealthCheckCRDs,
		func(ctx context.Context) out { st, seen := c.checkCRDs(ctx, cl, t); return out{st, seen} },
		func(o out) api.HealthState { return o.st.Health })
	return o.st, o.seen
}

func (c *Checker) runMetrics(ctx context.Context, cl *clients, t Target) (api.MetricsStatus, *MetricsSnapshot) {
	type out struct {
		st   api.MetricsStatus
		snap *MetricsSnapshot
	}
	o := part(ctx, c, telemetry.SpanHealthcheckMetrics, telemetry.HealthCheckMetrics,
		func(ctx context.Context) out { st, snap := c.checkMetrics(ctx, cl, t); return out{st, snap} },
		func(o out) api.HealthState { return o.st.Health })
	return o.st, o.snap
}

// judge is the cluster's health: its worst part, the metrics part only when they were read.
func judge(h api.OperatorHealthCheck) api.HealthState {
	parts := []api.HealthState{h.Pods.Health, h.Webhooks.Health, h.CRDs.Health}
	if h.Metrics.Read == api.VerdictPassed {
		parts = append(parts, h.Metrics.Health)
	}
	return worst(parts...)
}

// Capture reads the target's custom resources and metrics on the cluster as a baseline (source
// and deployment left to the caller). A CRD that cannot be listed is an error: a baseline that
// misses resources would make them look new.
func (c *Checker) Capture(ctx context.Context, cluster string, rc *rest.Config, target Target) (*Baseline, error) {
	if err := target.validate(); err != nil {
		return nil, err
	}
	if rc == nil {
		return nil, invalid.Field("cluster", "no connection to cluster %q", cluster)
	}
	cl, err := newClients(rc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CheckTimeout)
	defer cancel()
	target.Baseline = nil
	var wg sync.WaitGroup
	var st api.ReconciliationStatus
	var seen map[string][]BaselineResource
	var snap *MetricsSnapshot
	wg.Go(func() { st, seen = c.checkCRDs(ctx, cl, target) })
	wg.Go(func() { _, snap = c.checkMetrics(ctx, cl, target) })
	wg.Wait()
	if seen == nil {
		return nil, fmt.Errorf("capturing the baseline of %s on %s: %s", target.OperatorName, cluster, strings.Join(st.Messages, "; "))
	}
	return &Baseline{CapturedAt: c.cfg.Now().UTC(), Resources: seen, Metrics: snap}, nil
}

func notChecked(why string) string { return "not checked: " + why }

// Ran reports whether any part of check h ran: false for NotCheckedOn's result (every part
// Degraded with only its "not checked" message), true otherwise.
func Ran(h api.OperatorHealthCheck) bool {
	for _, msgs := range [][]string{h.Pods.Messages, h.Webhooks.Messages, h.CRDs.Messages} {
		if len(msgs) == 0 || !strings.HasPrefix(msgs[0], notChecked("")) {
			return true
		}
	}
	return h.Health != api.Degraded
}

// NotCheckedOn is the result of a check that could not run on cluster at all (no client, no
// connection): every part Degraded with "not checked: why", nothing passed.
func NotCheckedOn(cluster, why string, at time.Time) api.OperatorHealthCheck {
	msg := notChecked(why)
	h := api.OperatorHealthCheck{
		ClusterName: cluster, Health: api.Degraded, LastChecked: at,
		Pods:     api.PodsStatus{Health: api.Degraded, Resources: api.VerdictNotChecked, Messages: []string{msg}},
		Webhooks: api.WebhooksStatus{Health: api.Degraded, Webhooks: []api.WebhookResult{}, Messages: []string{msg}},
		CRDs:     api.ReconciliationStatus{Health: api.Degraded, Messages: []string{msg}, Examples: []api.ResourceExample{}},
		Metrics:  api.MetricsStatus{Health: api.HealthUnknown, Read: api.VerdictNotChecked, Messages: []string{msg}},
	}
	summarize(&h)
	return h
}
