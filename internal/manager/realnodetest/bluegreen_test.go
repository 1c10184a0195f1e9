//go:build e2e

package realnodetest

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// BlueGreen installs green beside blue: the release <operator>-green in <namespace>-green.
const (
	greenNamespace = namespace + "-green"
	greenRelease   = operatorName + "-green"
	// greenVersion is a good version, deployed by BlueGreen.
	greenVersion = "1.0.6"
)

// blueGreenCrashingGreen deploys the crashing 1.0.1 by BlueGreen: green's pod runs on the real
// node beside blue's and crash-loops; the validation's health check of green judges it Unhealthy
// and the deployment rolls back without a switch: green's release and pods are removed, and
// blue's pod was never touched (the same pod, not restarted), still answering the webhook and
// reconciling.
func blueGreenCrashingGreen(t *testing.T, w *world, m *manager) {
	blue := waitRunning(t, w, goodVersion)
	begin := time.Now()
	d := m.deploy(`{"operator": "` + operatorName + `", "version": "1.0.1", "clusters": ["` + clusterName + `"], "strategy": "BlueGreen",
		"blueGreenConfig": {"validationPeriod": "PT90S", "autoSwitch": true}}`)
	if c := d.Clusters[0]; c.Namespace != greenNamespace || c.Release != greenRelease {
		t.Fatalf("green is %s/%s, want %s/%s", c.Namespace, c.Release, greenNamespace, greenRelease)
	}
	d = m.waitStatus(d.ID, store.DeploymentRolledBack, 3*time.Minute)
	if d.SwitchedAt != nil {
		t.Errorf("switched to a green that crash-loops (at %s)", d.SwitchedAt)
	}
	for _, s := range []string{"health check", health.PartPods + " Unhealthy: ", "exit code 1", crashLine} {
		if !strings.Contains(d.RollbackReason, s) {
			t.Errorf("rollback reason %q: want it to say %q", d.RollbackReason, s)
		}
	}
	poll(t, "green's pods are gone", time.Minute, func() (bool, string) {
		n := len(podsOf(t, w, greenNamespace, greenRelease))
		return n == 0, "green pods: " + strings.Repeat("x", n)
	})
	after := waitRunning(t, w, goodVersion)
	if after.UID != blue.UID || restarts(after) != restarts(blue) {
		t.Errorf("blue's pod changed: %s (uid %s, %d restarts) before, %s (uid %s, %d restarts) after",
			blue.Name, blue.UID, restarts(blue), after.Name, after.UID, restarts(after))
	}
	wd := bumpWidget(t, w)
	waitReconciled(t, w, wd.GetName(), wd.GetGeneration())
	t.Logf("figures: green judged Unhealthy and removed %s after the request: %s", d.RollbackFinishedAt.Sub(begin).Round(100*time.Millisecond), d.RollbackReason)
}

// blueGreenSwitched deploys the good greenVersion by BlueGreen (a 10 s validation, autoSwitch):
// green's pod is validated Healthy on the real node; the switch re-points blue's webhook at
// green's Service and scales blue to 0, so blue's pod terminates on the node; after the switch
// monitor the deployment completes. A Widget change then passes both webhook configurations,
// answered over TLS by green's pod at its address on the node, and is reconciled by green's
// controller, the only one running.
func blueGreenSwitched(t *testing.T, w *world, m *manager) {
	begin := time.Now()
	d := m.deploy(`{"operator": "` + operatorName + `", "version": "` + greenVersion + `", "clusters": ["` + clusterName + `"], "strategy": "BlueGreen",
		"blueGreenConfig": {"validationPeriod": "PT10S", "autoSwitch": true}}`)
	d = m.waitStatus(d.ID, store.DeploymentCompleted, 3*time.Minute)
	if d.SwitchedAt == nil || m.firstEvent(d.ID, "cluster.switched") == nil {
		t.Fatalf("completed without a switch\nevents:\n%s", m.eventLog(d.ID))
	}
	green := waitRunningIn(t, w, greenNamespace, greenRelease, greenVersion)
	poll(t, "blue's pod is gone from the node (scaled to 0)", time.Minute, func() (bool, string) {
		pods := releasePods(t, w)
		return len(pods) == 0, "blue pods left"
	})
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := w.cp.Client.Get(context.Background(), client.ObjectKey{Name: operatorName + "-" + chartName}, &vwc); err != nil {
		t.Fatal(err)
	}
	if svc := vwc.Webhooks[0].ClientConfig.Service; svc == nil || svc.Namespace != greenNamespace || svc.Name != greenRelease+"-"+chartName+"-webhook" {
		t.Errorf("blue's webhook calls %+v after the switch, want green's Service %s/%s-%s-webhook", svc, greenNamespace, greenRelease, chartName)
	}
	wd := bumpWidget(t, w)
	waitReconciled(t, w, wd.GetName(), wd.GetGeneration())
	if by := reconciledBy(t, w, wd.GetName()); !strings.HasSuffix(by, "version "+greenVersion) {
		t.Errorf("the Widget's Ready message after the switch is %q, want it reconciled by green's %s", by, greenVersion)
	}
	t.Logf("figures: switched %s after the request, completed after the %s monitor at +%s; green pod %s Ready at %s, blue scaled to 0",
		d.SwitchedAt.Sub(begin).Round(100*time.Millisecond), switchMonitor, d.FinishedAt.Sub(begin).Round(100*time.Millisecond),
		green.Name, green.Status.PodIP)
}

// restarts is the restart count of the pod's containers.
func restarts(p corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// reconciledBy is the message of the Widget's Ready condition, which names the version whose
// controller reconciled it last.
func reconciledBy(t *testing.T, w *world, name string) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(charttest.Group + "/v1alpha1")
	u.SetKind("Widget")
	if err := w.cp.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			msg, _ := m["message"].(string)
			return msg
		}
	}
	return ""
}
