package install

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// The BlueGreen switch's span names.
const (
	spanOperatorSwitch     = "operator.switch"
	spanOperatorSwitchBack = "operator.switch_back"
)

// The annotations a switch leaves on what it changed, so that SwitchBack restores it exactly.
const (
	// SwitchedFromAnnotation is on a webhook configuration or CRD the switch re-pointed to green:
	// JSON naming blue and green and holding the original clientConfigs.
	SwitchedFromAnnotation = "slipway.dev/switched-from"
	// ReplicasBeforeSwitchAnnotation is on a blue Deployment or StatefulSet the switch scaled to
	// 0: its replicas before.
	ReplicasBeforeSwitchAnnotation = "slipway.dev/replicas-before-switch"
)

// maxSwitchAttempts bounds how often a switch starts over when an object changed between its
// read and its write (a 409 Conflict): every step is idempotent, so it reads again and goes on.
const maxSwitchAttempts = 5

// Side is one of the two releases of a BlueGreen rollout in one cluster: blue is the live one,
// green the new version installed beside it (another namespace, another release name, so its
// cluster-scoped objects do not collide with blue's).
type Side struct {
	Namespace string `json:"namespace"`
	Release   string `json:"release"`
}

func (sd Side) String() string { return sd.Namespace + "/" + sd.Release }

// SwitchResult is what a Switch or SwitchBack changed. A repeated call changes nothing and
// counts zeros.
type SwitchResult struct {
	// Webhooks is the number of admission webhooks re-pointed (to green, or back to blue).
	Webhooks int
	// CRDs is the number of CRDs whose conversion webhook was re-pointed.
	CRDs int
	// Scaled is the number of blue Deployments and StatefulSets scaled (to 0, or back).
	Scaled int
	// APIRequests counts the Kubernetes API requests the call made.
	APIRequests int64
	// Duration is the call's wall time.
	Duration time.Duration
}

// Switch moves an operator's traffic from blue to green, both installed by Install:
//
//  1. every webhook of blue's Validating and Mutating webhook configurations (those labelled
//     app.kubernetes.io/instance=<blue release> or carrying Helm's release annotations for it)
//     gets the clientConfig of green's webhook of the same name; a webhook green lacks whose
//     Service is in blue's namespace is pointed at green's namespace and at the Service named
//     with green's release prefix instead of blue's (green's CA bundle for that Service if one of
//     green's webhooks has it);
//  2. the conversion webhook of every CRD that calls a blue Service in blue's namespace is
//     re-pointed the same way (nothing else of the CRD changes; CRDs are never deleted);
//  3. blue's Deployments and StatefulSets are scaled to 0.
//
// The originals are kept in annotations (SwitchedFromAnnotation, ReplicasBeforeSwitchAnnotation)
// for SwitchBack. Switch is idempotent: a second call finds the annotations, keeps the originals
// and changes nothing; an interrupted one is completed by the next. Nothing is written when a
// webhook would be pointed at a Service green does not have. Bad sides, a blue release that does
// not exist and a green one that is not deployed are *invalid.Error.
func Switch(ctx context.Context, cfg *rest.Config, blue, green Side) (*SwitchResult, error) {
	return runSwitch(ctx, cfg, spanOperatorSwitch, blue, green, func(ctx context.Context, s *session, res *SwitchResult) error {
		if err := requireRelease(s, blue, "blue", false); err != nil {
			return err
		}
		if err := requireRelease(s, green, "green", true); err != nil {
			return err
		}
		return retryConflicts(func() error {
			p, err := planSwitch(ctx, s, blue, green)
			if err != nil {
				return err
			}
			return p.apply(ctx, s, res)
		})
	})
}

// SwitchBack undoes Switch without reinstalling anything: blue's Deployments and StatefulSets
// are scaled back to their replicas before the switch and waited for until ready (kstatus, at
// most until ctx's deadline, DefaultTimeout without one); then the webhook configurations and
// CRDs the switch re-pointed get their original clientConfigs back, exactly, and lose the
// annotations. Blue's workloads not ready in time give an error wrapping a *NotReadyError, and the
// webhooks are left on green (pointing them at a blue that does not answer would refuse every
// call they guard): call SwitchBack again. It is idempotent; green is only named for the logs and
// the span, and may already be uninstalled.
func SwitchBack(ctx context.Context, cfg *rest.Config, blue, green Side) (*SwitchResult, error) {
	return runSwitch(ctx, cfg, spanOperatorSwitchBack, blue, green, func(ctx context.Context, s *session, res *SwitchResult) error {
		if err := requireRelease(s, blue, "blue", false); err != nil {
			return err
		}
		timeout := remainingTime(ctx)
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var workloads []objectRef
		err := retryConflicts(func() error {
			var err error
			workloads, err = scaleBack(ctx, s, blue, res)
			return err
		})
		if err != nil {
			return err
		}
		if err := waitReady(ctx, s, blue, workloads, timeout); err != nil {
			return fmt.Errorf("switching back to blue: %w; the webhooks still call green: call SwitchBack again once blue is ready", err)
		}
		return retryConflicts(func() error {
			p, err := planSwitchBack(ctx, s, blue)
			if err != nil {
				return err
			}
			return p.apply(ctx, s, res)
		})
	})
}

