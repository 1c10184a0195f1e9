package werfbundle

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/registry"
)

func TestRetryDelay_RetryAfterIsNeverShortened(t *testing.T) {
	tooMany := func(d time.Duration) error {
		return fmt.Errorf("polling: %w", &registry.Error{Op: registry.OpListTags, StatusCode: 429, RetryAfter: d})
	}
	plain := errors.New("connection reset")
	for _, tc := range []struct {
		name     string
		failures int32
		err      error
		u        float64
		want     time.Duration
	}{
		{"Retry-After, lowest draw", 1, tooMany(120 * time.Second), 0, 120 * time.Second},
		{"Retry-After, middle draw", 1, tooMany(120 * time.Second), 0.5, 126 * time.Second},
		{"Retry-After, highest draw", 3, tooMany(120 * time.Second), 0.999999, 131999988 * time.Microsecond},
		{"Retry-After over the cap", 1, tooMany(5 * time.Hour), 0, time.Hour},
		{"Retry-After over the cap, highest draw", 1, tooMany(5 * time.Hour), 0.999999, 65*time.Minute + 59999640*time.Microsecond},
		{"backoff, lowest draw", 1, plain, 0, 27 * time.Second},
		{"backoff, middle draw", 2, plain, 0.5, time.Minute},
		{"backoff, highest draw", 3, plain, 0.999999, 131999976 * time.Microsecond},
		{"backoff caps at 8m", 9, plain, 0.5, 8 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryDelay(tc.failures, tc.err, tc.u); got != tc.want {
				t.Errorf("retryDelay(%d, %v, %v) = %s, want %s", tc.failures, tc.err, tc.u, got, tc.want)
			}
		})
	}
}
