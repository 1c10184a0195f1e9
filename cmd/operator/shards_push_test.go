//go:build e2e

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestOperator_ShardsPushReachesEveryShard runs the operator binary as three shards, each serving
// the push webhook on an address of its own (in a cluster the receiver's Service sends a push to
// any one shard's pod), with 30 WerfBundles of one repository in 10 namespaces that poll once an
// hour. Once every bundle is on its shard and has seen tag 1.0.0, the registry gets 1.1.0 and one
// shard alone is told: its answer counts every bundle, whichever shard holds it, and every bundle
// polls and sees 1.1.0 at once, not an hour later. (Nothing runs the Jobs here: the first Job of
// each bundle stays active, so 1.1.0 waits for it; the poll is what the push is for.)
func TestOperator_ShardsPushReachesEveryShard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n = 30
	secret := filepath.Join(t.TempDir(), "receiver-secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := newShardWorld(ctx, t, env, "push", "--werfbundle-webhook-secret-file="+secret)
	w.bundles(t, n, 3)
	hooks := map[string]string{}
	for _, name := range []string{"p0", "p1", "p2"} {
		hooks[name] = testenv.FreeAddr(t)
		w.start(t, name, 3, "--werfbundle-webhook-bind-address="+hooks[name])
	}
	w.settle(t, n, "every bundle has its first Job on its shard", 250*time.Millisecond)
	on := w.latestTags(ctx, t, n, "1.0.0")
	if on["p0"] == n {
		t.Fatalf("every bundle is on p0 (%v): the push would not have to reach another shard", on)
	}
	t.Logf("bundles by shard: %v", on)

	registrytest.PushBundle(t, w.registry, "push/app", "1.1.0")
	if got := push(ctx, t, hooks["p0"], "example.com/nobody/watches", "1.0.0"); got != 0 {
		t.Errorf("a push of a repository no bundle watches was recorded on %d bundles", got)
	}
	begin := time.Now()
	if got := push(ctx, t, hooks["p0"], w.repo, "1.1.0"); got != n {
		t.Errorf("the push told to p0 was recorded on %d bundles, want all %d on the three shards", got, n)
	}
	w.latestTags(ctx, t, n, "1.1.0")
	t.Logf("every bundle on every shard polled and saw 1.1.0 %s after the push to p0", time.Since(begin))
}

// push sends a generic push notification to the receiver at addr and returns the number of
// bundles it says the push was recorded on.
func push(ctx context.Context, t *testing.T, addr, repository, tag string) int {
	t.Helper()
	body := fmt.Sprintf(`{"repository": %q, "tag": %q}`, repository, tag)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/hook", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var answer struct {
		Events    int `json:"events"`
		Triggered int `json:"triggered"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("push of %s:%s: %s (%v)", repository, tag, resp.Status, err)
	}
	return answer.Triggered
}

// latestTags waits until each of the n bundles of this world has polled and seen tag as the
// latest, with its status naming its repository as the push webhook selects it and every push
// recorded on it handled, and returns how many bundles each shard holds.
func (w *shardWorld) latestTags(ctx context.Context, t *testing.T, n int, tag string) map[string]int {
	t.Helper()
	want := receiver.NormalizeRepository(w.repo)
	var on map[string]int
	testenv.Until(ctx, t, fmt.Sprintf("every bundle has seen tag %s", tag), func() bool {
		var list werfv1.WerfBundleList
		if err := w.c.List(ctx, &list); err != nil {
			return false
		}
		on = map[string]int{}
		for _, b := range list.Items {
			if !strings.HasPrefix(b.Namespace, w.prefix+"-") {
				continue
			}
			st := b.Status
			if st.Registry == nil || st.Registry.LatestTag != tag || st.Repository != want ||
				st.LastHandledPush != b.Annotations[werfv1.PushReceivedAnnotation] {
				return false
			}
			on[b.Labels[werfbundle.ShardLabel]]++
		}
		return len(on) > 0 && sum(on) == n
	})
	return on
}

func sum(m map[string]int) int {
	total := 0
	for _, v := range m {
		total += v
	}
	return total
}
