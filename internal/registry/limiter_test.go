package registry

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

func TestLimiter_AcquireHonoursCancellation(t *testing.T) {
	l := NewLimiter(1)
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Acquire(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire on a full limiter with a cancelled context = %v, want context.Canceled", err)
	}
	l.Release()
	if err := l.Acquire(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context = %v, want context.Canceled even with a free slot", err)
	}
	if l.InFlight() != 0 || l.Size() != 1 {
		t.Errorf("InFlight, Size = %d, %d; want 0, 1", l.InFlight(), l.Size())
	}
}

func TestLimiter_NilIsUnbounded(t *testing.T) {
	var l *Limiter
	for range 3 {
		if err := l.Acquire(context.Background()); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
	}
	l.Release()
	if l.InFlight() != 0 || l.Size() != 0 {
		t.Errorf("nil limiter reports InFlight %d, Size %d", l.InFlight(), l.Size())
	}
}

// TestLimiter_BoundsOperationsAcrossClients runs many ListTags on several clients sharing one
// limiter against a server that holds every request until released, and checks the server never
// sees more requests at once than the limiter allows.
func TestLimiter_BoundsOperationsAcrossClients(t *testing.T) {
	const size, clients, callsPerClient = 3, 4, 5
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	arrived := make(chan struct{}, clients*callsPerClient)
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		arrived <- struct{}{}
		<-release
		inFlight.Add(-1)
		writeJSON(w, 200, `{"tags":["a"]}`)
	})
	limiter := NewLimiter(size)
	var wg sync.WaitGroup
	errs := make(chan error, clients*callsPerClient)
	for range clients {
		c, err := NewClient(Options{Insecure: true}, limiter)
		if err != nil {
			t.Fatal(err)
		}
		for range callsPerClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := c.ListTags(ctx(t), srv.host()+"/org/app", "")
				errs <- err
			}()
		}
	}
	// Let requests through one at a time once the limiter is saturated.
	for range clients * callsPerClient {
		<-arrived
		release <- struct{}{}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("ListTags: %v", err)
		}
	}
	if got := peak.Load(); got > size {
		t.Errorf("peak concurrent requests = %d, want at most %d", got, size)
	}
	if limiter.InFlight() != 0 {
		t.Errorf("limiter still holds %d slots", limiter.InFlight())
	}
}
