//go:build e2e

package main_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/operator/shard"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// shardWorld is a control plane, a registry with one bundle tag, WerfBundles in namespaces of
// perNS, and operator processes each a shard (--shards) under the operator's RBAC identity.
type shardWorld struct {
	ctx        context.Context
	c          client.Client
	kubeconfig string
	bin        string
	// registry is the registry's host; repo the bundles' repository on it.
	registry string
	repo     string
	prefix   string
	flags    []string
	shards   map[string]*operatorproc.Process
	// unsharded is set when the processes run with --shards=1: no bundle gets a shard label.
	unsharded bool
	// jobUIDs is the UID of each bundle's first Job as first seen: a Job deleted and made again
	// under the same name would be a second run, which a count of Jobs does not show.
	jobUIDs map[string]types.UID
}

// harness is a client without a client-side limit for the test's own requests (they are not what
// is measured) and a kubeconfig of the operator's RBAC identity for the processes under test.
func harness(ctx context.Context, tb testing.TB, cp *testenv.Env) (client.Client, string) {
	tb.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		tb.Fatal(err)
	}
	kubeconfig, err := cp.InstallOperatorIdentity(ctx, filepath.Join(tb.TempDir(), "operator.kubeconfig"))
	if err != nil {
		tb.Fatal(err)
	}
	return c, kubeconfig
}

func newShardWorld(ctx context.Context, tb testing.TB, cp *testenv.Env, prefix string, flags ...string) *shardWorld {
	c, kubeconfig := harness(ctx, tb, cp)
	reg := registrytest.StartDistribution(tb)
	registrytest.PushBundle(tb, reg.Host, prefix+"/app", "1.0.0")
	return &shardWorld{ctx: ctx, c: c, kubeconfig: kubeconfig, bin: operatorproc.Binary(tb), registry: reg.Host, repo: reg.Repository(prefix + "/app"),
		prefix: prefix, flags: flags, shards: map[string]*operatorproc.Process{}, jobUIDs: map[string]types.UID{}}
}

// bundles creates n WerfBundles, perNS to a namespace, polling the registry once an hour (after
// the first poll, only a push makes them poll again while a test runs).
func (w *shardWorld) bundles(tb testing.TB, n, perNS int) {
	testenv.Parallel(tb, (n+perNS-1)/perNS, 16, func(i int) error {
		ns := fmt.Sprintf("%s-%d", w.prefix, i)
		if err := w.c.Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
		return w.c.Create(w.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: ns}})
	})
	testenv.Parallel(tb, n, 16, func(i int) error {
		return w.c.Create(w.ctx, &werfv1.WerfBundle{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: fmt.Sprintf("%s-%d", w.prefix, i/perNS)},
			Spec: werfv1.WerfBundleSpec{
				Registry: werfv1.RegistrySpec{URL: w.repo, Insecure: true, PollInterval: &metav1.Duration{Duration: time.Hour}},
				Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"},
			},
		})
	})
}

// start runs a shard named name; count is --shards; args are further flags of this shard alone.
func (w *shardWorld) start(tb testing.TB, name string, count int, args ...string) *operatorproc.Process {
	p := operatorproc.Start(tb, w.bin, operatorproc.Options{
		Name: name, Kubeconfig: w.kubeconfig,
		Args: append([]string{
			"--namespace=" + controlplane.OperatorNamespace, "--controllers=werfbundle",
			fmt.Sprintf("--shards=%d", count), "--shard-name=" + name,
			"--leader-election-lease-duration=" + leaseDuration.String(),
			"--leader-election-renew-deadline=" + renewDeadline.String(),
			"--leader-election-retry-period=" + retryPeriod.String(),
			"--webhook-cert-mirror=true", "--webhook-cert-dns-names=localhost",
		}, append(w.flags, args...)...),
	})
	w.shards[name] = p
	w.unsharded = count == 1
	return p
}

