package shard

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	members = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_shard_members",
		Help: "Live shards of a ring, as the assigner last saw their membership Leases.",
	}, []string{"ring"})
	objects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_shard_objects",
		Help: "Objects labelled for each shard, as the assigner last counted them (shard \"\": not assigned yet).",
	}, []string{"ring", "shard"})
	moves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_shard_assignments_total",
		Help: "Shard labels the assigner wrote (first assignments and moves).",
	}, []string{"ring"})
	// Member is 1 for the shard this process is, so a replica's own metrics (reconciles, queue
	// depth, which controller-runtime labels by controller only) can be joined to its shard.
	Member = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_shard_info",
		Help: "1 for the shard this replica is, in each ring it is a member of.",
	}, []string{"ring", "shard"})
)

func init() {
	metrics.Registry.MustRegister(members, objects, moves, Member)
}

// recordCounts sets the objects gauge of every live member (and of the unassigned), dropping the
// series of members gone.
func recordCounts(ring string, live []string, count map[string]int) {
	objects.DeletePartialMatch(map[string]string{"ring": ring})
	for _, m := range live {
		objects.WithLabelValues(ring, m).Set(float64(count[m]))
	}
	objects.WithLabelValues(ring, "").Set(float64(count[""]))
}
