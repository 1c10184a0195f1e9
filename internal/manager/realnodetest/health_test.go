//go:build e2e

package realnodetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

const (
	operatorName = "widget-operator"
	namespace    = "op-widget-operator"
	clusterName  = "real-1"
	goodVersion  = "1.0.0"
)

// The test operator's versions: a good one and three broken the way operators break in a cluster.
var versions = []version{
	{Version: goodVersion, Mode: "ok"},
	{Version: "1.0.1", Mode: "crash"},
	{Version: "1.0.2", Mode: "unready"},
	{Version: "1.0.3", Mode: "ok", WebhookSelectsNothing: true},
	{Version: "1.0.4", Mode: "crash", FailAfter: "0s"},
	{Version: "1.0.5", Mode: "crash", FailAfter: "10s"},
	{Version: greenVersion, Mode: "ok"},
}

// TestHealthChecks_RealPodsJudgedAndRolledBack needs real containers: what the manager's checks
// judge is what a kubelet reports of a real process (a container that exits and is restarted
// with back-off into CrashLoopBackOff, a readiness probe that fails over HTTP, a Service whose
// endpoints follow real pods' readiness) and what the API server reaches at real pod addresses
// (the webhook through its Service, the metrics through the Service proxy); kwok only sets the
// statuses it is told to. The good version is deployed and judged Healthy with its pod Ready on
// the real node, its webhook answering and the Widget it reconciled Ready; then each broken
// version is deployed by a Rolling deployment with health checks, judged Unhealthy by the part
// that names its fault, and rolled back to the good version, whose pod runs again.
func TestHealthChecks_RealPodsJudgedAndRolledBack(t *testing.T) {
	w := realNode(t)
	t.Logf("control plane with a real node up, test operator built and imported in %s", w.started.Round(time.Millisecond))
	annotatedNamespace(t, w)
	env := w.env(t, operatorName, namespace)
	m := newManager(t, w, clusterName)
	var charts []charttest.ChartFiles
	for _, v := range versions {
		charts = append(charts, operatorChart(v, env))
	}
	m.operator(operatorName, namespace, charts...)

	ok := t.Run("GoodVersionHealthy", func(t *testing.T) { goodVersionHealthy(t, w, m) })
	if !ok {
		t.Fatal("the good version is not running: the broken ones would have nothing to roll back to")
	}
	webhookService := "service " + namespace + "/" + operatorName + "-" + chartName + "-webhook"
	for _, tc := range []brokenCase{{
		// Its container exits 1 after its start, is restarted and exits again: the kubelet
		// reports it terminated, then backs off (CrashLoopBackOff); the exit code and the
		// log's last line (the termination message) say why.
		name: "CrashLoopRolledBack", version: "1.0.1", part: health.PartPods,
		says: []string{"is not Running and Ready", "container manager", "exit code 1", crashLine},
	}, {
		// Its readiness probe fails over HTTP: the pod runs, not Ready, and the kubelet's probe
		// event says how.
		name: "ReadinessFailsRolledBack", version: "1.0.2", part: health.PartPods,
		says: []string{"container manager running, not ready", "Readiness probe failed: HTTP probe failed with statuscode: 500"},
	}, {
		// Its pods are fine, but the webhook's Service selects none of them.
		name: "WebhookWithoutEndpointRolledBack", version: "1.0.3", part: health.PartWebhooks,
		says: []string{webhookService + " has no ready endpoint: its selector", "matches no pod"},
	}, {
		// It exits at once, every time: its pod is never Ready, the install's readiness wait
		// fails naming the kubelet's CrashLoopBackOff, and the failed install is rolled back
		// (no health check needed). Meanwhile a health check of the release sees the
		// CrashLoopBackOff too.
		name: "CrashAtStartInstallFails", version: "1.0.4",
		says:      []string{"install failed", "not ready", "container manager CrashLoopBackOff", "last exit code 1: Error: time=", crashLine},
		crashLoop: true,
	}, {
		// It runs for 10 s: a Direct deployment's check passes and the deployment completes;
		// then it crash-loops, and the health loop rolls the completed deployment back (its
		// bake window, 15 minutes, is not over).
		name: "CompletedThenCrashLoopsRolledBackByTheHealthLoop", version: "1.0.5", part: health.PartPods, direct: true,
		says: []string{"is not Running and Ready", "exit code 1", crashLine},
	}} {
		t.Run(tc.name, func(t *testing.T) { brokenVersionRolledBack(t, w, m, tc) })
	}
	t.Run("BlueGreenCrashingGreenRemoved", func(t *testing.T) { blueGreenCrashingGreen(t, w, m) })
	t.Run("BlueGreenSwitchedToGreenPods", func(t *testing.T) { blueGreenSwitched(t, w, m) })
}

