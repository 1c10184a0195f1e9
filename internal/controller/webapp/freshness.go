package webapp

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheLagRetry is how soon a reconcile that read an object older than its own last write runs
// again.
const cacheLagRetry = 100 * time.Millisecond

// lastWrites remembers the resourceVersion of the operator's own last write to each object. The
// informers of WebApps, Deployments and Services are independent: the event of a Deployment just
// applied can start a reconcile before the WebApp's cache holds the status written a moment
// earlier. Acting on that older copy would repeat the write and its phase event, and misread the
// previous phase; such a reconcile waits for the cache instead.
type lastWrites struct {
	mu sync.Mutex
	rv map[writeKey]string
}

type writeKey struct {
	kind string
	key  types.NamespacedName
}

func (w *lastWrites) record(kind string, obj client.Object) {
	if obj.GetResourceVersion() == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rv == nil {
		w.rv = map[writeKey]string{}
	}
	w.rv[writeKey{kind, client.ObjectKeyFromObject(obj)}] = obj.GetResourceVersion()
}

// behind reports whether obj, read from the cache, is older than the last write to it.
func (w *lastWrites) behind(kind string, obj client.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.rv[writeKey{kind, client.ObjectKeyFromObject(obj)}]
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), last)
	return err == nil && cmp < 0
}

// forget drops what is known about a deleted WebApp's objects.
func (w *lastWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, kind := range []string{"WebApp", "Deployment", "Service"} {
		delete(w.rv, writeKey{kind, key})
	}
}
