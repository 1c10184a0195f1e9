package install

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/helmkit"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// ReleaseInfo is one revision of a release.
type ReleaseInfo struct {
	Name, Namespace string
	Revision        int
	Chart           string
	ChartVersion    string
	AppVersion      string
	// Status is Helm's: deployed, superseded, failed, pending-install, pending-upgrade,
	// pending-rollback, uninstalling, uninstalled.
	Status      string
	Description string
	Updated     time.Time
	// Values are the values the revision was installed with.
	Values map[string]any
}

// Rollback rolls the release back to toRevision (0: the revision before the last), as helm
// rollback does: that revision's chart and values are applied again (server-side) as a new
// revision, and its resources waited for until ready, at most until ctx's deadline
// (DefaultTimeout without one). CRDs are left as they are: the newer schema stays, so stored
// custom resources stay valid. An unknown release or revision is *invalid.Error; workloads not
// ready give a *NotReadyError. The Result is returned with an error too. It runs in span
// helm.rollback (the caller's operator.rollback, if any, is its parent).
func Rollback(ctx context.Context, cfg *rest.Config, name, namespace string, toRevision int) (res *Result, err error) {
	ctx, span := telemetry.Tracer().Start(ctx, spanHelmRollback, trace.WithAttributes(
		attribute.String("release.name", name), attribute.String("release.namespace", namespace),
		attribute.Int("release.to_revision", toRevision)))
	start := time.Now()
	s, err := newSession(ctx, cfg)
	if err != nil {
		endSpan(span, err)
		return nil, err
	}
	res = &Result{Upgrade: true}
	defer func() {
		res.Duration = time.Since(start)
		res.APIRequests = s.requests.Load()
		telemetry.ObserveKubeAPIRequests("rollback", res.APIRequests)
		span.SetAttributes(attribute.Int("release.revision", res.Revision), attribute.Int64("k8s.requests", res.APIRequests))
		endSpan(span, err)
		level, msg := s.log.InfoContext, "install: Release rolled back"
		if err != nil {
			level, msg = s.log.WarnContext, "install: Rollback failed"
		}
		level(ctx, msg, "release", name, "namespace", namespace, "toRevision", toRevision,
			"revision", res.Revision, "chartVersion", res.Version, "duration", res.Duration, "apiRequests", res.APIRequests, "error", err)
	}()
	if toRevision < 0 {
		return res, invalid.Field("revision", "revision %d: want 0 (the previous one) or a revision number", toRevision)
	}
	ac := s.actionConfig(namespace)
	hist, err := history(ac, name, namespace)
	if err != nil {
		return res, err
	}
	last := hist[len(hist)-1]
	res.PreviousRevision, res.PreviousVersion = last.Revision, last.ChartVersion
	if toRevision == 0 && len(hist) < 2 {
		return res, invalid.Reasoned("revision", "notFound", nil, "release %s has no revision before %d to roll back to", name, last.Revision)
	}
	if toRevision != 0 && !slices.ContainsFunc(hist, func(r ReleaseInfo) bool { return r.Revision == toRevision }) {
		return res, invalid.Reasoned("revision", "notFound", nil, "release %s has no revision %d", name, toRevision)
	}
	before, err := lastRelease(ac, name)
	if err != nil {
		return res, err
	}
	if err := clearPending(ac, before); err != nil {
		return res, err
	}
	timeout := remainingTime(ctx)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.follow(ctx)
	rb := action.NewRollback(ac)
	rb.Version = toRevision
	rb.ServerSideApply = "true"
	rb.ForceConflicts = true
	rb.MaxHistory = MaxHistory
	rb.WaitStrategy = kube.StatusWatcherStrategy
	rb.WaitOptions = []kube.WaitOption{kube.WithWaitContext(ctx)}
	rb.Timeout = timeout
	rb.Description = fmt.Sprintf("Rolled back by %s", FieldManager)
	err = rb.Run(name)
	return res, s.outcome(ctx, ac, name, namespace, before, timeout, err, res)
}

// Uninstall removes the release's objects and history, as helm uninstall does, keeping every
// CRD (crds/ ones are not part of the release; templated ones carry the keep policy) and so
// every custom resource. A release that does not exist is not an error.
func Uninstall(ctx context.Context, cfg *rest.Config, name, namespace string) (err error) {
	ctx, span := telemetry.Tracer().Start(ctx, "helm.uninstall", trace.WithAttributes(
		attribute.String("release.name", name), attribute.String("release.namespace", namespace)))
	defer func() { endSpan(span, err) }()
	s, err := newSession(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { telemetry.ObserveKubeAPIRequests("uninstall", s.requests.Load()) }()
	ac := s.actionConfig(namespace)
	if last, err := lastRelease(ac, name); err != nil || last == nil {
		return err
	}
	un := action.NewUninstall(ac)
	un.IgnoreNotFound = true
	un.WaitStrategy = kube.HookOnlyStrategy
	un.Timeout = remainingTime(ctx)
	un.DeletionPropagation = "background"
	if _, err := un.Run(name); err != nil {
		return fmt.Errorf("uninstalling release %s (namespace %s): %w", name, namespace, err)
	}
	s.log.InfoContext(ctx, "install: Release uninstalled", "release", name, "namespace", namespace, "apiRequests", s.requests.Load())
	return nil
}

// Status is the release's last revision; an unknown release is *invalid.Error (reason notFound).
func Status(ctx context.Context, cfg *rest.Config, name, namespace string) (*ReleaseInfo, error) {
	hist, err := History(ctx, cfg, name, namespace)
	if err != nil {
		return nil, err
	}
	return &hist[len(hist)-1], nil
}

// History is every stored revision of the release, oldest first (at most MaxHistory); an
// unknown release is *invalid.Error (reason notFound).
func History(ctx context.Context, cfg *rest.Config, name, namespace string) ([]ReleaseInfo, error) {
	s, err := newSession(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return history(s.actionConfig(namespace), name, namespace)
}

func history(ac *action.Configuration, name, namespace string) ([]ReleaseInfo, error) {
	rs, err := ac.Releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) || (err == nil && len(rs) == 0) {
		return nil, invalid.Reasoned("release", "notFound", err, "no release %s in namespace %s", name, namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading release %s: %w", name, err)
	}
	out := make([]ReleaseInfo, 0, len(rs))
	for _, r := range rs {
		rel, err := helmkit.ToRelease(r)
		if err != nil {
			return nil, err
		}
		out = append(out, info(rel))
	}
	slices.SortFunc(out, func(a, b ReleaseInfo) int { return a.Revision - b.Revision })
	return out, nil
}

func info(r *release.Release) ReleaseInfo {
	i := ReleaseInfo{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Values: r.Config}
	if r.Chart != nil && r.Chart.Metadata != nil {
		i.Chart, i.ChartVersion, i.AppVersion = r.Chart.Metadata.Name, r.Chart.Metadata.Version, r.Chart.Metadata.AppVersion
	}
	if r.Info != nil {
		i.Status, i.Description, i.Updated = r.Info.Status.String(), r.Info.Description, r.Info.LastDeployed
	}
	return i
}
