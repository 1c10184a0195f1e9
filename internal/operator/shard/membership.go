package shard

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Membership holds one shard's membership Lease: created at start, renewed every Renew, deleted
// on a clean stop so the shard's objects move at once. A shard killed outright leaves its Lease to
// expire: the assigner moves its objects once it has seen no renewal for the Lease's duration.
type Membership struct {
	// Client reads and writes the Lease; it must not be a cached client (the Lease is not cached).
	Client    client.Client
	Namespace string
	Ring      string
	Member    string
	// Duration is the Lease's duration; Renew how often it is renewed (Duration/3 when zero).
	Duration time.Duration
	Renew    time.Duration
}

// LeaseName is the membership Lease of member in ring.
func LeaseName(ring, member string) string { return ring + "-shard-" + member }

// NeedLeaderElection implements manager.LeaderElectionRunnable: every shard is a member.
func (m *Membership) NeedLeaderElection() bool { return false }

// Start renews the Lease until ctx ends, then deletes it. A shard that could not renew for a whole
// Duration may already have lost its objects to others: Start returns an error, which stops the
// manager, as a lost leader-election Lease does.
func (m *Membership) Start(ctx context.Context) error {
	renew := m.Renew
	if renew <= 0 {
		renew = m.Duration / 3
	}
	log := ctrl.LoggerFrom(ctx).WithName("shard").WithValues("ring", m.Ring, "member", m.Member)
	last := time.Now()
	t := time.NewTicker(renew)
	defer t.Stop()
	for {
		err := m.renew(ctx)
		switch {
		case err == nil:
			last = time.Now()
		case ctx.Err() == nil && time.Since(last) > m.Duration:
			return fmt.Errorf("membership Lease %s/%s not renewed for %s: %w", m.Namespace, LeaseName(m.Ring, m.Member), m.Duration, err)
		case ctx.Err() == nil:
			log.Error(err, "Failed to renew the membership Lease")
		}
		select {
		case <-ctx.Done():
			return m.release()
		case <-t.C:
		}
	}
}

func (m *Membership) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: m.Namespace, Name: LeaseName(m.Ring, m.Member)}
	err := m.Client.Get(ctx, key, lease)
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{RingLabel: m.Ring}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(m.Member), LeaseDurationSeconds: ptr.To(int32(m.Duration.Seconds())),
				AcquireTime: &now, RenewTime: &now,
			},
		}
		return m.Client.Create(ctx, lease)
	}
	if err != nil {
		return err
	}
	lease.Spec.HolderIdentity = ptr.To(m.Member)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(m.Duration.Seconds()))
	lease.Spec.RenewTime = &now
	return m.Client.Update(ctx, lease)
}

// release deletes the Lease with a context of its own (the manager's has ended), bounded.
func (m *Membership) release() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: LeaseName(m.Ring, m.Member)}}
	return client.IgnoreNotFound(m.Client.Delete(ctx, lease))
}
