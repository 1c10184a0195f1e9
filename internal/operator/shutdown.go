package operator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Running reconciles and shutdown.
//
// On SIGTERM controller-runtime shuts each controller's queue and waits up to the graceful
// shutdown timeout for its workers, but it also cancels the context every running reconcile was
// given, at once (controller-runtime issue #3211): a reconcile in the middle of a registry request
// or of its writes fails with "context canceled" and what it was about to write is lost, to be
// redone by the next leader. finishingManager, which the controllers are set up with, gives each
// reconcile a context of its own instead: the stop signal does not cancel it; the end of the grace
// does (see graceCutoff), so a reconcile that would outlast the timeout still returns before the
// manager gives up on it. A reconcile the queue hands out after the stop signal does not start.

// errGraceOver is the cause of a reconcile's context canceled because the graceful shutdown
// timeout is nearly over.
var errGraceOver = errors.New("the graceful shutdown timeout is nearly over")

// finishingManager is the manager the controllers' Setup functions get: every controller added
// to it has its reconciler wrapped in finishingReconciler.
type finishingManager struct {
	ctrl.Manager
	grace time.Duration
	// everyReplica runs the controllers added (and the runnables that do not ask for the
	// leader) on every replica: the shards of a sharded system (see Sharding).
	everyReplica bool
}

// Add implements manager.Manager.
func (m finishingManager) Add(r manager.Runnable) error {
	if c, ok := r.(controller.Controller); ok {
		if err := letReconcilesFinish(c, m.grace); err != nil {
			return err
		}
	}
	if m.everyReplica && onEveryReplica(r) {
		r = everyReplica{r}
	}
	return m.Manager.Add(r)
}

// letReconcilesFinish wraps the reconciler of c, a controller not yet started. controller-runtime
// has no option for it: its controller calls the reconciler held in its exported field Do, which
// is set here. Should a controller-runtime upgrade change that, the operator refuses to start
// rather than lose writes on shutdown (and its tests fail).
func letReconcilesFinish(c controller.Controller, grace time.Duration) error {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("controller %T: cannot let its reconciles finish on shutdown: not a pointer to a struct", c)
	}
	do := v.Elem().FieldByName("Do")
	if !do.IsValid() || !do.CanSet() || do.Type() != reflect.TypeFor[reconcile.Reconciler]() || do.IsNil() {
		return fmt.Errorf("controller %T: cannot let its reconciles finish on shutdown: no reconciler in a field Do", c)
	}
	inner := do.Interface().(reconcile.Reconciler)
	if _, done := inner.(*finishingReconciler); done {
		return nil
	}
	do.Set(reflect.ValueOf(reconcile.Reconciler(&finishingReconciler{inner: inner, grace: grace, over: make(chan struct{})})))
	return nil
}

// graceCutoff is how long after the stop signal a running reconcile's context stays alive: the
// graceful shutdown timeout less a tenth of it (at most 5 s), left for the reconcile to return
// and the manager to stop the rest. A timeout of 0 cancels at once (controller-runtime's own
// behaviour); a negative one, which makes the manager wait for ever, never.
func graceCutoff(grace time.Duration) time.Duration {
	return grace - min(grace/10, 5*time.Second)
}

// finishingReconciler runs inner with a context the stop signal does not cancel.
type finishingReconciler struct {
	inner reconcile.Reconciler
	grace time.Duration

	once sync.Once
	over chan struct{} // closed graceCutoff after the stop signal
}

// Reconcile implements reconcile.Reconciler. ctx is the controller's: canceled on the stop signal.
func (f *finishingReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if ctx.Err() != nil {
		// Handed out after the stop signal: left to the next leader, which reconciles everything.
		return reconcile.Result{}, nil
	}
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() {
		f.startGrace()
		select {
		case <-f.over:
			cancel(errGraceOver)
		case <-rctx.Done():
		}
	})
	defer stop()
	return f.inner.Reconcile(rctx, req)
}

// startGrace closes f.over graceCutoff after its first call (never for a negative grace).
func (f *finishingReconciler) startGrace() {
	f.once.Do(func() {
		if f.grace < 0 {
			return
		}
		time.AfterFunc(graceCutoff(f.grace), func() { close(f.over) })
	})
}