// runSwitch runs fn in a span and session of its own, and fills and logs the result.
func runSwitch(ctx context.Context, cfg *rest.Config, spanName string, blue, green Side,
	fn func(context.Context, *session, *SwitchResult) error) (res *SwitchResult, err error) {
	if err := validateSides(blue, green); err != nil {
		return nil, err
	}
	start := time.Now()
	ctx, span := telemetry.Tracer().Start(ctx, spanName, trace.WithAttributes(
		attribute.String("blue.release", blue.Release), attribute.String("blue.namespace", blue.Namespace),
		attribute.String("green.release", green.Release), attribute.String("green.namespace", green.Namespace)))
	s, err := newSession(ctx, cfg)
	if err != nil {
		endSpan(span, err)
		return nil, err
	}
	res = &SwitchResult{}
	defer func() {
		res.Duration = time.Since(start)
		res.APIRequests = s.requests.Load()
		telemetry.ObserveKubeAPIRequests(strings.TrimPrefix(spanName, "operator."), res.APIRequests)
		span.SetAttributes(attribute.Int("switch.webhooks", res.Webhooks), attribute.Int("switch.crds", res.CRDs),
			attribute.Int("switch.scaled", res.Scaled), attribute.Int64("k8s.requests", res.APIRequests))
		endSpan(span, err)
		what := "switched to green"
		if spanName == spanOperatorSwitchBack {
			what = "switched back to blue"
		}
		level, msg := s.log.InfoContext, "install: Operator "+what
		if err != nil {
			level, msg = s.log.WarnContext, "install: Operator not "+what
		}
		level(ctx, msg, "blue", blue.String(), "green", green.String(), "webhooks", res.Webhooks, "crds", res.CRDs,
			"scaled", res.Scaled, "duration", res.Duration, "apiRequests", res.APIRequests, "error", err)
	}()
	return res, fn(ctx, s, res)
}

func validateSides(blue, green Side) error {
	for _, f := range []struct {
		field, value string
	}{{"blue.namespace", blue.Namespace}, {"blue.release", blue.Release}, {"green.namespace", green.Namespace}, {"green.release", green.Release}} {
		if errs := validation.IsDNS1123Label(f.value); len(errs) > 0 {
			return invalid.Field(f.field, "%q: %s", f.value, errs[0])
		}
	}
	if blue.Namespace == green.Namespace {
		return invalid.Reasoned("green.namespace", "conflict", nil, "green's namespace must differ from blue's (%s)", blue.Namespace)
	}
	if blue.Release == green.Release {
		return invalid.Reasoned("green.release", "conflict", nil,
			"green's release name must differ from blue's (%s): their cluster-scoped objects would collide", blue.Release)
	}
	return nil
}

// requireRelease checks the side's release exists and, when deployed is set, that its last
// revision is deployed.
func requireRelease(s *session, sd Side, field string, deployed bool) error {
	last, err := lastRelease(s.actionConfig(sd.Namespace), sd.Release)
	if err != nil {
		return err
	}
	if last == nil || last.Info.Status == rcommon.StatusUninstalled {
		return invalid.Reasoned(field+".release", "notFound", nil, "no release %s in namespace %s", sd.Release, sd.Namespace)
	}
	if deployed && last.Info.Status != rcommon.StatusDeployed {
		return invalid.Reasoned(field+".release", "notDeployed", nil,
			"release %s (namespace %s) revision %d is %s, not deployed: install it before switching to it",
			sd.Release, sd.Namespace, last.Version, last.Info.Status)
	}
	return nil
}

// lastRevision is the side's last revision number, 0 when unknown.
func lastRevision(s *session, sd Side) int {
	if r, err := lastRelease(s.actionConfig(sd.Namespace), sd.Release); err == nil && r != nil {
		return r.Version
	}
	return 0
}

// retryConflicts runs fn again when it fails with a 409 Conflict (an object changed between its
// read and its write), at most maxSwitchAttempts times.
func retryConflicts(fn func() error) error {
	var err error
	for range maxSwitchAttempts {
		if err = fn(); !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("objects kept changing while switching (%d attempts): %w", maxSwitchAttempts, err)
}
