// Package storetest is the store's conformance suite: every engine runs Exercise (and
// ExerciseSchema) from its own tests, so PostgreSQL and SQLite behave alike: CRUD of every
// entity, ErrNotFound / ErrAlreadyExists, pagination and filters, transactions, concurrent
// writers, the rollout engine's claims, admission, leases and health records, and the
// schema-version refusal.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// testBundle is what every case starts with.
type testBundle struct {
	ctx   context.Context
	store store.Store
	now   time.Time
}

// Exercise runs the conformance suite. newStore returns a migrated store on a fresh, empty
// database, closed when t ends; cases run in parallel, each on its own store.
func Exercise(t *testing.T, newStore func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		return &testBundle{ctx: t.Context(), store: newStore(t), now: time.Now().UTC().Truncate(time.Microsecond)}
	}
	groups := []struct {
		name  string
		cases []testCase
	}{
		{"Cluster", clusterCases},
		{"Operator", operatorCases},
		{"CRD", crdCases},
		{"CRDHistory", crdHistoryCases},
		{"Audit", auditCases},
		{"Tx", txCases},
		{"Concurrent", concurrentCases},
		{"Deployment", deploymentCases},
		{"Approval", approvalCases},
		{"EngineFields", engineFieldCases},
		{"Claim", claimCases},
		{"Admit", admitCases},
		{"LiveRelease", liveReleaseCases},
		{"OperatorHealth", operatorHealthCases},
		{"Lease", leaseCases},
		{"Lifecycle", lifecycleCases},
		{"Notification", notificationCases},
		{"OperatorConfig", operatorConfigCases},
		{"LoginTicket", loginTicketCases},
		{"RevokedToken", revokedTokenCases},
		{"OperatorBaseline", operatorBaselineCases},
		{"Analysis", analysisCases},
	}
	t.Run("Engine", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		if e := b.store.Engine(); e != "postgres" && e != "sqlite" {
			t.Errorf("Engine() = %q, want postgres or sqlite", e)
		}
		if err := b.store.Ping(b.ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, setup(t))
				})
			}
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, b *testBundle)
}

// ClusterOpts are the factory's optional fields; zero values get defaults.
type ClusterOpts struct {
	Name        string
	Environment store.Environment
	Health      store.Health
}

// Cluster creates a cluster with a fresh id and dummy ciphertexts.
func Cluster(ctx context.Context, tb testing.TB, e store.Executor, o *ClusterOpts) *store.Cluster {
	tb.Helper()
	if o == nil {
		o = &ClusterOpts{}
	}
	if o.Name == "" {
		o.Name = "cluster-" + uuid.NewString()[:8]
	}
	if o.Environment == "" {
		o.Environment = store.EnvironmentDev
	}
	c, err := e.ClusterCreate(ctx, &store.ClusterCreateParams{
		ID: uuid.NewString(), Name: o.Name, Environment: o.Environment, KubernetesVersion: "v1.37.1",
		Health: o.Health, KubeconfigCiphertext: []byte("sealed:" + o.Name), KeyID: "k1", Now: time.Now(),
	})
	if err != nil {
		tb.Fatalf("create cluster %s: %v", o.Name, err)
	}
	return c
}

// OperatorOpts are the factory's optional fields.
type OperatorOpts struct {
	Name      string
	Namespace string
}

// Operator creates an operator with a fresh id.
func Operator(ctx context.Context, tb testing.TB, e store.Executor, o *OperatorOpts) *store.Operator {
	tb.Helper()
	if o == nil {
		o = &OperatorOpts{}
	}
	if o.Name == "" {
		o.Name = "operator-" + uuid.NewString()[:8]
	}
	if o.Namespace == "" {
		o.Namespace = "operators"
	}
	op, err := e.OperatorCreate(ctx, &store.OperatorCreateParams{
		ID: uuid.NewString(), Name: o.Name, Namespace: o.Namespace,
		ChartRepository: "oci://registry.example/charts", ChartName: o.Name, Now: time.Now(),
	})
	if err != nil {
		tb.Fatalf("create operator %s: %v", o.Name, err)
	}
	return op
}

// requireErr fails unless err is target (errors.Is).
func requireErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

// requireOK fails on err.
func requireOK(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// requireEqual fails with a diff unless got equals want.
func requireEqual(t *testing.T, got, want any, what string) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s: (-want +got)\n%s", what, d)
	}
}

func names[T any](xs []T, name func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return out
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

func timePtr(t time.Time) *time.Time { return &t }
