// Package cachelag tells a controller when its informer cache still holds an object older than the
// controller's own last write to it. Informers of different kinds are independent: the event of a
// child object just written can start a reconcile before the parent's cache holds the status
// written a moment earlier, and acting on that older copy would repeat writes and events.
package cachelag

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writes remembers the resourceVersion of the controller's last write to each object, by kind
// (the caller's name for it, e.g. "Deployment") and key. The zero value is ready to use.
type Writes struct {
	mu sync.Mutex
	rv map[types.NamespacedName]map[string]string
}

// Record remembers obj's resourceVersion as returned by a write.
func (w *Writes) Record(kind string, obj client.Object) {
	if obj.GetResourceVersion() == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rv == nil {
		w.rv = map[types.NamespacedName]map[string]string{}
	}
	key := client.ObjectKeyFromObject(obj)
	if w.rv[key] == nil {
		w.rv[key] = map[string]string{}
	}
	w.rv[key][kind] = obj.GetResourceVersion()
}

// Behind reports whether obj, read from the cache, is older than the last write to it.
func (w *Writes) Behind(kind string, obj client.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.rv[client.ObjectKeyFromObject(obj)][kind]
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), last)
	return err == nil && cmp < 0
}

// Refresh reads obj again from api when the copy in it, read from the cache, is older than the
// last write to it: acting on the older copy would repeat that write and its events. A NotFound
// from api is returned as it is.
func (w *Writes) Refresh(ctx context.Context, kind string, api client.Reader, obj client.Object) error {
	if !w.Behind(kind, obj) {
		return nil
	}
	return api.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}

// Forget drops what is known about every kind of object under key (the object was deleted).
func (w *Writes) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}
