package catalyst

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/slipway-dev/slipway/internal/registry"
)

// TestRegistryRetry_NeverBeforeRetryAfter: after a 429 the Environment waits at least the
// Retry-After, also when it is longer than the 5m backoff cap, and until then every reconcile
// (an event, the resync) keeps the failure without asking the registry.
func TestRegistryRetry_NeverBeforeRetryAfter(t *testing.T) {
	key := types.NamespacedName{Namespace: "p", Name: "e"}
	const image = "registry.example/org/app:abc"
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tooMany := func(d time.Duration) error {
		return fmt.Errorf("checking: %w", &registry.Error{Op: registry.OpManifestExists, StatusCode: 429, RetryAfter: d})
	}
	msg := func(wait time.Duration) string { return fmt.Sprintf("failed; retrying in %s", wait) }
	for _, tc := range []struct {
		name     string
		err      error
		u        float64
		min, max time.Duration
	}{
		{"Retry-After, lowest draw", tooMany(2 * time.Minute), 0, 2 * time.Minute, 2 * time.Minute},
		{"Retry-After, highest draw", tooMany(2 * time.Minute), 0.999999, 2 * time.Minute, 132 * time.Second},
		{"Retry-After beyond the 5m backoff cap", tooMany(20 * time.Minute), 0, 20 * time.Minute, 20 * time.Minute},
		{"Retry-After beyond an hour", tooMany(3 * time.Hour), 0.5, registry.MaxRetryAfter, registry.MaxRetryAfter * 11 / 10},
		{"no Retry-After: the first backoff ±10 %", errors.New("connection reset"), 0, 9 * time.Second, 11 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m deployFailures
			wait, got := m.registryRetry(key, image, tc.err, now, tc.u, msg)
			if wait < tc.min || wait > tc.max {
				t.Fatalf("wait %s, want %s to %s", wait, tc.min, tc.max)
			}
			if got != msg(wait) {
				t.Errorf("message %q, want %q", got, msg(wait))
			}
			// Just before the retry time the registry is not asked; the failure stands.
			blocked, left := m.registryBlocked(key, image, now.Add(wait-time.Millisecond))
			if left != time.Millisecond || blocked != got {
				t.Errorf("just before the retry: blocked %q for %s, want %q for 1ms", blocked, left, got)
			}
			if _, left := m.registryBlocked(key, image, now.Add(wait)); left != 0 {
				t.Errorf("at the retry time: still blocked for %s", left)
			}
			if _, left := m.registryBlocked(key, image+"-other", now); left != 0 {
				t.Errorf("another image: blocked for %s", left)
			}
		})
	}
}

// TestRegistryRetry_BackoffGrowsAndResets: failures in a row double the backoff up to 5m; a
// success or another image starts again.
func TestRegistryRetry_BackoffGrowsAndResets(t *testing.T) {
	key := types.NamespacedName{Namespace: "p", Name: "e"}
	const image = "registry.example/org/app:abc"
	now := time.Now()
	plain := errors.New("connection reset")
	msg := func(time.Duration) string { return "failed" }
	var m deployFailures
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute} {
		if wait, _ := m.registryRetry(key, image, plain, now, 0.5, msg); wait != want {
			t.Errorf("failure %d: wait %s, want %s", i+1, wait, want)
		}
	}
	m.forgetRegistry(key)
	if wait, _ := m.registryRetry(key, image, plain, now, 0.5, msg); wait != 10*time.Second {
		t.Errorf("after a success: wait %s, want 10s", wait)
	}
	if wait, _ := m.registryRetry(key, image+"-next", plain, now, 0.5, msg); wait != 10*time.Second {
		t.Errorf("another image: wait %s, want 10s", wait)
	}
}