// brokenCase is a broken version and what the manager must say of it.
type brokenCase struct {
	name, version string
	// part is the part of the check that fails the version; "" when its install fails.
	part string
	// says is what the rollback reason says of it.
	says []string
	// crashLoop: a health check of the release, run while the version is deployed, must find a
	// pod in CrashLoopBackOff.
	crashLoop bool
	// direct deploys it by a Direct deployment, which completes before the version breaks:
	// the health loop rolls it back.
	direct bool
}

// crashLine is how the crashing versions' log ends (their termination message's last line).
const crashLine = `msg="operator: crashing (version built to exit after its start)"`

// goodVersionHealthy deploys the good version (Direct, health checked) and waits until the
// health loop judges it Healthy on what the real pod does.
func goodVersionHealthy(t *testing.T, w *world, m *manager) {
	start := time.Now()
	d := m.deploy(`{"operator": "` + operatorName + `", "version": "` + goodVersion + `", "clusters": ["` + clusterName + `"], "strategy": "Direct"}`)
	m.waitStatus(d.ID, store.DeploymentCompleted, 3*time.Minute)
	t.Logf("%s installed and judged healthy by the deployment in %s", goodVersion, time.Since(start).Round(time.Millisecond))
	pod := waitRunning(t, w, goodVersion)
	// Creating a Widget goes through the operator's webhook (failurePolicy Fail), which the API
	// server calls at the Service's endpoint, the pod's address on the node's bridge.
	wd := createWidget(t, w)
	waitReconciled(t, w, wd.GetName(), wd.GetGeneration())
	reconciled := time.Now()
	var res api.OperatorHealthCheck
	poll(t, "a Healthy check of the health loop after the Widget was reconciled", time.Minute, func() (bool, string) {
		rec, r := m.lastCheck(operatorName)
		if rec == nil {
			return false, "no check yet"
		}
		res = r
		return rec.Health == string(api.Healthy) && rec.CheckedAt.After(reconciled) && r.CRDs.Resources == 1, fmt.Sprintf("%s: %s", rec.Health, health.Problems(r))
	})
	if res.Pods.Total != 1 || res.Pods.Ready != 1 || res.Webhooks.Total != 1 || res.Webhooks.Healthy != 1 ||
		res.CRDs.Ready != 1 || res.Metrics.Read != api.VerdictPassed {
		t.Fatalf("the Healthy check: pods %d/%d ready, webhooks %d/%d healthy, widgets %d/%d ready, metrics read %s; want all of one, metrics read",
			res.Pods.Ready, res.Pods.Total, res.Webhooks.Healthy, res.Webhooks.Total, res.CRDs.Ready, res.CRDs.Resources, res.Metrics.Read)
	}
	t.Logf("Healthy: pod %s Ready on %s at %s; webhook %s answered in %d ms; metrics read at %s",
		pod.Name, pod.Spec.NodeName, pod.Status.PodIP, res.Webhooks.Webhooks[0].Endpoint, res.Webhooks.Webhooks[0].LatencyMs, res.Metrics.Endpoint)
}

