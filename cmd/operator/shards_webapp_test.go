//go:build e2e

package main_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/operator/shard"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// TestOperator_WebAppShardsHandOverWithoutARecreate runs the operator binary as three WebApp
// shards (--controllers=webapp --shards=3) on a light control plane with 30 WebApps in 6
// namespaces. Every WebApp gets its Deployment and Service on the shard hashing gives it, labelled
// for that shard; then the leader is SIGKILLed and a shard joins. After each change every WebApp
// is on its new shard and its Deployment and Service carry the new shard's label (the new shard
// found them), and no Deployment or Service was ever made again (same UID) nor its Deployment's
// spec changed (same generation: a move rolls no pod).
func TestOperator_WebAppShardsHandOverWithoutARecreate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, kubeconfig := harness(ctx, t, env)
	const n, perNS = 30, 5
	testenv.Parallel(t, n/perNS, 8, func(i int) error {
		return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("webshards-%d", i)}})
	})
	testenv.Parallel(t, n, 8, func(i int) error {
		return c.Create(ctx, &webappv1.WebApp{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: fmt.Sprintf("webshards-%d", i/perNS)},
			Spec:       webappv1.WebAppSpec{Image: "nginx:1.25", Replicas: ptr.To[int32](1), Port: 80},
		})
	})
	shards := map[string]*operatorproc.Process{}
	start := func(name string) {
		shards[name] = operatorproc.Start(t, operatorproc.Binary(t), operatorproc.Options{
			Name: name, Kubeconfig: kubeconfig,
			Args: []string{
				"--namespace=" + controlplane.OperatorNamespace, "--controllers=webapp", "--shards=3", "--shard-name=" + name,
				"--leader-election-lease-duration=" + leaseDuration.String(),
				"--leader-election-renew-deadline=" + renewDeadline.String(),
				"--leader-election-retry-period=" + retryPeriod.String(),
				"--webhook-cert-mirror=true", "--webhook-cert-dns-names=localhost",
			},
		})
	}
	first := map[types.UID]int64{} // each Deployment's and Service's UID → the Deployment's generation (0: a Service)
	settle := func(what string) time.Duration {
		begin := time.Now()
		testenv.Eventually(ctx, t, what, func() (bool, error) {
			var live []string
			for name, p := range shards {
				if p.Running() {
					live = append(live, name)
				}
			}
			slices.Sort(live)
			var apps webappv1.WebAppList
			var deps appsv1.DeploymentList
			var svcs corev1.ServiceList
			for _, l := range []client.ObjectList{&apps, &deps, &svcs} {
				if err := c.List(ctx, l); err != nil {
					return false, err
				}
			}
			// Only this test's namespaces: other tests of the package share the control plane and
			// leave WebApps behind, which these shards also take.
			apps.Items = slices.DeleteFunc(apps.Items, func(a webappv1.WebApp) bool { return !inWebShards(a.Namespace) })
			owned := map[string][]client.Object{}
			for i := range deps.Items {
				owned[deps.Items[i].Namespace+"/"+deps.Items[i].Name] = append(owned[deps.Items[i].Namespace+"/"+deps.Items[i].Name], &deps.Items[i])
			}
			for i := range svcs.Items {
				owned[svcs.Items[i].Namespace+"/"+svcs.Items[i].Name] = append(owned[svcs.Items[i].Namespace+"/"+svcs.Items[i].Name], &svcs.Items[i])
			}
			if len(apps.Items) != n {
				return false, fmt.Errorf("%d WebApps", len(apps.Items))
			}
			for _, a := range apps.Items {
				on, want := a.Labels[webappv1.ShardLabel], shard.Pick(shard.Key(&a), live)
				objs := owned[a.Namespace+"/"+a.Name]
				if on != want || len(objs) != 2 {
					return false, fmt.Errorf("WebApp %s/%s on %q (want %q) with %d objects", a.Namespace, a.Name, on, want, len(objs))
				}
				for _, o := range objs {
					if o.GetLabels()[webappv1.ShardLabel] != on {
						return false, fmt.Errorf("%s/%s labelled %q, its WebApp is on %q", a.Namespace, o.GetName(), o.GetLabels()[webappv1.ShardLabel], on)
					}
				}
			}
			return true, nil
		})
		return time.Since(begin)
	}
	check := func(when string) {
		var deps appsv1.DeploymentList
		var svcs corev1.ServiceList
		if err := c.List(ctx, &deps); err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, &svcs); err != nil {
			t.Fatal(err)
		}
		seen := map[types.UID]int64{}
		for _, d := range deps.Items {
			if inWebShards(d.Namespace) {
				seen[d.UID] = d.Generation
			}
		}
		for _, s := range svcs.Items {
			if inWebShards(s.Namespace) && s.Labels[webappv1.ShardLabel] != "" {
				seen[s.UID] = 0
			}
		}
		if len(first) == 0 {
			for k, v := range seen {
				first[k] = v
			}
			return
		}
		for uid, gen := range first {
			if g, ok := seen[uid]; !ok || g != gen {
				t.Errorf("%s: object %s gone or its Deployment's generation moved from %d to %d (present %t)", when, uid, gen, g, ok)
			}
		}
		if len(seen) != len(first) {
			t.Errorf("%s: %d Deployments and Services, first %d: one was made again", when, len(seen), len(first))
		}
	}
	for _, name := range []string{"w0", "w1", "w2"} {
		start(name)
	}
	t.Logf("Deployments and Services on 3 shards in %s", settle("every WebApp's objects are on its shard"))
	check("first")
	var leader string
	testenv.Until(ctx, t, "one shard leads", func() bool {
		for name, p := range shards {
			if v, err := p.MetricSum(ctx, "leader_election_master_status", map[string]string{"name": leaseName}); err == nil && v == 1 {
				leader = name
				return true
			}
		}
		return false
	})
	if err := shards[leader].Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILLed the leader %s: its WebApps on the others in %s (Lease %s)", leader, settle("the killed shard's WebApps are on the others"), leaseDuration)
	check("after the kill")
	start("w3")
	t.Logf("w3 joined: its share moved in %s", settle("the joining shard holds its share"))
	check("after the join")
}

// inWebShards is whether ns is one of TestOperator_WebAppShardsHandOverWithoutARecreate's namespaces.
func inWebShards(ns string) bool { return strings.HasPrefix(ns, "webshards-") }
