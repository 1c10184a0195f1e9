package testenv

import (
	"context"
	"testing"
	"time"
)

// Eventually polls check every 250ms until it reports done or ctx ends, then fails the test with
// what it was waiting for and the last error check returned.
func Eventually(ctx context.Context, t testing.TB, what string, check func() (done bool, err error)) {
	t.Helper()
	var lastErr error
	for {
		done, err := check()
		if done {
			return
		}
		lastErr = err
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s (last error: %v)", what, lastErr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
