//go:build e2e

package chaos

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/scheme"
)

// watches runs informers for the whole run: they list, watch, and list and watch again when
// a watch breaks (the API server restart breaks all of them), so every state they deliver is one
// the API server really served. Handlers run on the informer's goroutine, one at a time per kind.
type watches struct {
	cache cache.Cache
	stop  context.CancelFunc
	done  chan struct{}
}

// startWatches starts a cache of its own (its own connections, independent of the operator's)
// restricted as byObject says (label selectors keep it small).
func startWatches(t *testing.T, cfg *rest.Config, byObject map[client.Object]cache.ByObject) *watches {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.New(), ByObject: byObject})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &watches{cache: c, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if err := c.Start(ctx); err != nil {
			t.Errorf("watch recorder: %v", err)
		}
	}()
	t.Cleanup(w.close)
	return w
}

// observe calls seen with every state of obj's kind the watch delivers, deleted set on its
// deletion (with the last state known). It returns once the initial list is in.
func (w *watches) observe(t *testing.T, obj client.Object, seen func(o client.Object, deleted bool)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inf, err := w.cache.GetInformer(ctx, obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { emit(o, false, seen) },
		UpdateFunc: func(_, o any) { emit(o, false, seen) },
		DeleteFunc: func(o any) { emit(o, true, seen) },
	}); err != nil {
		t.Fatal(err)
	}
	if !w.cache.WaitForCacheSync(ctx) {
		t.Fatal("the watch recorder's cache did not sync")
	}
}

func emit(o any, deleted bool, seen func(client.Object, bool)) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	if co, ok := o.(client.Object); ok {
		seen(co, deleted)
	}
}

func (w *watches) close() {
	w.stop()
	<-w.done
}
