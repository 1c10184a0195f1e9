package werfbundle

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/operator/notes"
)

// DefaultStatusDelay is how long the operator waits before the status write that records a Job it
// just created (--werfbundle-status-delay): the Job is the only write on a deploy's critical path.
const DefaultStatusDelay = 5 * time.Second

// statusWritePriority queues a deferred status write behind every other request, also behind the
// initial list's (handler.LowPriority): while bundles wait for their first Job, the API server's
// writes go to Jobs.
const statusWritePriority = handler.LowPriority - 1

// pendingStatus is what a reconcile that created a Job did not write yet: the status it computed,
// its notes (Events go out with the status, after the Job), and the Jobs whose Secrets still need
// them as their owner. It lives in memory only: when the process dies, the next one finds the Job
// by its labels and adopts it (stepJobs), as after a crash between the two writes.
type pendingStatus struct {
	status werfv1.WerfBundleStatus
	notes  notes.Notes
	owners []*batchv1.Job
}

// pendingStatuses holds the deferred status writes by bundle, and knows when the operator stops.
type pendingStatuses struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*pendingStatus
	// active counts the reconciles running; stopping is set when the manager stops, from then
	// on no status write is deferred.
	active   atomic.Int64
	stopping atomic.Bool
}

// keys lists the bundles with a status not written yet.
func (p *pendingStatuses) keys() []types.NamespacedName {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(p.m))
	for k := range p.m {
		out = append(out, k)
	}
	return out
}

// take removes and returns the bundle's pending status, nil when there is none.
func (p *pendingStatuses) take(key types.NamespacedName) *pendingStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.m[key]
	delete(p.m, key)
	return ps
}

func (p *pendingStatuses) put(key types.NamespacedName, ps *pendingStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.NamespacedName]*pendingStatus{}
	}
	p.m[key] = ps
}

func (p *pendingStatuses) forget(key types.NamespacedName) { p.take(key) }

// flushTimeout bounds the status writes at shutdown (the manager's graceful shutdown bounds the whole).
const flushTimeout = 20 * time.Second

// statusFlusher writes the deferred statuses when the operator stops on a signal, so a clean
// shutdown (a rollout, a drained node) leaves every Job recorded: it stops deferring, waits for
// the reconciles under way (the controller's workers finish theirs), then reconciles every bundle
// still pending once more, which writes its status. A process that dies instead leaves Jobs the
// next one adopts.
type statusFlusher struct{ r *Reconciler }

func (f statusFlusher) Start(ctx context.Context) error {
	<-ctx.Done()
	p := &f.r.pending
	p.stopping.Store(true)
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	for p.active.Load() > 0 {
		select {
		case <-flush.Done():
			return nil
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, key := range p.keys() {
		if _, err := f.r.Reconcile(flush, ctrl.Request{NamespacedName: key}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to write a deferred status at shutdown", "bundle", key.Name, "namespace", key.Namespace)
		}
	}
	return nil
}

// ownerOf keeps what handing a Job's Secret to it needs (adoptJobSecret): name, UID and labels.
func ownerOf(job *batchv1.Job) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, UID: job.UID, Labels: job.Labels}}
}

// pending is what this reconcile leaves for the next one to write.
func (s *scope) pending() *pendingStatus {
	return &pendingStatus{status: *s.bundle.Status.DeepCopy(), notes: s.events, owners: s.owners}
}