// brokenVersionRolledBack deploys the broken version (Rolling, a validation period of 90 s with
// health checks) and checks that it is judged Unhealthy by part, saying says, rolled back, and
// that the good version's pod runs again and reconciles.
func brokenVersionRolledBack(t *testing.T, w *world, m *manager, tc brokenCase) {
	ver := tc.version
	started := watchPodsStart(t, w, ver)
	var crashLoop func() (time.Time, string)
	if tc.crashLoop {
		crashLoop = watchCrashLoop(t, w)
	}
	var d *store.Deployment
	if tc.direct {
		d = m.deploy(`{"operator": "` + operatorName + `", "version": "` + ver + `", "clusters": ["` + clusterName + `"], "strategy": "Direct"}`)
		d = m.waitUntil(d.ID, store.DeploymentCompleted, 2*time.Minute)
		t.Logf("%s completed at %s", ver, d.FinishedAt.Format("15:04:05.000"))
		d = m.waitUntil(d.ID, store.DeploymentRolledBack, 2*time.Minute)
		if m.firstEvent(d.ID, "rollback.requested") == nil {
			t.Errorf("no rollback.requested event of the health loop\nevents:\n%s", m.eventLog(d.ID))
		}
	} else {
		d = m.deploy(`{"operator": "` + operatorName + `", "version": "` + ver + `", "clusters": ["` + clusterName + `"], "strategy": "Rolling",
			"rollingConfig": {"validationPeriod": "PT90S"}}`)
		d = m.waitStatus(d.ID, store.DeploymentRolledBack, 4*time.Minute)
	}
	if strings.Contains(d.RollbackReason, "\n") {
		t.Errorf("rollback reason %q: want one line", d.RollbackReason)
	}
	says := tc.says
	if tc.part != "" {
		says = append([]string{"health check", tc.part + " Unhealthy: "}, says...)
	}
	for _, s := range says {
		if !strings.Contains(d.RollbackReason, s) {
			t.Errorf("rollback reason %q: want it to say %q", d.RollbackReason, s)
		}
	}
	failed := m.firstEvent(d.ID, "healthcheck.failed")
	if tc.part != "" && failed == nil {
		t.Fatalf("no healthcheck.failed event\nevents:\n%s", m.eventLog(d.ID))
	}
	t.Logf("rolled back: %s", d.RollbackReason)
	pod := waitRunning(t, w, goodVersion)
	// The restored controller works: a change to the Widget passes its webhook and is reconciled.
	wd := bumpWidget(t, w)
	waitReconciled(t, w, wd.GetName(), wd.GetGeneration())
	t0 := started()
	if t0.IsZero() {
		t.Fatalf("no pod of %s was seen running", ver)
	}
	judged := "install failed"
	if failed != nil {
		judged = "first Unhealthy check +" + failed.At.Sub(t0).Round(100*time.Millisecond).String()
	}
	if crashLoop != nil {
		at, msg := crashLoop()
		if at.IsZero() {
			t.Fatalf("no health check of %s found a pod in CrashLoopBackOff", ver)
		}
		judged += "; CrashLoopBackOff seen by a check +" + at.Sub(t0).Round(100*time.Millisecond).String() + ": " + msg
	}
	t.Logf("figures: %s's pod running at %s; %s; rollback finished +%s; %s's pod %s running again",
		ver, t0.Format("15:04:05.000"), judged, d.RollbackFinishedAt.Sub(t0).Round(100*time.Millisecond), goodVersion, pod.Name)
}

// annotatedNamespace creates the operator's namespace, and the one BlueGreen installs green in,
// with the annotations that send all their pods to the real node (the install finds them there);
// both go when the test ends, with the releases installed in them.
func annotatedNamespace(t *testing.T, w *world) {
	t.Helper()
	freshNamespace(t, w, namespace, operatorName)
	freshNamespace(t, w, greenNamespace, greenRelease)
}

// freshNamespace creates namespace name on w with the annotations that send its pods to the
// real node, waiting while one of that name from an earlier run (go test -count=2) is being
// deleted. When the test ends, releases are uninstalled from it and it is deleted (not waited
// for): the package's clusters outlive each test, and an operator left behind would act on the
// Widgets of the next.
func freshNamespace(t *testing.T, w *world, name string, releases ...string) {
	t.Helper()
	poll(t, "namespace "+name+" created on "+w.node.Name, 3*time.Minute, func() (bool, string) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: controlplane.RealNodeNamespaceAnnotations()}}
		err := w.cp.Client.Create(context.Background(), ns)
		if apierrors.IsAlreadyExists(err) {
			return false, "an earlier one is still being deleted"
		}
		if err != nil {
			t.Fatalf("creating namespace %s: %v", name, err)
		}
		return true, ""
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, rel := range releases {
			if err := install.Uninstall(ctx, w.cp.Config, rel, name); err != nil {
				t.Errorf("uninstalling %s from %s on %s: %v", rel, name, w.node.Name, err)
			}
		}
		for _, rel := range releases {
			poll(t, "the pods of "+rel+" gone from "+w.node.Name, time.Minute, func() (bool, string) {
				n := len(podsOf(t, w, name, rel))
				return n == 0, fmt.Sprintf("%d pods", n)
			})
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := w.cp.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
}

// releasePods are the release's pods not being deleted.
func releasePods(t *testing.T, w *world) []corev1.Pod {
	t.Helper()
	return podsOf(t, w, namespace, operatorName)
}

