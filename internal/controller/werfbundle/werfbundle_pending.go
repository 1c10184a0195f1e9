package werfbundle

import (
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// pendingStatuses holds the deferred status writes by bundle.
type pendingStatuses struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*pendingStatus
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

// len is the number of bundles with a status not written yet.
func (p *pendingStatuses) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// ownerOf keeps what handing a Job's Secret to it needs (adoptJobSecret): name, UID and labels.
func ownerOf(job *batchv1.Job) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, UID: job.UID, Labels: job.Labels}}
}

// pending is what this reconcile leaves for the next one to write.
func (s *scope) pending() *pendingStatus {
	return &pendingStatus{status: *s.bundle.Status.DeepCopy(), notes: s.events, owners: s.owners}
}