func (w *shardWorld) live() []string {
	var out []string
	for name, p := range w.shards {
		if p.Running() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// leader is the shard holding the leader-election Lease (the assigner).
func (w *shardWorld) leader(tb testing.TB) string {
	var name string
	testenv.Until(w.ctx, tb, "one shard leads", func() bool {
		for n, p := range w.shards {
			if v, err := p.MetricSum(w.ctx, "leader_election_master_status", map[string]string{"name": leaseName}); p.Running() && err == nil && v == 1 {
				name = n
				return true
			}
		}
		return false
	})
	return name
}

// state reads every bundle's shard and Jobs: settled is true when each bundle is on the shard
// rendezvous hashing gives it among the running shards and has its first Job, labelled for the
// same shard (the shard holding it has it in view); twice lists bundles with more than one Job.
func (w *shardWorld) state(n int) (settled bool, twice []string, err error) {
	// Metadata only: labels and UIDs are all it reads, and at 50,000 bundles a poll of whole
	// objects would be a load of its own on the API server under measure.
	bundles := metav1.PartialObjectMetadataList{}
	bundles.SetGroupVersionKind(werfv1.GroupVersion.WithKind("WerfBundleList"))
	if err := w.c.List(w.ctx, &bundles); err != nil {
		return false, nil, err
	}
	jobs := metav1.PartialObjectMetadataList{}
	jobs.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("JobList"))
	if err := w.c.List(w.ctx, &jobs, client.MatchingLabels{werfbundle.LabelComponent: werfbundle.ComponentValue}); err != nil {
		return false, nil, err
	}
	// Only this world's namespaces: other tests of the package share the control plane and leave
	// bundles behind, which these shards also take.
	bundles.Items = slices.DeleteFunc(bundles.Items, func(b metav1.PartialObjectMetadata) bool {
		return !strings.HasPrefix(b.Namespace, w.prefix+"-")
	})
	byBundle := map[string][]metav1.PartialObjectMetadata{}
	for _, j := range jobs.Items {
		k := j.Labels[werfbundle.LabelBundleNamespace] + "/" + j.Labels[werfbundle.LabelBundleName]
		byBundle[k] = append(byBundle[k], j)
	}
	live := w.live()
	settled = len(bundles.Items) == n
	for _, b := range bundles.Items {
		k := b.Namespace + "/" + b.Name
		js := byBundle[k]
		if len(js) > 1 {
			twice = append(twice, k)
		}
		if len(js) == 1 {
			if first, ok := w.jobUIDs[k]; !ok {
				w.jobUIDs[k] = js[0].UID
			} else if first != js[0].UID {
				twice = append(twice, k+" (its Job was made again)")
			}
		}
		on, want := b.Labels[werfbundle.ShardLabel], shard.Pick(shard.Key(&b), live)
		if w.unsharded {
			want = ""
		}
		if on != want || len(js) != 1 || js[0].Labels[werfbundle.ShardLabel] != on {
			settled = false
		}
	}
	return settled, twice, nil
}

// settle waits until state is settled, polling every period, failing at once on a bundle with a
// second Job or a shard that exited on its own, and returns how long it took.
func (w *shardWorld) settle(tb testing.TB, n int, what string, period time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	for {
		for name, p := range w.shards {
			if !p.Running() && p.Err() != nil && !isKilled(p.Err()) {
				tb.Fatalf("shard %s exited: %v", name, p.Err())
			}
		}
		settled, twice, err := w.state(n)
		if len(twice) > 0 {
			tb.Fatalf("bundles with a second Job: %v", twice)
		}
		if settled {
			return time.Since(start)
		}
		select {
		case <-w.ctx.Done():
			tb.Fatalf("timed out waiting until %s (last error: %v)", what, err)
		case <-time.After(period):
		}
	}
}

// adopted sums slipway_werfbundle_shard_jobs_adopted_total{path} over the running shards.
func (w *shardWorld) adopted(tb testing.TB, path string) float64 {
	sum := 0.0
	for name, p := range w.shards {
		if !p.Running() {
			continue
		}
		v, err := p.MetricSum(w.ctx, "slipway_werfbundle_shard_jobs_adopted_total", map[string]string{"path": path})
		if err != nil {
			tb.Fatalf("scraping %s: %v", name, err)
		}
		sum += v
	}
	tb.Logf("Jobs adopted by the running shards through %s: %.0f", path, sum)
	return sum
}

func isKilled(err error) bool {
	return err != nil && (err.Error() == "signal: killed" || err.Error() == "signal: terminated")
}

// TestOperator_ShardsHandOverWithoutASecondJob runs the operator binary as three shards
// (--shards=3) on a light control plane (nothing runs the Jobs: every first Job stays active,
// the case where a second Job would run beside it) with 60 WerfBundles in 12 namespaces. Every
// bundle gets its first Job on the shard that hashing gives it; then the leader (shard and
// assigner) is SIGKILLed, a shard joins, and every shard is replaced in a rolling restart (a new
// shard started, the old one stopped). After each change every bundle is on its new shard with
// its one Job, now labelled for that shard (found by the new shard, not made again), and no bundle
// ever has a second Job.
func TestOperator_ShardsHandOverWithoutASecondJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const n = 60
	// The status delay outlasts the test: no status names a Job until a shard stops cleanly, so
	// the handovers after the SIGKILL go through the create that meets AlreadyExists.
	w := newShardWorld(ctx, t, env, "shards", "--werfbundle-status-delay=1h")
	w.bundles(t, n, 5)
	for _, name := range []string{"s0", "s1", "s2"} {
		w.start(t, name, 3)
	}
	t.Logf("first Jobs on 3 shards in %s", w.settle(t, n, "every bundle has its first Job on its shard", 250*time.Millisecond))

	leader := w.leader(t)
	if err := w.shards[leader].Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILLed the leader %s: its bundles on the others in %s (Lease %s)", leader,
		w.settle(t, n, "the killed shard's bundles are on the others with their Jobs", 250*time.Millisecond), leaseDuration)
	// The killed shard wrote no status (the status delay outlasts the test until a clean stop):
	// its successors found its Jobs by creating them again and meeting AlreadyExists.
	if got := w.adopted(t, "create"); got == 0 {
		t.Errorf("no shard adopted a Job through AlreadyExists after the kill")
	}

	w.start(t, "s3", 3)
	t.Logf("s3 joined: its share moved in %s", w.settle(t, n, "the joining shard holds its share with its Jobs", 250*time.Millisecond))

	for i, old := range w.live() {
		next := fmt.Sprintf("r%d", i)
		begin := time.Now()
		w.start(t, next, 3).WaitReady(ctx, t)
		ready := time.Now()
		if err := w.shards[old].Stop(ctx); err != nil {
			t.Fatalf("stopping %s: %v", old, err)
		}
		t.Logf("%s ready in %s, %s stopped in %s", next, ready.Sub(begin), old, time.Since(ready))
		t.Logf("rolled %s to %s in %s", old, next, w.settle(t, n, fmt.Sprintf("the bundles of %s are on their shards", old), 250*time.Millisecond))
	}
	// A clean stop writes the statuses it deferred: the shards that took over after the roll
	// found the Jobs those statuses name in the API server.
	if got := w.adopted(t, "list"); got == 0 {
		t.Errorf("no shard adopted a Job its bundle's status named after the rolling restart")
	}

	// A bundle deleted is still cleaned up by its shard (a move is checked against the API server,
	// a deletion is not mistaken for one): its Job goes (no garbage collector runs here).
	gone := &werfv1.WerfBundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shards-0", Name: "app-0"}}
	if err := w.c.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	testenv.Until(ctx, t, "the deleted bundle's Job is deleted", func() bool {
		var jobs batchv1.JobList
		err := w.c.List(ctx, &jobs, client.MatchingLabels{werfbundle.LabelBundleNamespace: "shards-0", werfbundle.LabelBundleName: "app-0"})
		return err == nil && len(jobs.Items) == 0
	})
}
