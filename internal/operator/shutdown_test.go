package operator_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/scheme"
)

// stopSeen is a leader-election runnable that reports when the manager stops the leader-election
// group, the moment it cancels the controllers' contexts.
type stopSeen chan struct{}

func (s stopSeen) Start(ctx context.Context) error {
	<-ctx.Done()
	close(s)
	return nil
}

func (stopSeen) NeedLeaderElection() bool { return true }

// heldReconciler holds the reconcile of one ConfigMap until released, then annotates it.
type heldReconciler struct {
	c       client.Client
	name    string
	started chan struct{}
	release chan struct{}

	once sync.Once
	// ctxErr and ctxCause are the reconcile context's state when it went on (released, or its
	// context canceled); writeErr what its write returned. Set before done is closed.
	ctxErr, ctxCause, writeErr error
	done                       chan struct{}
}

func (h *heldReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Name != h.name {
		return reconcile.Result{}, nil
	}
	first := false
	h.once.Do(func() { first = true })
	if !first {
		return reconcile.Result{}, nil
	}
	close(h.started)
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
	err := h.c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"reconciled":"yes"}}}`)))
	h.ctxErr, h.ctxCause, h.writeErr = ctx.Err(), context.Cause(ctx), err
	close(h.done)
	return reconcile.Result{}, err
}

// startHeld runs a manager whose one controller reconciles ConfigMaps with h, creates the
// ConfigMap h holds, and returns once its reconcile is held, with the manager's stop function and
// what mgr.Start returned (once it has).
func startHeld(t *testing.T, grace time.Duration, h *heldReconciler) (stopped stopSeen, stop func(), result <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := "held-" + rand.String(5)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	stopped = make(stopSeen)
	opts := operator.Options{
		MetricsAddr: "0", ProbeAddr: "0", Namespace: ns, GracefulShutdownTimeout: grace,
		SkipControllerNameValidation: true,
	}
	mgr, err := operator.NewManager(ctx, env.Config, scheme.New(), opts, []operator.Controller{{
		Name: "held",
		Setup: func(_ context.Context, mgr ctrl.Manager, _ operator.Options) error {
			h.c = mgr.GetClient()
			if err := mgr.Add(stopped); err != nil {
				return err
			}
			return ctrl.NewControllerManagedBy(mgr).Named("held").For(&corev1.ConfigMap{}).Complete(h)
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() { res <- mgr.Start(ctx) }()
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: h.name, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.started:
	case <-time.After(time.Minute):
		t.Fatal("the ConfigMap was not reconciled")
	}
	return stopped, cancel, res
}

func newHeld() *heldReconciler {
	return &heldReconciler{name: "held", started: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
}

// TestManager_StopLetsTheRunningReconcileFinish: a reconcile running when the manager is told to
// stop keeps a live context after the manager has canceled its controllers' (controller-runtime
// cancels the running reconciles' there): its write lands and the manager stops cleanly.
func TestManager_StopLetsTheRunningReconcileFinish(t *testing.T) {
	h := newHeld()
	stopped, stop, result := startHeld(t, 30*time.Second, h)
	stop()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the manager did not stop its controllers")
	}
	select {
	case <-h.done:
		t.Fatalf("the reconcile went on before it was released: its context ended (%v)", h.ctxErr)
	default:
	}
	close(h.release)
	<-h.done
	if h.ctxErr != nil || h.writeErr != nil {
		t.Errorf("after the stop signal: reconcile context %v, its write %v; want both nil", h.ctxErr, h.writeErr)
	}
	if err := <-result; err != nil {
		t.Errorf("the manager stopped with %v", err)
	}
}

// TestManager_StopCancelsAReconcileAtTheEndOfTheGrace: a reconcile that does not end by itself
// has its context canceled before the graceful shutdown timeout is over (errGraceOver as the
// cause), so it returns and the manager stops without an error instead of giving up on it.
func TestManager_StopCancelsAReconcileAtTheEndOfTheGrace(t *testing.T) {
	h := newHeld()
	// 10 s: the reconcile's context ends at 9 s, leaving 1 s (a tenth) for it to return and the
	// manager to stop the rest, as in production; a shorter grace leaves a loaded machine too little.
	_, stop, result := startHeld(t, 10*time.Second, h)
	stop()
	<-h.done // never released: it goes on when its context is canceled
	if !errors.Is(h.ctxErr, context.Canceled) || h.ctxCause == nil || h.ctxCause.Error() != "the graceful shutdown timeout is nearly over" {
		t.Errorf("reconcile context: %v, cause %v; want canceled because the grace is nearly over", h.ctxErr, h.ctxCause)
	}
	if err := <-result; err != nil {
		t.Errorf("the manager stopped with %v, want nil: the reconcile returned within the grace", err)
	}
}
