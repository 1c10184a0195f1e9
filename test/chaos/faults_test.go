//go:build e2e

package chaos

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// newRand is the run's random source; SLIPWAY_CHAOS_SEED replays a run's kill moments and
// choices.
func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SLIPWAY_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SLIPWAY_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("random seed %d (SLIPWAY_CHAOS_SEED=%d replays it)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x5eed))
}

// between is a uniformly random duration in [lo, hi).
func between(rnd *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rnd.Int64N(int64(hi-lo)))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// faultClock remembers when the last fault ended: the convergence time is measured from it.
type faultClock struct {
	mu   sync.Mutex
	last time.Time
}

func (c *faultClock) mark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = time.Now()
}

func (c *faultClock) since() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.last)
}

// restartAPIServer restarts kube-apiserver and returns how long the API was unavailable.
func restartAPIServer(ctx context.Context, t *testing.T, full *testenv.Env, clock *faultClock) time.Duration {
	t.Helper()
	down, err := full.RestartAPIServer(ctx)
	if err != nil {
		t.Fatalf("restarting the API server: %v", err)
	}
	clock.mark()
	t.Logf("restarted kube-apiserver: the API was unavailable for %s", down.Round(time.Millisecond))
	return down
}

// registryFaults injects the fault proxy's faults into the registry traffic, one kind after the
// other, until stopped: 5xx answers, connection resets, hanging requests (the client's timeout),
// 429 with Retry-After, endless tag lists (a bounded reader must give up), and slow bodies
// (slowBody). Each burst hits the next burst requests (a third as many for the slow kinds),
// whoever makes them.
type registryFaults struct {
	proxy  *registrytest.FaultProxy
	slow   *slowBody
	stop   context.CancelFunc
	done   chan struct{}
	bursts atomic.Int64
}

func startRegistryFaults(t *testing.T, rnd *rand.Rand, proxy *registrytest.FaultProxy, slow *slowBody, burst int) *registryFaults {
	ctx, cancel := context.WithCancel(context.Background())
	f := &registryFaults{proxy: proxy, slow: slow, stop: cancel, done: make(chan struct{})}
	seed := rnd.Uint64()
	few := max(1, burst/3)
	go func() {
		defer close(f.done)
		r := rand.New(rand.NewPCG(seed, seed))
		kinds := []func(){
			func() { proxy.Inject(registrytest.ServerError, burst) },
			func() { proxy.Inject(registrytest.ConnectionReset, burst) },
			func() { proxy.Inject(registrytest.Hang, few) },
			func() {
				proxy.Add(registrytest.Rule{Fault: registrytest.TooManyRequests, RetryAfter: "3", Times: burst})
			},
			func() {
				proxy.Add(registrytest.Rule{Fault: registrytest.HugeBody, Match: registrytest.IsTagsList, Size: 16 << 20, Times: few})
			},
			func() { slow.slowFor(3 * time.Second) },
		}
		for i := 0; ctx.Err() == nil; i++ {
			kinds[i%len(kinds)]()
			f.bursts.Add(1)
			sleep(ctx, between(r, 4*time.Second, 8*time.Second))
		}
	}()
	t.Cleanup(f.end)
	return f
}

// end stops injecting and clears what is left.
func (f *registryFaults) end() {
	f.stop()
	<-f.done
	f.proxy.Clear()
	f.slow.slowFor(0)
}

// slowBody is a TCP relay in front of the fault proxy that, for a while at a time, trickles
// what the registry sends (64 bytes every 250 ms on every connection): the registry answers, but
// slowly. Everything else passes as it is, resets included (a reset from upstream is passed on as
// a reset).
type slowBody struct {
	Host     string
	upstream string
	ln       net.Listener
	until    atomic.Int64 // unix nanoseconds
	hits     atomic.Int64 // reads from upstream passed on slowly
}

func newSlowBody(t *testing.T, upstream string) *slowBody {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &slowBody{Host: ln.Addr().String(), upstream: upstream, ln: ln}
	go s.serve()
	t.Cleanup(func() { _ = ln.Close() })
	return s
}

// slowFor makes every connection slow for d from now (0: stop now).
func (s *slowBody) slowFor(d time.Duration) { s.until.Store(time.Now().Add(d).UnixNano()) }

func (s *slowBody) slow() bool { return time.Now().UnixNano() < s.until.Load() }

func (s *slowBody) serve() {
	for {
		in, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.relay(in.(*net.TCPConn))
	}
}

func (s *slowBody) relay(in *net.TCPConn) {
	defer func() { _ = in.Close() }()
	c, err := net.DialTimeout("tcp", s.upstream, 5*time.Second)
	if err != nil {
		_ = in.SetLinger(0)
		return
	}
	out := c.(*net.TCPConn)
	defer func() { _ = out.Close() }()
	go func() {
		_, _ = io.Copy(out, in)
		_ = out.CloseWrite()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := out.Read(buf)
		if n > 0 && s.slow() {
			s.hits.Add(1)
			for b := buf[:n]; len(b) > 0; b = b[min(64, len(b)):] {
				if _, werr := in.Write(b[:min(64, len(b))]); werr != nil {
					return
				}
				time.Sleep(250 * time.Millisecond)
			}
		} else if n > 0 {
			if _, werr := in.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = in.SetLinger(0) // pass a reset on as a reset
			}
			_ = in.CloseWrite()
			return
		}
	}
}
