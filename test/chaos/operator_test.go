//go:build e2e

package chaos

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// operatorConfig says how to run one operator process.
type operatorConfig struct {
	name        string
	controllers string
	args        []string
}

// operatorProc is one operator process of a suite: the harness's process plus a watchdog that
// counts the exits the suite did not cause (a crash, a lost leader election) and starts the
// operator again after one, so the run goes on and the exit is reported.
type operatorProc struct {
	*operatorproc.Process
	t *testing.T

	mu sync.Mutex
	// killed is the exit channel of the process the suite killed last: its exit is expected.
	killed     <-chan struct{}
	unexpected int
	stop       chan struct{}
	done       chan struct{}
}

// startOperator starts the built operator binary under the operator's RBAC identity with the
// shipped defaults for everything the suite does not set, and waits until it is ready.
func startOperator(ctx context.Context, t *testing.T, kubeconfig string, cfg operatorConfig) *operatorProc {
	t.Helper()
	args := append([]string{
		"--namespace=" + controlplane.OperatorNamespace,
		"--controllers=" + cfg.controllers,
		"--zap-log-level=info",
	}, cfg.args...)
	p := operatorproc.Start(t, operatorproc.Binary(t), operatorproc.Options{Name: cfg.name, Kubeconfig: kubeconfig, Args: args})
	o := &operatorProc{Process: p, t: t, stop: make(chan struct{}), done: make(chan struct{})}
	// The watchdog stops before the harness's cleanup kills the process (cleanups run last in,
	// first out).
	t.Cleanup(o.close)
	p.WaitReady(ctx, t)
	go o.watch()
	return o
}

func (o *operatorProc) watch() {
	defer close(o.done)
	for {
		exited := o.Exited()
		select {
		case <-o.stop:
			return
		case <-exited:
		}
		o.mu.Lock()
		if o.killed == exited {
			o.mu.Unlock()
			// The suite restarts it: wait for the new process.
			for o.Exited() == exited {
				select {
				case <-o.stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			continue
		}
		o.unexpected++
		o.mu.Unlock()
		o.t.Errorf("%s exited on its own: %v (started again)", o.Name, o.Err())
		if err := o.Restart(); err != nil {
			o.t.Errorf("starting %s again: %v", o.Name, err)
			return
		}
	}
}

func (o *operatorProc) close() {
	close(o.stop)
	<-o.done
}

// crash SIGKILLs the operator and starts it again at once with the same flags; it returns once
// the new process is ready.
func (o *operatorProc) crash(ctx context.Context) error {
	o.mu.Lock()
	o.killed = o.Exited()
	o.mu.Unlock()
	if err := o.Restart(); err != nil {
		return err
	}
	return o.WaitReadyErr(ctx)
}

func (o *operatorProc) unexpectedExits() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.unexpected
}

func (o *operatorProc) peakRSS() int64 { return o.PeakRSS() }

// killAtRandom SIGKILLs n times the operator pick returns, each time at a random moment 2-12 s
// after it took the lead (a restarted process first waits for the dead one's Lease to expire),
// so kills land anywhere in the work (a reconcile, between two writes, a cache sync); the
// operator is started again at once. It returns how many kills it made.
func killAtRandom(ctx context.Context, t *testing.T, rnd *rand.Rand, clock *faultClock, n int, pick func() *operatorProc) int {
	t.Helper()
	kills := 0
	for range n {
		o := pick()
		o.waitLeading(ctx, t)
		sleep(ctx, between(rnd, 2*time.Second, 12*time.Second))
		if ctx.Err() != nil {
			t.Fatalf("killing the operator: %v", ctx.Err())
		}
		clock.mark()
		if err := o.crash(ctx); err != nil {
			t.Fatalf("restarting %s after a kill: %v", o.Name, err)
		}
		kills++
		t.Logf("killed %s (SIGKILL) and started it again", o.Name)
	}
	return kills
}

// leaseName is the operator's leader-election Lease (its default --leader-election-id).
const leaseName = "slipway-operator.slipway.dev"

// leading reports whether the operator's metrics say it holds the Lease.
func (o *operatorProc) leading(ctx context.Context) bool {
	if !o.Running() {
		return false
	}
	v, err := o.MetricSum(ctx, "leader_election_master_status", map[string]string{"name": leaseName})
	return err == nil && v == 1
}

// waitLeading waits until the operator leads.
func (o *operatorProc) waitLeading(ctx context.Context, t *testing.T) {
	t.Helper()
	testenv.Eventually(ctx, t, o.Name+" leads", func() (bool, error) { return o.leading(ctx), nil })
}

// fastClient is an admin client for the test's own reads and writes, with a client rate limit
// that is not the bottleneck.
func fastClient(t *testing.T, full *testenv.Env) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(full.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// suite is what every chaos suite starts with.
type suite struct {
	sc    scale
	rnd   *rand.Rand
	ctx   context.Context // the suite's deadline: three times the scale's convergence bound
	full  *testenv.Env    // a full control plane of the suite's own
	c     client.Client   // a client of the test's, not rate-limited like the operator's
	clock *faultClock
	// kubeconfig of the operator's RBAC identity.
	kubeconfig string
}

// startSuite builds the operator binary first (a cold build takes minutes, which must not count
// against the deadline), then starts the suite's control plane and installs the operator's
// identity.
func startSuite(t *testing.T) suite {
	t.Helper()
	st := suite{sc: chaosScale(t), rnd: newRand(t), clock: &faultClock{}}
	operatorproc.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*st.sc.converge)
	t.Cleanup(cancel)
	st.ctx = ctx
	st.full = testenv.New(t, testenv.Full)
	st.c = fastClient(t, st.full)
	kubeconfig, err := st.full.InstallOperatorIdentity(ctx, filepath.Join(t.TempDir(), "operator.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	st.kubeconfig = kubeconfig
	return st
}