// podsOf are the pods of release in ns not being deleted.
func podsOf(t *testing.T, w *world, ns, release string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := w.cp.Client.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{"app.kubernetes.io/instance": release}); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// waitRunning waits until the release's only pod is ver's, Running and Ready on the real node.
func waitRunning(t *testing.T, w *world, ver string) corev1.Pod {
	t.Helper()
	return waitRunningIn(t, w, namespace, operatorName, ver)
}

// waitRunningIn waits until the only pod of release in ns is ver's, Running and Ready on the
// real node.
func waitRunningIn(t *testing.T, w *world, ns, release, ver string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	poll(t, "the only pod of "+ns+"/"+release+" "+ver+"'s, Running and Ready on the real node", 2*time.Minute, func() (bool, string) {
		pods := podsOf(t, w, ns, release)
		if len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods))
		}
		pod = pods[0]
		return pod.Labels["app.kubernetes.io/version"] == ver && pod.Spec.NodeName == w.node.Name && podReady(pod),
			fmt.Sprintf("pod %s of %s on %q, phase %s, containers %v", pod.Name, pod.Labels["app.kubernetes.io/version"], pod.Spec.NodeName,
				pod.Status.Phase, pod.Status.ContainerStatuses)
	})
	return pod
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return p.Status.Phase == corev1.PodRunning && c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// watchPodsStart watches the release's pods until the test ends; the function it returns tells
// when a container of ver's pods was first seen running (zero: never).
func watchPodsStart(t *testing.T, w *world, ver string) func() time.Time {
	var (
		mu    sync.Mutex
		first time.Time
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var list corev1.PodList
			if err := w.cp.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/version": ver}); err == nil {
				for _, p := range list.Items {
					for _, cs := range p.Status.ContainerStatuses {
						mu.Lock()
						if cs.State.Running != nil && first.IsZero() {
							first = time.Now()
						}
						mu.Unlock()
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
}

// watchCrashLoop runs the manager's health check of the release every 500 ms until the test
// ends; the function it returns tells when a check first counted a pod in CrashLoopBackOff, and
// its pods message.
func watchCrashLoop(t *testing.T, w *world) func() (time.Time, string) {
	var (
		mu  sync.Mutex
		at  time.Time
		msg string
	)
	checker := health.NewChecker(health.Config{})
	target := health.Target{OperatorName: operatorName, Namespace: namespace, Release: operatorName, CRDs: []string{"widgets." + charttest.Group}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if res, err := checker.Check(ctx, clusterName, w.cp.Config, target); err == nil && res.Pods.CrashLooping > 0 {
				mu.Lock()
				if at.IsZero() {
					at, msg = time.Now(), strings.Join(res.Pods.Messages, "; ")
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() (time.Time, string) {
		mu.Lock()
		defer mu.Unlock()
		return at, msg
	}
}

// createWidget creates the Widget the operator reconciles (retried while the webhook's
// endpoint is not yet ready).
func createWidget(t *testing.T, w *world) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": charttest.Group + "/v1alpha1", "kind": "Widget",
		"metadata": map[string]any{"name": "widget-1", "namespace": namespace},
		"spec":     map[string]any{"size": int64(1), "color": "red"},
	}}
	poll(t, "the Widget created through the operator's webhook", 30*time.Second, func() (bool, string) {
		err := w.cp.Client.Create(context.Background(), u)
		return err == nil, fmt.Sprint(err)
	})
	return u
}

// bumpWidget changes the Widget's spec (a new generation), through the operator's webhook.
func bumpWidget(t *testing.T, w *world) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(charttest.Group + "/v1alpha1")
	u.SetKind("Widget")
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"size":%d}}`, time.Now().UnixNano()%99+1)))
	poll(t, "the Widget changed through the operator's webhook", 30*time.Second, func() (bool, string) {
		u.SetName("widget-1")
		u.SetNamespace(namespace)
		err := w.cp.Client.Patch(context.Background(), u, patch)
		return err == nil, fmt.Sprint(err)
	})
	return u
}

// waitReconciled waits until the operator's pod has reconciled the Widget at generation.
func waitReconciled(t *testing.T, w *world, name string, generation int64) {
	t.Helper()
	poll(t, "the Widget reconciled by the operator's pod", time.Minute, func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(charttest.Group + "/v1alpha1")
		u.SetKind("Widget")
		if err := w.cp.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
			return false, err.Error()
		}
		og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return og >= generation, fmt.Sprintf("generation %d, status %v", generation, u.Object["status"])
	})
}

// poll calls cond every 200 ms until it holds, failing the test after limit with its last word.
func poll(t *testing.T, what string, limit time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, limit, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
