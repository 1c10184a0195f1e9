package registry

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRetryDelay_RetryAfterIsNeverShortened(t *testing.T) {
	tooMany := func(d time.Duration) error {
		return fmt.Errorf("checking: %w", &Error{Op: OpManifestExists, StatusCode: 429, RetryAfter: d})
	}
	plain := errors.New("connection reset")
	for _, tc := range []struct {
		name    string
		err     error
		backoff time.Duration
		u       float64
		want    time.Duration
	}{
		{"Retry-After, lowest draw", tooMany(2 * time.Minute), 30 * time.Second, 0, 2 * time.Minute},
		{"Retry-After, middle draw", tooMany(2 * time.Minute), 30 * time.Second, 0.5, 126 * time.Second},
		{"Retry-After, highest draw", tooMany(2 * time.Minute), 30 * time.Second, 0.999999, 131999988 * time.Microsecond},
		{"Retry-After shorter than the backoff replaces it", tooMany(5 * time.Second), 5 * time.Minute, 0, 5 * time.Second},
		{"Retry-After beyond a caller's backoff cap is honoured", tooMany(20 * time.Minute), 5 * time.Minute, 0, 20 * time.Minute},
		{"Retry-After beyond MaxRetryAfter waits MaxRetryAfter", tooMany(5 * time.Hour), time.Minute, 0, MaxRetryAfter},
		{"Retry-After beyond MaxRetryAfter, highest draw", tooMany(5 * time.Hour), time.Minute, 0.999999, 65*time.Minute + 59999640*time.Microsecond},
		{"no Retry-After: backoff, lowest draw", plain, 30 * time.Second, 0, 27 * time.Second},
		{"no Retry-After: backoff, middle draw", plain, time.Minute, 0.5, time.Minute},
		{"no Retry-After: backoff, highest draw", plain, 2 * time.Minute, 0.999999, 131999976 * time.Microsecond},
		{"a 500 without Retry-After backs off", &Error{Op: OpManifestExists, StatusCode: 500}, 10 * time.Second, 0, 9 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RetryDelay(tc.err, tc.backoff, tc.u); got != tc.want {
				t.Errorf("RetryDelay(%v, %s, %v) = %s, want %s", tc.err, tc.backoff, tc.u, got, tc.want)
			}
		})
	}
}

// TestRetryDelay_NeverBeforeRetryAfter: for any draw, the wait is at least the Retry-After and
// at most 10 % more.
func TestRetryDelay_NeverBeforeRetryAfter(t *testing.T) {
	for _, ra := range []time.Duration{time.Second, 7 * time.Second, 2 * time.Minute, 5 * time.Minute, 59 * time.Minute, MaxRetryAfter} {
		for i := range 1000 {
			u := float64(i) / 1000
			got := RetryDelay(&Error{StatusCode: 429, RetryAfter: ra}, 10*time.Second, u)
			if got < ra || got > ra+ra/10 {
				t.Fatalf("RetryDelay(Retry-After %s, u=%v) = %s, want within [%s, %s]", ra, u, got, ra, ra+ra/10)
			}
		}
	}
}
