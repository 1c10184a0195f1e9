package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// admit runs DeploymentAdmit with limit at now.
func admit(t *testing.T, b *testBundle, limit int, now time.Time) *store.DeploymentAdmitResult {
	t.Helper()
	res, err := b.store.DeploymentAdmit(b.ctx, &store.DeploymentAdmitParams{Limit: limit, Now: now})
	requireOK(t, err, "admit")
	return res
}

// setStatus moves d to status.
func setStatus(t *testing.T, b *testBundle, d *store.Deployment, status store.DeploymentStatus) {
	t.Helper()
	_, err := b.store.DeploymentUpdate(b.ctx, d.ID, func(d *store.Deployment) error {
		d.Status = status
		return nil
	})
	requireOK(t, err, "set status "+string(status))
}

// queued creates n Queued deployments created one second apart from first (each of a new operator
// unless op is given).
func queued(t *testing.T, b *testBundle, op *store.Operator, first time.Time, n int) []*store.Deployment {
	t.Helper()
	out := make([]*store.Deployment, n)
	for i := range out {
		out[i] = Deployment(b.ctx, t, b.store, &DeploymentOpts{Operator: op, Status: store.DeploymentQueued,
			CreatedAt: first.Add(time.Duration(i) * time.Second)})
	}
	return out
}

var admitCases = []testCase{
	{"UpToTheLimitOldestFirst", func(t *testing.T, b *testBundle) {
		// Two running; WaitingApproval and the terminal ones do not count.
		Deployment(b.ctx, t, b.store, &DeploymentOpts{Status: store.DeploymentPlanning})
		deploying := Deployment(b.ctx, t, b.store, &DeploymentOpts{Status: store.DeploymentDeploying})
		Deployment(b.ctx, t, b.store, &DeploymentOpts{Status: store.DeploymentWaitingApproval})
		Deployment(b.ctx, t, b.store, &DeploymentOpts{Status: store.DeploymentCompleted})
		q := queued(t, b, nil, b.now.Add(-time.Hour), 4)

		at := b.now.Add(time.Second)
		requireEqual(t, admit(t, b, 3, at), &store.DeploymentAdmitResult{Admitted: []string{q[0].ID}, Running: 3, Queued: 3}, "one slot")
		got, err := b.store.DeploymentGetByID(b.ctx, q[0].ID)
		requireOK(t, err, "get")
		want := cloneForTest(q[0])
		want.Status, want.NextRunAt, want.UpdatedAt, want.Revision = store.DeploymentPlanning, &at, at, 1
		requireEqual(t, got, want, "admitted: Planning, due now")

		requireEqual(t, admit(t, b, 3, at), &store.DeploymentAdmitResult{Admitted: []string{}, Running: 3, Queued: 3}, "full")
		setStatus(t, b, deploying, store.DeploymentValidating)
		requireEqual(t, admit(t, b, 3, at).Admitted, []string{}, "Validating is running")
		setStatus(t, b, deploying, store.DeploymentCompleted)
		requireEqual(t, admit(t, b, 5, at), &store.DeploymentAdmitResult{Admitted: []string{q[1].ID, q[2].ID, q[3].ID}, Running: 5, Queued: 0},
			"three slots, oldest first")
		requireEqual(t, admit(t, b, 0, at), &store.DeploymentAdmitResult{Admitted: []string{}, Running: 5, Queued: 0}, "a limit of 0")
	}},
	{"SkipsOperatorsRollingBack", func(t *testing.T, b *testBundle) {
		x := Operator(b.ctx, t, b.store, nil)
		rolling := Deployment(b.ctx, t, b.store, &DeploymentOpts{Operator: x, Status: store.DeploymentRollingBack})
		qx := queued(t, b, x, b.now.Add(-time.Hour), 1)[0]
		qy := queued(t, b, nil, b.now.Add(-time.Minute), 1)[0]
		requireEqual(t, admit(t, b, 10, b.now), &store.DeploymentAdmitResult{Admitted: []string{qy.ID}, Running: 2, Queued: 1},
			"the older one waits for its operator's rollback")
		setStatus(t, b, rolling, store.DeploymentRolledBack)
		requireEqual(t, admit(t, b, 10, b.now), &store.DeploymentAdmitResult{Admitted: []string{qx.ID}, Running: 2, Queued: 0}, "after the rollback")
	}},
	{"ConcurrentAdmittersHoldTheLimit", func(t *testing.T, b *testBundle) {
		const limit = 5
		Deployment(b.ctx, t, b.store, &DeploymentOpts{Status: store.DeploymentDeploying})
		q := queued(t, b, nil, b.now.Add(-time.Hour), 30)
		results := make([]*store.DeploymentAdmitResult, writers)
		errs := parallel(func(i int) error {
			var err error
			results[i], err = b.store.DeploymentAdmit(b.ctx, &store.DeploymentAdmitParams{Limit: limit, Now: b.now})
			return err
		})
		var admitted []string
		for i, err := range errs {
			requireOK(t, err, "admit")
			admitted = append(admitted, results[i].Admitted...)
			if results[i].Running != limit {
				t.Errorf("admitter %d saw %d running after its admissions, want %d", i, results[i].Running, limit)
			}
		}
		slices.Sort(admitted)
		want := deploymentIDs(q[:limit-1])
		slices.Sort(want)
		requireEqual(t, admitted, want, "admitted once each, the oldest, up to the limit")
		counts, err := b.store.DeploymentCountByStatus(b.ctx)
		requireOK(t, err, "count")
		requireEqual(t, counts, map[store.DeploymentStatus]int{store.DeploymentDeploying: 1, store.DeploymentPlanning: limit - 1,
			store.DeploymentQueued: 30 - (limit - 1)}, "by status")
	}},
	{"CancelledNotAdmitted", func(t *testing.T, b *testBundle) {
		// Admission takes Queued rows only: a cancelled one stays cancelled and not due.
		q := queued(t, b, nil, b.now.Add(-time.Hour), 2)
		setStatus(t, b, q[0], store.DeploymentCancelled)
		requireEqual(t, admit(t, b, 10, b.now), &store.DeploymentAdmitResult{Admitted: []string{q[1].ID}, Running: 1, Queued: 0}, "the live one")
		got, err := b.store.DeploymentGetByID(b.ctx, q[0].ID)
		requireOK(t, err, "get")
		requireEqual(t, []any{got.Status, got.NextRunAt == nil}, []any{store.DeploymentCancelled, true}, "the cancelled one")
	}},
}
