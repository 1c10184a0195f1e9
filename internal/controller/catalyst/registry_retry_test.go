//go:build e2e

package catalyst_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// TestEnvironment_TooManyRequestsWaitsRetryAfter: a registry answering 429 with a Retry-After of
// 10 minutes (twice the 5m backoff cap) holds the Environment back at least that long, at most
// 10 % more, as its BuildReady message says; a spec change in between reconciles without asking
// the registry again; once the time has come the registry is asked and the Environment is Ready.
func TestEnvironment_TooManyRequestsWaitsRetryAfter(t *testing.T) {
	f := newFixture(t)
	f.pushImage(f.head)
	proxy := registrytest.NewFaultProxy(t, f.reg.URL)
	proxy.Add(registrytest.Rule{Fault: registrytest.TooManyRequests, Match: registrytest.IsManifest, RetryAfter: "600"})
	p := f.project(func(p *catalystv1alpha1.Project) { p.Spec.Registry.Repository = proxy.Repository("org/app") })
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-429", f.head))

	got := f.waitEnv(e, "waiting for the registry", func(got *catalystv1alpha1.Environment) bool {
		c := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition)
		return c != nil && c.Reason == catalystv1alpha1.RegistryUnavailableReason
	})
	msg := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition).Message
	wait := retryingIn(t, msg)
	if wait < 10*time.Minute || wait > 11*time.Minute {
		t.Errorf("retrying in %s, want 10m to 11m (Retry-After 600, never earlier): %s", wait, msg)
	}
	if n := proxy.Responses(429); n != 1 {
		t.Fatalf("%d answers 429, want 1", n)
	}

	// Five minutes later a spec change reconciles: the registry is not asked again.
	f.clock.advance(5 * time.Minute)
	f.updateEnv(e, func(e *catalystv1alpha1.Environment) {
		e.Spec.Config.EnvVars = append(e.Spec.Config.EnvVars, catalystv1alpha1.EnvVar{Name: "TRACE", Value: "1"})
	})
	got = f.waitEnv(e, "the spec change reconciled", func(got *catalystv1alpha1.Environment) bool {
		c := condition(got.Status.Conditions, "Ready")
		return c != nil && c.ObservedGeneration == got.Generation
	})
	if c := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition); c.Reason != catalystv1alpha1.RegistryUnavailableReason || c.Message != msg {
		t.Errorf("BuildReady after the spec change = %s %q, want %s %q", c.Reason, c.Message, catalystv1alpha1.RegistryUnavailableReason, msg)
	}
	if n := proxy.Responses(429); n != 1 {
		t.Errorf("%d answers 429 after a reconcile before the Retry-After, want still 1", n)
	}

	// Past the retry time the registry, serving again, is asked and the image deployed.
	proxy.Clear()
	f.clock.advance(wait)
	f.updateEnv(e, func(e *catalystv1alpha1.Environment) { e.Spec.Config.EnvVars = e.Spec.Config.EnvVars[:1] })
	f.waitReady(e)
	if c := condition(f.getEnv(e).Status.Conditions, catalystv1alpha1.BuildReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("BuildReady = %+v", c)
	}
}

// retryingIn reads the "retrying in <duration>" of a registry failure's message.
func retryingIn(t *testing.T, msg string) time.Duration {
	t.Helper()
	_, after, ok := strings.Cut(msg, "retrying in ")
	if !ok {
		t.Fatalf("no retry time in %q", msg)
	}
	d, err := time.ParseDuration(strings.Fields(after)[0])
	if err != nil {
		t.Fatalf("retry time in %q: %v", msg, err)
	}
	return d
}

// updateEnv changes the Environment's spec with change, retrying on conflicts.
func (f *fixture) updateEnv(e *catalystv1alpha1.Environment, change func(*catalystv1alpha1.Environment)) {
	f.t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := f.getEnv(e)
		change(got)
		return f.c.Update(f.ctx, got)
	}); err != nil {
		f.t.Fatal(err)
	}
}
