package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// DeploymentOpts are the factory's optional fields; zero values get defaults.
type DeploymentOpts struct {
	// Operator is the deployed operator; nil creates one.
	Operator *store.Operator
	// Clusters are the target clusters' names (nil: one new name), all in Environment (Dev).
	Clusters    []string
	Environment store.Environment
	Strategy    string                 // Direct
	Status      store.DeploymentStatus // Planning
	RequestedBy string
	CreatedAt   time.Time
	NextRunAt   *time.Time // nil: not due
}

// Deployment creates a deployment of version 1.1.0 with a fresh id.
func Deployment(ctx context.Context, tb testing.TB, e store.Executor, o *DeploymentOpts) *store.Deployment {
	tb.Helper()
	d, err := e.DeploymentCreate(ctx, NewDeployment(ctx, tb, e, o))
	if err != nil {
		tb.Fatalf("create deployment: %v", err)
	}
	return d
}

// NewDeployment is the deployment Deployment would create, not yet created (the operator is).
func NewDeployment(ctx context.Context, tb testing.TB, e store.Executor, o *DeploymentOpts) *store.Deployment {
	tb.Helper()
	if o == nil {
		o = &DeploymentOpts{}
	}
	op := o.Operator
	if op == nil {
		op = Operator(ctx, tb, e, nil)
	}
	clusters := o.Clusters
	if clusters == nil {
		clusters = []string{"cluster-" + uuid.NewString()[:8]}
	}
	env := cmpOr(o.Environment, store.EnvironmentDev)
	d := &store.Deployment{
		ID: uuid.NewString(), OperatorID: op.ID, Version: "1.1.0", Strategy: cmpOr(o.Strategy, "Direct"),
		Config: json.RawMessage(`{"parallelClusters":2}`), Status: o.Status, RequestedBy: cmpOr(o.RequestedBy, "alice"),
		CreatedAt: o.CreatedAt, NextRunAt: o.NextRunAt,
	}
	for _, c := range clusters {
		d.Clusters = append(d.Clusters, &store.DeploymentCluster{ClusterName: c, Environment: env})
	}
	return d
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// clusterNames are the names of d's clusters, in order.
func clusterNames(d *store.Deployment) []string {
	return names(d.Clusters, func(c *store.DeploymentCluster) string { return c.ClusterName })
}

// activeOf reports each of d's clusters' Active, in order.
func activeOf(d *store.Deployment) []bool {
	out := make([]bool, len(d.Clusters))
	for i, c := range d.Clusters {
		out[i] = c.Active
	}
	return out
}

var deploymentCases = []testCase{
	{"CreateGetRoundTrip", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "cert-manager"})
		id := uuid.NewString()
		started := b.now.Add(time.Second)
		in := &store.Deployment{
			ID: strings.ToUpper(id), OperatorID: strings.ToUpper(op.ID), OperatorName: "ignored", Version: "1.14.0",
			Strategy: "Canary",
			// Kept as given, spacing and key order included.
			Config: json.RawMessage(`{"initialPercentage": 10, "evaluationPeriod":"PT5M" ,"a":1}`),
			Values: json.RawMessage(`{"replicas":2}`),
			Status: store.DeploymentWaitingApproval, Reason: "needs approval", RequestedBy: "alice",
			RequestID: "req-1", CreatedAt: b.now, StartedAt: &started,
			Clusters: []*store.DeploymentCluster{
				{ClusterName: "prod-b", Environment: store.EnvironmentProduction, Stage: 2, PreviousRevision: 4, PreviousVersion: "1.13.0"},
				{ClusterName: "dev-a", Environment: store.EnvironmentDev, Status: store.ClusterPending},
				{ClusterName: "staging-c", Environment: store.EnvironmentStaging, Stage: 1, Message: "queued"},
			},
		}
		snapshot := cloneForTest(in)
		d, err := b.store.DeploymentCreate(b.ctx, in)
		requireOK(t, err, "create")
		requireEqual(t, in, snapshot, "the argument is left as it was")
		want := &store.Deployment{
			ID: id, OperatorID: op.ID, OperatorName: "cert-manager", Version: "1.14.0", Strategy: "Canary",
			Config: in.Config, Values: in.Values, Status: store.DeploymentWaitingApproval, Reason: "needs approval",
			RequestedBy: "alice", RequestID: "req-1", Revision: 0, CreatedAt: b.now, UpdatedAt: b.now, StartedAt: &started,
			Clusters: []*store.DeploymentCluster{
				{DeploymentID: id, ClusterName: "prod-b", Environment: store.EnvironmentProduction, Stage: 2,
					Status: store.ClusterPending, PreviousRevision: 4, PreviousVersion: "1.13.0", Active: true, UpdatedAt: b.now},
				{DeploymentID: id, ClusterName: "dev-a", Environment: store.EnvironmentDev, Status: store.ClusterPending,
					Active: true, UpdatedAt: b.now},
				{DeploymentID: id, ClusterName: "staging-c", Environment: store.EnvironmentStaging, Stage: 1,
					Status: store.ClusterPending, Message: "queued", Active: true, UpdatedAt: b.now},
			},
		}
		requireEqual(t, d, want, "created (clusters in the given order)")
		for _, form := range []string{id, strings.ToUpper(id)} {
			got, err := b.store.DeploymentGetByID(b.ctx, form)
			requireOK(t, err, "get "+form)
			requireEqual(t, got, want, "get "+form)
		}
		if string(d.Config) != string(in.Config) {
			t.Fatalf("config %s, want it byte for byte as given: %s", d.Config, in.Config)
		}

		// Defaults: a new id, Planning, now; no clusters is allowed (an empty, non-nil list).
		d, err = b.store.DeploymentCreate(b.ctx, &store.Deployment{OperatorID: op.ID, Version: "1.15.0", Strategy: "Direct"})
		requireOK(t, err, "create with defaults")
		if _, err := uuid.Parse(d.ID); err != nil || d.Status != store.DeploymentPlanning || d.CreatedAt.IsZero() ||
			d.Clusters == nil || len(d.Clusters) != 0 || d.Config != nil || d.StartedAt != nil {
			t.Fatalf("defaults: %+v", d)
		}
		_, err = b.store.DeploymentCreate(b.ctx, &store.Deployment{ID: id, OperatorID: op.ID, Version: "1", Strategy: "Direct"})
		requireErr(t, err, store.ErrAlreadyExists, "same id")
	}},
	{"NotFoundAndInvalid", func(t *testing.T, b *testBundle) {
		for _, id := range []string{uuid.NewString(), "not-a-uuid", ""} {
			_, err := b.store.DeploymentGetByID(b.ctx, id)
			requireErr(t, err, store.ErrNotFound, "get "+id)
			_, err = b.store.DeploymentUpdate(b.ctx, id, func(*store.Deployment) error {
				t.Fatal("fn called for a missing deployment")
				return nil
			})
			requireErr(t, err, store.ErrNotFound, "update "+id)
			_, err = b.store.DeploymentEventInsert(b.ctx, &store.DeploymentEvent{DeploymentID: id, Type: "status"})
			requireErr(t, err, store.ErrNotFound, "event of "+id)
			evs, err := b.store.DeploymentEventList(b.ctx, &store.DeploymentEventListParams{DeploymentID: id})
			requireOK(t, err, "events of "+id)
			requireEqual(t, len(evs), 0, "events of "+id)
		}
		for _, op := range []string{uuid.NewString(), "not-a-uuid"} {
			_, err := b.store.DeploymentCreate(b.ctx, &store.Deployment{OperatorID: op, Version: "1", Strategy: "Direct"})
			requireErr(t, err, store.ErrNotFound, "create for operator "+op)
		}
		op := Operator(b.ctx, t, b.store, nil)
		for name, mutate := range map[string]func(d *store.Deployment){
			"strategy":     func(d *store.Deployment) { d.Strategy = "Yolo" },
			"status":       func(d *store.Deployment) { d.Status = "Done" },
			"version":      func(d *store.Deployment) { d.Version = "" },
			"config":       func(d *store.Deployment) { d.Config = json.RawMessage(`{"a":`) },
			"values":       func(d *store.Deployment) { d.ValuesByEnvironment = json.RawMessage(`nope`) },
			"environment":  func(d *store.Deployment) { d.Clusters[0].Environment = "Moon" },
			"clusterState": func(d *store.Deployment) { d.Clusters[0].Status = "dancing" },
			"clusterName":  func(d *store.Deployment) { d.Clusters[0].ClusterName = "" },
			"twice":        func(d *store.Deployment) { d.Clusters[1].ClusterName = d.Clusters[0].ClusterName },
			"id":           func(d *store.Deployment) { d.ID = "nope" },
		} {
			d := NewDeployment(b.ctx, t, b.store, &DeploymentOpts{Operator: op, Clusters: []string{"a", "b"}})
			mutate(d)
			if _, err := b.store.DeploymentCreate(b.ctx, d); err == nil {
				t.Errorf("create with a bad %s: no error", name)
			}
		}
		list, err := b.store.DeploymentList(b.ctx, &store.DeploymentListParams{})
		requireOK(t, err, "list")
		requireEqual(t, len(list), 0, "deployments written by refused creates")
	}},
	{"OneActivePerOperatorAndCluster", func(t *testing.T, b *testBundle) {
		x := Operator(b.ctx, t, b.store, nil)
		y := Operator(b.ctx, t, b.store, nil)
		first := Deployment(b.ctx, t, b.store, &DeploymentOpts{Operator: x, Clusters: []string{"c1", "c2"}})
		requireEqual(t, activeOf(first), []bool{true, true}, "active at creation")

		// X to c3 and c2: c2 is taken, so nothing of it is written (c3 stays free).
		second := NewDeployment(b.ctx, t, b.store, &DeploymentOpts{Operator: x, Clusters: []string{"c3", "c2"}})
		_, err := b.store.DeploymentCreate(b.ctx, second)
		requireErr(t, err, store.ErrConflict, "second active deployment of X to c2")
		if errors.Is(err, store.ErrAlreadyExists) {
			t.Fatalf("the one-active rule is ErrConflict, not ErrAlreadyExists: %v", err)
		}
		_, err = b.store.DeploymentGetByID(b.ctx, second.ID)
		requireErr(t, err, store.ErrNotFound, "refused deployment")
		Deployment(b.ctx, t, b.store, &DeploymentOpts{Operator: x, Clusters: []string{"c3"}})
		// Another operator to the same cluster is fine.
		Deployment(b.ctx, t, b.store, &DeploymentOpts{Operator: y, Clusters: []string{"c1", "c2"}})

		// In a transaction the refusal leaves the transaction usable.
		err = store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.DeploymentCreate(ctx, NewDeployment(ctx, t, tx, &DeploymentOpts{Operator: x, Clusters: []string{"c1"}}))
			requireErr(t, err, store.ErrConflict, "in a transaction")
			Deployment(ctx, t, tx, &DeploymentOpts{Operator: x, Clusters: []string{"c4"}})
			return nil
		})
		requireOK(t, err, "transaction after the conflict")

		// Terminal frees the clusters.
		done, err := b.store.DeploymentUpdate(b.ctx, first.ID, func(d *store.Deployment) error {
			d.Status = store.DeploymentCompleted
			return nil
		})
		requireOK(t, err, "complete")
		requireEqual(t, activeOf(done), []bool{false, false}, "active after Completed")
		if done.FinishedAt == nil || !done.FinishedAt.Equal(done.UpdatedAt) {
			t.Fatalf("FinishedAt %v, want UpdatedAt %v", done.FinishedAt, done.UpdatedAt)
		}
		third := Deployment(b.ctx, t, b.store, &DeploymentOpts{Operator: x, Clusters: []string{"c2", "c1"}})

		// Reviving the finished deployment (a manual rollback of it) conflicts with the new one.
		_, err = b.store.DeploymentUpdate(b.ctx, first.ID, func(d *store.Deployment) error {
			d.Status = store.DeploymentRollingBack
			d.Clusters[1].Active = true
			return nil
		})
		requireErr(t, err, store.ErrConflict, "reactivating c2 while the third deployment holds it")
		got, err := b.store.DeploymentGetByID(b.ctx, first.ID)
		requireOK(t, err, "get")
		requireEqual(t, got, done, "unchanged after the conflict")

		// A cluster released early (skipped) is free for another deployment at once.
		_, err = b.store.DeploymentUpdate(b.ctx, third.ID, func(d *store.Deployment) error {
			d.Clusters[0].Status, d.Clusters[0].Active = store.ClusterSkipped, false
			return nil
		})
		requireOK(t, err, "release c2")
		Deployment(b.ctx, t, b.store, &DeploymentOpts{Operator: x, Clusters: []string{"c2"}})
	}},
	{"ConcurrentCreatesOneActive", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, nil)
		errs := parallel(func(i int) error {
			_, err := b.store.DeploymentCreate(b.ctx, NewDeployment(b.ctx, t, b.store,
				&DeploymentOpts{Operator: op, Clusters: []string{fmt.Sprint("own-", i), "contested"}}))
			return err
		})
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("a loser got %v, want ErrConflict", err)
			}
		}
		requireEqual(t, won, 1, "deployments created")
		list, err := b.store.DeploymentList(b.ctx, &store.DeploymentListParams{})
		requireOK(t, err, "list")
		requireEqual(t, len(list), 1, "deployments stored")
		requireEqual(t, clusterNames(list[0])[1], "contested", "the winner's clusters")
	}},
	{"DeletedClusterKeepsHistory", func(t *testing.T, b *testBundle) {
		c := Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "doomed"})
		d := Deployment(b.ctx, t, b.store, &DeploymentOpts{Clusters: []string{c.Name}})
		requireOK(t, b.store.ClusterDelete(b.ctx, c.Name), "delete a cluster with a deployment")
		got, err := b.store.DeploymentGetByID(b.ctx, d.ID)
		requireOK(t, err, "get")
		requireEqual(t, got, d, "history after the cluster is gone")
	}},
	{"UpdateAppliesFn", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, &DeploymentOpts{Clusters: []string{"a", "b", "c"}, CreatedAt: b.now})
		at := b.now.Add(time.Minute)
		got, err := b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
			d.Status, d.Reason, d.StartedAt, d.UpdatedAt = store.DeploymentDeploying, "stage 1", &at, at
			d.Values = json.RawMessage(`{"x":true}`)
			d.Clusters[1].Status, d.Clusters[1].HelmRevision, d.Clusters[1].Message = store.ClusterInstalling, 3, "helm upgrade"
			return nil
		})
		requireOK(t, err, "update")
		want := cloneForTest(d)
		want.Status, want.Reason, want.StartedAt, want.UpdatedAt, want.Revision = store.DeploymentDeploying, "stage 1", &at, at, 1
		want.Values = json.RawMessage(`{"x":true}`)
		want.Clusters[1].Status, want.Clusters[1].HelmRevision, want.Clusters[1].Message = store.ClusterInstalling, 3, "helm upgrade"
		want.Clusters[1].UpdatedAt = at // only the changed cluster moves
		requireEqual(t, got, want, "updated")
		read, err := b.store.DeploymentGetByID(b.ctx, d.ID)
		requireOK(t, err, "get")
		requireEqual(t, read, want, "read back")

		// Without a time from fn, UpdatedAt is the store's now; unchanged clusters keep theirs.
		got, err = b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
			d.Reason = "stage 2"
			return nil
		})
		requireOK(t, err, "update without a time")
		if got.Revision != 2 || got.UpdatedAt.Equal(at) || !got.Clusters[1].UpdatedAt.Equal(at) {
			t.Fatalf("second update: revision %d, updated %v, cluster b updated %v", got.Revision, got.UpdatedAt, got.Clusters[1].UpdatedAt)
		}
		want = got

		// fn's error aborts, returned as is; so do changes fn may not make.
		boom := errors.New("boom")
		_, err = b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
			d.Status = store.DeploymentFailed
			return boom
		})
		if err != boom { //nolint:errorlint // returned as is, not wrapped
			t.Fatalf("fn's error: %v, want boom itself", err)
		}
		for name, fn := range map[string]func(d *store.Deployment){
			"id":            func(d *store.Deployment) { d.ID = uuid.NewString() },
			"operator":      func(d *store.Deployment) { d.OperatorID = uuid.NewString() },
			"revision":      func(d *store.Deployment) { d.Revision = 42 },
			"createdAt":     func(d *store.Deployment) { d.CreatedAt = at },
			"clusterName":   func(d *store.Deployment) { d.Clusters[0].ClusterName = "z" },
			"clusterAdded":  func(d *store.Deployment) { d.Clusters = append(d.Clusters, &store.DeploymentCluster{ClusterName: "z"}) },
			"clusterOrder":  func(d *store.Deployment) { d.Clusters[0], d.Clusters[1] = d.Clusters[1], d.Clusters[0] },
			"status":        func(d *store.Deployment) { d.Status = "Done" },
			"clusterStatus": func(d *store.Deployment) { d.Clusters[2].Status = "dancing" },
			"json":          func(d *store.Deployment) { d.Config = json.RawMessage("{") },
		} {
			_, err := b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
				d.Reason = "must not be written"
				fn(d)
				return nil
			})
			if err == nil {
				t.Errorf("update changing %s: no error", name)
			}
		}
		read, err = b.store.DeploymentGetByID(b.ctx, d.ID)
		requireOK(t, err, "get")
		requireEqual(t, read, want, "nothing written by refused updates")
	}},
	{"UpdateInTx", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, nil)
		// Rolled back with the transaction.
		tx, err := b.store.Begin(b.ctx)
		requireOK(t, err, "begin")
		_, err = tx.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error { d.Reason = "rolled back"; return nil })
		requireOK(t, err, "update in tx")
		_, err = tx.DeploymentEventInsert(b.ctx, &store.DeploymentEvent{DeploymentID: d.ID, Type: "status"})
		requireOK(t, err, "event in tx")
		requireOK(t, tx.Rollback(b.ctx), "rollback")
		got, err := b.store.DeploymentGetByID(b.ctx, d.ID)
		requireOK(t, err, "get")
		requireEqual(t, got, d, "after rollback")

		// fn's error inside a transaction undoes only that update; the transaction goes on.
		boom := errors.New("boom")
		err = store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.DeploymentUpdate(ctx, d.ID, func(d *store.Deployment) error { d.Reason = "first"; return nil })
			requireOK(t, err, "first")
			_, err = tx.DeploymentUpdate(ctx, d.ID, func(d *store.Deployment) error { d.Reason = "refused"; return boom })
			requireErr(t, err, boom, "refused")
			_, err = tx.DeploymentUpdate(ctx, d.ID, func(d *store.Deployment) error { d.Reason += ", third"; return nil })
			return err
		})
		requireOK(t, err, "transaction")
		got, err = b.store.DeploymentGetByID(b.ctx, d.ID)
		requireOK(t, err, "get")
		requireEqual(t, []any{got.Reason, got.Revision}, []any{"first, third", int64(2)}, "after the transaction")
	}},
	{"ConcurrentUpdatesSerialize", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, &DeploymentOpts{Clusters: []string{"a", "b"}})
		errs := parallel(func(int) error {
			_, err := b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
				n, _ := strconv.Atoi(d.Reason)
				d.Reason = strconv.Itoa(n + 1)
				d.Clusters[1].HelmRevision++
				return nil
			})
			return err
		})
		requireOK(t, errors.Join(errs...), "concurrent updates")
		got, err := b.store.DeploymentGetByID(b.ctx, d.ID)
		requireOK(t, err, "get")
		requireEqual(t, []any{got.Reason, got.Revision, got.Clusters[1].HelmRevision, got.Clusters[0].HelmRevision},
			[]any{strconv.Itoa(writers), int64(writers), writers, 0}, "counters after concurrent increments")
	}},
	{"CountActive", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, nil)
		statuses := []store.DeploymentStatus{
			store.DeploymentQueued, store.DeploymentWaitingApproval, store.DeploymentPlanning, store.DeploymentDeploying,
			store.DeploymentValidating, store.DeploymentCompleted, store.DeploymentRollingBack, store.DeploymentRolledBack,
			store.DeploymentFailed, store.DeploymentCancelled,
		}
		var active []string
		want := map[store.DeploymentStatus]int{}
		for i, s := range statuses {
			d := Deployment(b.ctx, t, b.store, &DeploymentOpts{Operator: op, Status: s, Clusters: []string{fmt.Sprint("c", i)},
				CreatedAt: b.now.Add(time.Duration(i) * time.Second)})
			requireEqual(t, activeOf(d), []bool{!s.Terminal()}, "cluster active when created "+string(s))
			if !s.Terminal() {
				active = append([]string{d.ID}, active...)
			}
			want[s]++
		}
		n, err := b.store.DeploymentCountActive(b.ctx)
		requireOK(t, err, "count active")
		requireEqual(t, n, len(active), "active (not terminal) deployments")
		requireEqual(t, n, 6, "active deployments")
		by, err := b.store.DeploymentCountByStatus(b.ctx)
		requireOK(t, err, "count by status")
		requireEqual(t, by, want, "by status")
		list, err := b.store.DeploymentList(b.ctx, &store.DeploymentListParams{Active: true})
		requireOK(t, err, "list active")
		requireEqual(t, names(list, func(d *store.Deployment) string { return d.ID }), active, "active list, newest first")
	}},
	{"ListPagesAndFilters", func(t *testing.T, b *testBundle) {
		x := Operator(b.ctx, t, b.store, nil)
		y := Operator(b.ctx, t, b.store, nil)
		var all, ofX, failedOfY []string
		byID := map[string]*store.Deployment{}
		for i := range 25 {
			op, status := x, store.DeploymentCompleted
			if i%3 == 0 {
				op = y
			}
			if i%2 == 0 {
				status = store.DeploymentFailed
			}
			// Pairs share a creation time: ties break by id.
			d := Deployment(b.ctx, t, b.store, &DeploymentOpts{Operator: op, Status: status,
				Clusters: []string{fmt.Sprint("a", i), fmt.Sprint("b", i)}, CreatedAt: b.now.Add(time.Duration(i/2) * time.Second)})
			byID[d.ID] = d
			all = append(all, d.ID)
			if op == x {
				ofX = append(ofX, d.ID)
			} else if status == store.DeploymentFailed {
				failedOfY = append(failedOfY, d.ID)
			}
		}
		newestFirst := func(ids []string) []string {
			out := slices.Clone(ids)
			slices.SortFunc(out, func(a, b string) int {
				if c := byID[b].CreatedAt.Compare(byID[a].CreatedAt); c != 0 {
					return c
				}
				return strings.Compare(b, a)
			})
			return out
		}
		list := func(p store.DeploymentListParams) []string {
			p.Limit = store.NormalizeLimit(p.Limit)
			var out []string
			for {
				page, err := b.store.DeploymentList(b.ctx, &p)
				requireOK(t, err, "list")
				for _, d := range page {
					requireEqual(t, d, byID[d.ID], "listed with its clusters")
					out = append(out, d.ID)
				}
				if len(page) < p.Limit {
					return out
				}
				p.Before = page[len(page)-1].ID
			}
		}
		requireEqual(t, list(store.DeploymentListParams{Limit: 4}), newestFirst(all), "all, pages of 4")
		requireEqual(t, list(store.DeploymentListParams{OperatorID: x.ID, Limit: 5}), newestFirst(ofX), "of X")
		requireEqual(t, list(store.DeploymentListParams{OperatorID: y.ID, Status: store.DeploymentFailed, Limit: 2}),
			newestFirst(failedOfY), "failed of Y")
		requireEqual(t, list(store.DeploymentListParams{Active: true, Limit: 3}), []string(nil), "none active")
		for _, p := range []store.DeploymentListParams{{OperatorID: "nope"}, {Before: "nope"}, {Before: uuid.NewString()}} {
			requireEqual(t, list(p), []string(nil), fmt.Sprintf("list %+v", p))
		}
	}},
	{"EventsAppendAndResume", func(t *testing.T, b *testBundle) {
		d := Deployment(b.ctx, t, b.store, nil)
		other := Deployment(b.ctx, t, b.store, nil)
		var want []*store.DeploymentEvent
		for i := range 7 {
			ev := &store.DeploymentEvent{DeploymentID: d.ID, At: b.now.Add(time.Duration(i) * time.Second),
				Type: "cluster.installing", Cluster: fmt.Sprint("c", i), Message: fmt.Sprint("step ", i)}
			if i%2 == 0 {
				ev.Details = json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))
			}
			got, err := b.store.DeploymentEventInsert(b.ctx, ev)
			requireOK(t, err, "insert")
			ev.ID = got.ID
			requireEqual(t, got, ev, "inserted")
			if len(want) > 0 && got.ID <= want[len(want)-1].ID {
				t.Fatalf("ids not increasing: %d after %d", got.ID, want[len(want)-1].ID)
			}
			want = append(want, ev)
			_, err = b.store.DeploymentEventInsert(b.ctx, &store.DeploymentEvent{DeploymentID: other.ID, Type: "status"})
			requireOK(t, err, "other's event")
		}
		_, err := b.store.DeploymentEventInsert(b.ctx, &store.DeploymentEvent{DeploymentID: d.ID})
		if err == nil {
			t.Fatal("event without a type: no error")
		}
		_, err = b.store.DeploymentEventInsert(b.ctx, &store.DeploymentEvent{DeploymentID: d.ID, Type: "x", Details: json.RawMessage("{")})
		if err == nil {
			t.Fatal("event with bad JSON details: no error")
		}
		read := func(p store.DeploymentEventListParams) []*store.DeploymentEvent {
			var out []*store.DeploymentEvent
			for {
				page, err := b.store.DeploymentEventList(b.ctx, &p)
				requireOK(t, err, "list")
				out = append(out, page...)
				if len(page) < p.Limit {
					return out
				}
				p.AfterID = page[len(page)-1].ID
			}
		}
		requireEqual(t, read(store.DeploymentEventListParams{DeploymentID: d.ID, Limit: 3}), want, "all, pages of 3")
		requireEqual(t, read(store.DeploymentEventListParams{DeploymentID: d.ID, AfterID: want[4].ID, Limit: 100}), want[5:], "resume after the 5th")

		// Concurrent appends: every one lands, with distinct ids, in id order.
		errs := parallel(func(i int) error {
			_, err := b.store.DeploymentEventInsert(b.ctx, &store.DeploymentEvent{DeploymentID: other.ID, Type: "status", Message: fmt.Sprint(i)})
			return err
		})
		requireOK(t, errors.Join(errs...), "concurrent appends")
		evs := read(store.DeploymentEventListParams{DeploymentID: other.ID, Limit: 10})
		requireEqual(t, len(evs), 7+writers, "the other's events")
		if !slices.IsSortedFunc(evs, func(a, b *store.DeploymentEvent) int { return int(a.ID - b.ID) }) {
			t.Fatal("events not in id order")
		}
	}},
}

// cloneForTest copies d and its clusters.
func cloneForTest(d *store.Deployment) *store.Deployment {
	c := *d
	c.Clusters = make([]*store.DeploymentCluster, len(d.Clusters))
	for i, dc := range d.Clusters {
		cc := *dc
		c.Clusters[i] = &cc
	}
	return &c
}
