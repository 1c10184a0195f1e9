package install

import (
	"fmt"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// BenchmarkInstall is one first install of the small operator chart (its CRD, ServiceAccount,
// RBAC, a one-replica Deployment) into a new namespace, until the Deployment is Available.
// Reports apiRequests/op.
func BenchmarkInstall(b *testing.B) {
	ch := loadChart(b, "1.1.0", charttest.Compatible, nil)
	ctx := b.Context()
	var requests int64
	i := 0
	for b.Loop() {
		name := fmt.Sprintf("bench-install-%d", i)
		i++
		res, err := Install(ctx, env.Config, Release{Name: name, Namespace: name, Chart: ch, Timeout: 45 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		requests += res.APIRequests
	}
	b.ReportMetric(float64(requests)/float64(i), "apiRequests/op")
}

// BenchmarkRollback is one rollback of the operator between 1.0.0 and 1.1.0 (each rollback goes
// to the revision before the last, so they alternate), until the Deployment is Available again.
// Reports apiRequests/op.
func BenchmarkRollback(b *testing.B) {
	ctx := b.Context()
	const name, ns = "bench-rollback", "bench-rollback"
	for _, v := range []struct {
		version string
		level   charttest.Level
	}{{"1.0.0", charttest.Base}, {"1.1.0", charttest.Compatible}} {
		if _, err := Install(ctx, env.Config, Release{Name: name, Namespace: ns, Timeout: 45 * time.Second,
			Chart: loadChart(b, v.version, v.level, nil)}); err != nil {
			b.Fatal(err)
		}
	}
	var requests int64
	n := 0
	for b.Loop() {
		res, err := Rollback(ctx, env.Config, name, ns, 0)
		if err != nil {
			b.Fatal(err)
		}
		requests += res.APIRequests
		n++
	}
	b.ReportMetric(float64(requests)/float64(n), "apiRequests/op")
}
