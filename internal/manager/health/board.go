package health

import (
	"slices"
	"strings"
	"sync"

	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// Board keeps the latest result per (operator, cluster), answers the health API from them and
// keeps the gauges slipway_manager_operators_{healthy,degraded,unhealthy} (operators by overall
// health) current. Safe for concurrent use. It is per replica: each replica's engine records
// the checks it runs.
type Board struct {
	mu     sync.Mutex
	latest map[string]map[string]ClusterHealth // operator → cluster → result
}

// NewBoard returns an empty Board.
func NewBoard() *Board { return &Board{latest: map[string]map[string]ClusterHealth{}} }

// Record stores a check of operator and updates the gauges.
func (b *Board) Record(operator string, ch ClusterHealth) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.latest[operator] == nil {
		b.latest[operator] = map[string]ClusterHealth{}
	}
	b.latest[operator][ch.ClusterName] = ch
	b.setGauges()
}

// Forget drops operator's result on cluster (the operator left the cluster).
func (b *Board) Forget(operator, cluster string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.latest[operator], cluster)
	if len(b.latest[operator]) == 0 {
		delete(b.latest, operator)
	}
	b.setGauges()
}

// Operator is operator's health over every cluster with a result, clusters by name; ok is false
// when none has been checked.
func (b *Board) Operator(operator string) (OperatorHealth, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.latest[operator]
	if len(m) == 0 {
		return OperatorHealth{}, false
	}
	cs := make([]ClusterHealth, 0, len(m))
	for _, ch := range m {
		cs = append(cs, ch)
	}
	slices.SortFunc(cs, func(a, b ClusterHealth) int { return strings.Compare(a.ClusterName, b.ClusterName) })
	return Overall(operator, cs), true
}

// OnCluster is operator's health on one cluster; ok is false when it has not been checked there.
func (b *Board) OnCluster(operator, cluster string) (OperatorHealth, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch, ok := b.latest[operator][cluster]
	if !ok {
		return OperatorHealth{}, false
	}
	return Overall(operator, []ClusterHealth{ch}), true
}

func (b *Board) setGauges() {
	var healthy, degraded, unhealthy int
	for _, m := range b.latest {
		hs := make([]Health, 0, len(m))
		for _, ch := range m {
			hs = append(hs, ch.Health)
		}
		switch worst(hs...) {
		case Healthy:
			healthy++
		case Degraded:
			degraded++
		default:
			unhealthy++
		}
	}
	telemetry.SetOperatorHealth(healthy, degraded, unhealthy)
}
