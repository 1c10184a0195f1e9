package health

import "sync"

// DefaultFailureThreshold is the number of consecutive Unhealthy checks that signals a rollback.
const DefaultFailureThreshold = 3

// Tracker counts consecutive Unhealthy checks per (operator, cluster) and signals a rollback at
// the threshold. Only Unhealthy counts as a failure: Degraded (which includes "could not check")
// neither counts nor resets, so an unreachable cluster does not trigger a rollback and does not
// hide the failures around it; Healthy resets. Safe for concurrent use.
type Tracker struct {
	threshold int

	mu       sync.Mutex
	failures map[trackKey]int
}

type trackKey struct{ operator, cluster string }

// Signal is the tracker's answer to one observation.
type Signal struct {
	// ConsecutiveFailures is the number of Unhealthy checks in a row, this one included.
	ConsecutiveFailures int
	// Rollback is true when ConsecutiveFailures reached the threshold; it stays true for every
	// further failure until Reset (the engine resets once it has started the rollback).
	Rollback bool
}

// NewTracker returns a Tracker signalling after threshold consecutive failures (<= 0: 3).
func NewTracker(threshold int) *Tracker {
	if threshold <= 0 {
		threshold = DefaultFailureThreshold
	}
	return &Tracker{threshold: threshold, failures: map[trackKey]int{}}
}

// Observe records one check of operator on cluster.
func (t *Tracker) Observe(operator, cluster string, h Health) Signal {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := trackKey{operator, cluster}
	switch h {
	case Healthy:
		delete(t.failures, k)
	case Unhealthy:
		t.failures[k]++
	}
	n := t.failures[k]
	return Signal{ConsecutiveFailures: n, Rollback: n >= t.threshold}
}

// Reset forgets the failures of operator on cluster (after a rollback, or when the operator is
// removed from the cluster).
func (t *Tracker) Reset(operator, cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.failures, trackKey{operator, cluster})
}
