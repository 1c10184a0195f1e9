// Package phasegauge counts objects by phase in one gauge series per phase, whatever the number of
// objects: each object is remembered with its last phase, moves from one count to another when
// its phase changes, and leaves its count when it is gone.
package phasegauge

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
)

// Gauge is a gauge vector with one label, the phase, kept by object.
type Gauge[P ~string] struct {
	vec  *prometheus.GaugeVec
	mu   sync.Mutex
	last map[types.NamespacedName]P
}

// New keeps vec (a gauge vector with the single label "phase") and creates a zero series for each
// of phases, so dashboards see every phase from the start.
func New[P ~string](vec *prometheus.GaugeVec, phases ...P) *Gauge[P] {
	for _, p := range phases {
		vec.WithLabelValues(string(p))
	}
	return &Gauge[P]{vec: vec, last: map[types.NamespacedName]P{}}
}

// Set records the object's phase.
func (g *Gauge[P]) Set(key types.NamespacedName, p P) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, ok := g.last[key]
	if ok && old == p {
		return
	}
	if ok {
		g.vec.WithLabelValues(string(old)).Dec()
	}
	g.last[key] = p
	g.vec.WithLabelValues(string(p)).Inc()
}

// Forget removes a deleted object from its count.
func (g *Gauge[P]) Forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.last[key]; ok {
		g.vec.WithLabelValues(string(old)).Dec()
		delete(g.last, key)
	}
}

// Count is the number of objects in phase p.
func (g *Gauge[P]) Count(p P) float64 {
	m := &dto.Metric{}
	if err := g.vec.WithLabelValues(string(p)).Write(m); err != nil {
		return 0
	}
	return m.GetGauge().GetValue()
}
