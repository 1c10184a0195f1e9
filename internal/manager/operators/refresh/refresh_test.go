package refresh_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/operators/refresh"
	"github.com/slipway-dev/slipway/internal/manager/server"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestMain stops the test binary's PostgreSQL server and workload fleet (deploy_test.go).
func TestMain(m *testing.M) {
	code := testenv.StopFleet(m.Run())
	if err := pgtest.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping PostgreSQL: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// replicas opens n store clients on one fresh database of engine, as n manager replicas would.
func replicas(t *testing.T, engine string, n int) []store.Store {
	t.Helper()
	var open func() (store.Store, error)
	switch engine {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "manager.db")
		open = func() (store.Store, error) { return sqlitestore.Open(t.Context(), path, sqlitestore.WithMigrate()) }
	case "postgres":
		url := pgtest.NewDatabase(t)
		open = func() (store.Store, error) { return pgstore.Open(t.Context(), url, pgstore.WithMigrate()) }
	}
	out := make([]store.Store, n)
	for i := range out {
		st, err := open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		out[i] = st
	}
	return out
}

func newRefresher(t *testing.T, st store.Store, replica string, interval time.Duration) *refresh.Refresher {
	t.Helper()
	charts, err := operators.New(operators.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := server.NewRefresher(refresh.Config{Store: st, Charts: charts, ReplicaID: replica, Interval: interval,
		Concurrency: 2, Lease: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func addOperator(t *testing.T, st store.Store, name, repository string) *store.Operator {
	t.Helper()
	op, err := st.OperatorCreate(t.Context(), &store.OperatorCreateParams{ID: uuid.NewString(), Name: name, Namespace: name + "-system",
		ChartRepository: repository, ChartName: "widget-operator", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// waitFor polls cond every 50 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func versionsOf(t *testing.T, st store.Store, operatorID string) []string {
	t.Helper()
	vs, err := st.OperatorVersionList(t.Context(), operatorID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range vs {
		if v.RemovedAt == nil {
			out = append(out, v.Version)
		}
	}
	return out
}

// TestLoop: two replicas' loops on one database, a short interval. A version published after
// registration is found by the loop with its CRD and audited as the system's; a source that
// cannot be read is recorded as a failure, counted; an operator whose lease a killed replica
// left behind is refreshed once the lease lapses, not before.
func TestLoop(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testLoop(t, engine)
		})
	}
}

func testLoop(t *testing.T, engine string) {
	stores := replicas(t, engine, 2)
	st := stores[0]
	versions := charttest.Versions
	repo := charttest.ServeRepository(t, charttest.OperatorChart("widget-operator", versions[0].Version, versions[0].Level))
	op := addOperator(t, st, "widgets", repo.URL)
	broken := addOperator(t, st, "broken", "http://127.0.0.1:1/charts")
	// A replica killed while refreshing "stuck" left its lease for 2 s.
	stuck := addOperator(t, st, "stuck", repo.URL)
	leftUntil := time.Now().Add(2 * time.Second)
	if held, err := st.LeaseAcquire(t.Context(), &store.LeaseAcquireParams{Name: refresh.LeaseName(stuck.ID), Owner: "killed/1",
		Now: time.Now(), Until: leftUntil}); err != nil || !held {
		t.Fatalf("lease: %v %v", held, err)
	}

	for i, s := range stores {
		r := newRefresher(t, s, []string{"replica-a", "replica-b"}[i], 300*time.Millisecond)
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Stop)
	}
	waitFor(t, "the first versions", func() bool { return slices.Equal(versionsOf(t, st, op.ID), []string{"1.0.0"}) })
	repo.Add(t, charttest.OperatorChart("widget-operator", versions[1].Version, versions[1].Level))
	waitFor(t, "the version published later", func() bool {
		return slices.Equal(versionsOf(t, st, op.ID), []string{"1.1.0", "1.0.0"})
	})
	if revs, err := st.CRDVersionList(t.Context(), &store.CRDVersionListParams{OperatorID: op.ID, Version: "1.1.0"}); err != nil || len(revs) != 1 {
		t.Fatalf("the CRD of 1.1.0: %v, %v", revs, err)
	}
	events, err := st.AuditList(t.Context(), &store.AuditListParams{Actor: refresh.SystemActor, TargetName: "widgets", Limit: 100})
	if err != nil || len(events) == 0 || events[0].Action != "operator.refresh" || !strings.Contains(events[0].Details, "1.1.0") {
		t.Fatalf("audit of the loop's refresh: %+v, %v", events, err)
	}

	waitFor(t, "the failures of the broken source", func() bool {
		rec, err := st.OperatorRefreshGet(t.Context(), broken.ID)
		return err == nil && rec.Failures >= 2 && rec.SucceededAt == nil && strings.Contains(rec.Error, "127.0.0.1:1")
	})

	waitFor(t, "the stuck operator, after its lease lapsed", func() bool { return len(versionsOf(t, st, stuck.ID)) == 2 })
	rec, err := st.OperatorRefreshGet(t.Context(), stuck.ID)
	if err != nil || rec.CheckedAt.Before(leftUntil.Add(-10*time.Millisecond)) {
		t.Fatalf("the stuck operator was refreshed at %v while its lease was held until %v (%v)", rec, leftUntil, err)
	}
}

// TestRefreshWaitsForTheLease: an on-demand refresh waits for another one of the same operator
// and, when it does not end in time, is refused with store.ErrConflict naming the replica that
// holds the lease; nothing is read.
func TestRefreshWaitsForTheLease(t *testing.T) {
	st := replicas(t, "sqlite", 1)[0]
	repo := charttest.ServeRepository(t, charttest.OperatorChart("widget-operator", "1.0.0", charttest.Base))
	op := addOperator(t, st, "widgets", repo.URL)
	if held, err := st.LeaseAcquire(t.Context(), &store.LeaseAcquireParams{Name: refresh.LeaseName(op.ID), Owner: "other/1",
		Now: time.Now(), Until: time.Now().Add(time.Minute)}); err != nil || !held {
		t.Fatalf("lease: %v %v", held, err)
	}
	r := newRefresher(t, st, "replica-a", time.Hour)
	_, err := r.Refresh(t.Context(), op, refresh.Options{Wait: 300 * time.Millisecond})
	if !errors.Is(err, store.ErrConflict) || repo.Requests() != 0 {
		t.Fatalf("refresh while another holds the lease: %v (%d requests)", err, repo.Requests())
	}
	if !strings.Contains(err.Error(), "(replica other, its lease until ") {
		t.Errorf("the refusal %q does not name the replica holding the lease", err)
	}
	if err := st.LeaseRelease(context.Background(), refresh.LeaseName(op.ID), "other/1"); err != nil {
		t.Fatal(err)
	}
	res, err := r.Refresh(t.Context(), op, refresh.Options{Wait: 300 * time.Millisecond})
	if err != nil || !slices.Equal(res.Added, []string{"1.0.0"}) {
		t.Fatalf("refresh once the lease is free: %+v, %v", res, err)
	}
}

// answerlessStore takes a lease and then answers as a request whose context ended does (the
// store committed it; the client never heard): a replica stopping in the middle of a refresh.
type answerlessStore struct {
	store.Store
}

func (s answerlessStore) LeaseAcquire(ctx context.Context, p *store.LeaseAcquireParams) (bool, error) {
	if _, err := s.Store.LeaseAcquire(context.WithoutCancel(ctx), p); err != nil {
		return false, err
	}
	return false, context.Canceled
}

// TestRefreshLeaseTakenWithoutAnAnswerIsGivenUp: a refresh whose lease request failed leaves no
// lease behind, so the next refresh (another replica's, a user's) is not refused for minutes.
func TestRefreshLeaseTakenWithoutAnAnswerIsGivenUp(t *testing.T) {
	st := replicas(t, "sqlite", 1)[0]
	repo := charttest.ServeRepository(t, charttest.OperatorChart("widget-operator", "1.0.0", charttest.Base))
	op := addOperator(t, st, "widgets", repo.URL)
	stopping := newRefresher(t, answerlessStore{st}, "replica-a", time.Hour)
	if _, err := stopping.Refresh(t.Context(), op, refresh.Options{Wait: 300 * time.Millisecond}); !errors.Is(err, context.Canceled) {
		t.Fatalf("refresh whose lease request was not answered: %v, want context.Canceled", err)
	}
	if l, err := st.LeaseGet(t.Context(), refresh.LeaseName(op.ID)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refresh lease after the failed request: %+v, %v; want none", l, err)
	}
	res, err := newRefresher(t, st, "replica-b", time.Hour).Refresh(t.Context(), op, refresh.Options{Wait: 300 * time.Millisecond})
	if err != nil || !slices.Equal(res.Added, []string{"1.0.0"}) {
		t.Fatalf("the next refresh: %+v, %v", res, err)
	}
}
