package testenv

import (
	"context"
	"net"
	"sync"
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

// FreeAddr returns a free 127.0.0.1 TCP address for a server the test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	freeMu.Lock()
	defer freeMu.Unlock()
	// The kernel may hand a port just closed out again: two calls in a row (an operator's
	// metrics and probe addresses) once got the same one. Never return an address twice.
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		if !freeGiven[addr] {
			freeGiven[addr] = true
			return addr
		}
	}
	t.Fatal("no free loopback port not handed out before, in 100 tries")
	return ""
}

var (
	freeMu    sync.Mutex
	freeGiven = map[string]bool{}
)
