package catalyst

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/gitsource"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// Environments at the same commit share one fetch, also when they ask at the same time; other
// credentials do not get another's snapshot; failures are not kept.
func TestSnapshots_ShareOneFetchPerCommit(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("bot", "pw"))
	repo := srv.NewRepository(t, "org/app")
	sha, err := repo.Commit("manifests", gittest.Manifests("deploy"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newSnapshots(2)
	o := gitsource.Options{URL: repo.URL, Branch: "main", Commit: sha, Credentials: &gitsource.Credentials{Username: "bot", Password: "pw"}}

	var wg sync.WaitGroup
	fetched := make(chan bool, 8)
	for range 8 {
		wg.Go(func() {
			snap, cached, err := c.Get(ctx, o)
			if err != nil || snap.Commit() != sha {
				t.Errorf("Get: %v", err)
			}
			fetched <- !cached
		})
	}
	wg.Wait()
	close(fetched)
	n := 0
	for f := range fetched {
		if f {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d fetches for one commit, want 1", n)
	}

	other := o
	other.Credentials = &gitsource.Credentials{Username: "bot", Password: "wrong"}
	if _, cached, err := c.Get(ctx, other); err == nil || cached {
		t.Errorf("other credentials: cached %t, err %v; want a fetch of their own, refused", cached, err)
	}
	if len(c.entries) != 1 {
		t.Errorf("%d entries, want the failure dropped", len(c.entries))
	}
}

// A transient deploy failure backs off and then may be retried; a stalled one waits for a new
// revision.
func TestDeployFailures(t *testing.T) {
	var m deployFailures
	key := types.NamespacedName{Namespace: "ns", Name: "e"}
	now := time.Now()
	transient := &failure{reason: catalystv1alpha1.DeploymentFailedReason, message: "timeout"}
	wait := m.deployFailed(key, "r1", transient, now)
	if wait < retryBase*9/10 {
		t.Errorf("first wait %s", wait)
	}
	if f, w := m.deployBlocked(key, "r1", now.Add(time.Second)); f == nil || w <= 0 || f.message != transient.message {
		t.Errorf("blocked = %+v, %s", f, w)
	}
	if f, _ := m.deployBlocked(key, "r1", now.Add(wait+time.Millisecond)); f != nil {
		t.Error("still blocked after the backoff")
	}
	if f, _ := m.deployBlocked(key, "r2", now); f != nil {
		t.Error("a new revision is blocked")
	}
	m.deployFailed(key, "r2", &failure{reason: catalystv1alpha1.RenderFailedReason, stalled: true}, now)
	if f, w := m.deployBlocked(key, "r2", now.Add(time.Hour)); f == nil || w != 0 {
		t.Errorf("a stalled failure is retried: %+v", f)
	}
	if w := m.deployFailed(key, "r3", transient, now); w <= 0 {
		t.Error("no backoff")
	}
}
