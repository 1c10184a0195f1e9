package refresh_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/operators/refresh"
	"github.com/slipway-dev/slipway/internal/manager/server"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// refresherWith is a refresher over st as `manager serve` makes it (server.NewRefresher), with
// cfg's settings.
func refresherWith(t *testing.T, st store.Store, cfg refresh.Config) *refresh.Refresher {
	t.Helper()
	charts, err := operators.New(operators.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Charts, cfg.ReplicaID = st, charts, "replica-a"
	r, err := server.NewRefresher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRound_NextRunsJittered: one round refreshes many operators at the same instant (a fixed
// clock), and each next run is the interval jittered by the documented ±10%: every one within
// [0.9, 1.1) of the interval after the refresh, spread over that window rather than all equal,
// for sources that were read and for sources that failed alike.
func TestRound_NextRunsJittered(t *testing.T) {
	st := replicas(t, "sqlite", 1)[0]
	repo := charttest.ServeRepository(t, charttest.OperatorChart("widget-operator", "1.0.0", charttest.Base))
	var ops []*store.Operator
	for i := range 40 {
		source := repo.URL
		if i%4 == 3 {
			source = "http://127.0.0.1:1/charts" // refused: the failure is scheduled the same way
		}
		ops = append(ops, addOperator(t, st, fmt.Sprintf("widgets-%02d", i), source))
	}
	now := time.Now().UTC().Truncate(time.Second)
	r := refresherWith(t, st, refresh.Config{Now: func() time.Time { return now }})
	if n := r.Round(t.Context()); n != len(ops) {
		t.Fatalf("the round refreshed %d of %d operators", n, len(ops))
	}

	interval := refresh.DefaultInterval
	lo := time.Duration(float64(interval) * (1 - refresh.DefaultJitter))
	hi := time.Duration(float64(interval) * (1 + refresh.DefaultJitter))
	var waits []time.Duration
	for _, op := range ops {
		rec, err := st.OperatorRefreshGet(t.Context(), op.ID)
		if err != nil {
			t.Fatal(err)
		}
		wait := rec.NextAt.Sub(rec.CheckedAt)
		if !rec.CheckedAt.Equal(now) || wait < lo || wait >= hi {
			t.Errorf("%s: checked at %s, next run %s later; want at %s and within [%s, %s)", op.Name, rec.CheckedAt, wait, now, lo, hi)
		}
		waits = append(waits, wait)
	}
	slices.Sort(waits)
	distinct := len(slices.Compact(slices.Clone(waits)))
	below, above := waits[0] < interval, waits[len(waits)-1] > interval
	// 40 draws uniform over the 2-minute window: their range is below half the window, or all
	// fall on one side of the interval, with a probability under 1e-10.
	if distinct < len(waits)/2 || !below || !above || waits[len(waits)-1]-waits[0] < (hi-lo)/2 {
		t.Errorf("next runs not spread over the jitter window [%s, %s): %d distinct, from %s to %s", lo, hi, distinct, waits[0], waits[len(waits)-1])
	}
	// Nothing is due again before the earliest next run.
	if n := r.Round(t.Context()); n != 0 {
		t.Errorf("a second round at the same instant refreshed %d operators", n)
	}
}

// TestRound_BoundedConcurrency: a round over more operators than Concurrency reads at most
// Concurrency chart sources at once. The repository holds every index.yaml request until the test
// lets one through, and the test lets one through only when Concurrency are waiting: the count
// in flight is what the gate sees, never a duration.
func TestRound_BoundedConcurrency(t *testing.T) {
	const operatorsN, limit = 10, 3
	st := replicas(t, "sqlite", 1)[0]
	repo := charttest.ServeRepository(t, charttest.OperatorChart("widget-operator", "1.0.0", charttest.Base))
	var ops []*store.Operator
	for i := range operatorsN {
		ops = append(ops, addOperator(t, st, fmt.Sprintf("widgets-%02d", i), repo.URL))
	}
	gate := repo.HoldIndex(t)
	r := refresherWith(t, st, refresh.Config{Concurrency: limit, Interval: time.Hour})
	done := make(chan int, 1)
	go func() { done <- r.Round(t.Context()) }()

	for released := range operatorsN {
		want := min(limit, operatorsN-released)
		waitFor(t, fmt.Sprintf("%d refreshes in flight (%d let through)", want, released), func() bool {
			if held := gate.Held(); held > limit {
				t.Fatalf("%d chart sources read at once, Concurrency is %d", held, limit)
			}
			// The request let through last has left the gate, and the next one has come.
			return gate.Passed() == released && gate.Held() == want
		})
		gate.Release(1)
	}
	if n := <-done; n != operatorsN {
		t.Fatalf("the round refreshed %d of %d operators", n, operatorsN)
	}
	if gate.MaxHeld() != limit || gate.Arrived() != operatorsN {
		t.Fatalf("at most %d of %d index reads in flight at once, want exactly %d (Concurrency)", gate.MaxHeld(), gate.Arrived(), limit)
	}
	for _, op := range ops {
		if got := versionsOf(t, st, op.ID); !slices.Equal(got, []string{"1.0.0"}) {
			t.Errorf("%s: versions %v after the round, want [1.0.0]", op.Name, got)
		}
	}
}
