package health

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// operatorDeployment is an operator's controller Deployment as a Helm chart renders it, with
// extra pod template labels and annotations (the kwok stage controls).
func operatorDeployment(t testing.TB, ns, release string, replicas int32, labels, annotations map[string]string, edit ...func(*appsv1.Deployment)) {
	t.Helper()
	tl := map[string]string{InstanceLabel: release}
	for k, v := range labels {
		tl[k] = v
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: release + "-controller", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{InstanceLabel: release}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: tl, Annotations: annotations},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "example.com/operator:1.0.0"}}},
			},
		},
	}
	for _, e := range edit {
		e(d)
	}
	if err := env.Client.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

func TestPods(t *testing.T) {
	t.Run("ready pods pass, resources not checked without metrics", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t)
		operatorDeployment(t, ns, "good", 2, nil, nil)
		c := NewChecker(Config{})
		got := checkUntil(t, c, Target{OperatorName: "good", Namespace: ns, Release: "good"}, "2 pods ready",
			func(h Result) bool { return h.Pods.Ready == 2 })
		p := got.Pods
		if p.Health != api.Healthy || p.Total != 2 || p.CrashLooping != 0 || p.MaxRecentRestarts != 0 {
			t.Fatalf("pods = %+v, want 2 of 2 Ready, Healthy", p)
		}
		// The design's one-value fields: 2 pods, no webhooks in the release, no CRDs to reconcile.
		if got.ControllerPods != 2 || got.WebhookStatus != api.WebhookNotConfigured || got.CRDReconciliation != api.ReconciliationNoResources {
			t.Fatalf("controllerPods %d, webhookStatus %s, crdReconciliation %s: want 2, NotConfigured, NoResources",
				got.ControllerPods, got.WebhookStatus, got.CRDReconciliation)
		}
		if p.Resources != api.VerdictNotChecked || !hasMessage(p.Messages, "not checked: resource usage: metrics unavailable") {
			t.Fatalf("resources = %s, messages %q: want NotChecked, metrics unavailable", p.Resources, p.Messages)
		}
	})

	t.Run("crash-looping pods fail", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t)
		operatorDeployment(t, ns, "crashy", 1, map[string]string{controlplane.CrashLoopLabel: "true"}, nil)
		c := NewChecker(Config{})
		got := checkUntil(t, c, Target{OperatorName: "crashy", Namespace: ns, Release: "crashy"}, "a pod in CrashLoopBackOff",
			func(h Result) bool {
				return h.Pods.CrashLooping == 1 && h.Pods.MaxRecentRestarts >= 3
			})
		p := got.Pods
		if p.Health != api.Unhealthy || got.Health != api.Unhealthy || p.Ready != 0 || !hasMessage(p.Messages, "container manager in CrashLoopBackOff") {
			t.Fatalf("pods = %+v, want Unhealthy with CrashLoopBackOff", p)
		}
	})

	t.Run("restarting pods fail at 3 restarts within the window", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t)
		operatorDeployment(t, ns, "flaky", 1, map[string]string{controlplane.RestartLabel: "true"},
			map[string]string{controlplane.RestartIntervalAnnotation: "300ms"})
		c := NewChecker(Config{})
		target := Target{OperatorName: "flaky", Namespace: ns, Release: "flaky"}
		// Before the third restart the pod is Ready and the part passes: a restart or two is fine.
		first := checkUntil(t, c, target, "a Ready pod", func(h Result) bool { return h.Pods.Ready == 1 })
		if first.Pods.MaxRecentRestarts < 3 && first.Pods.Health != api.Healthy {
			t.Fatalf("pods with %d restarts = %+v, want Healthy", first.Pods.MaxRecentRestarts, first.Pods)
		}
		got := checkUntil(t, c, target, "3 restarts", func(h Result) bool { return h.Pods.MaxRecentRestarts >= 3 })
		p := got.Pods
		if p.Health != api.Unhealthy || p.CrashLooping != 0 || !hasMessage(p.Messages, "container manager restarted") {
			t.Fatalf("pods = %+v, want Unhealthy for restarts, no CrashLoopBackOff", p)
		}
	})

	t.Run("no pods fail", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t)
		got, err := NewChecker(Config{}).Check(testCtx(t), "local", env.Config, Target{OperatorName: "gone", Namespace: ns, Release: "gone"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Pods.Health != api.Unhealthy || got.Pods.Total != 0 || !hasMessage(got.Pods.Messages, "no controller pods") {
			t.Fatalf("pods = %+v, want Unhealthy: no controller pods", got.Pods)
		}
	})
}

// TestRestartWindow follows one container's restart count across checks with an injected clock.
func TestRestartWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	now := t0
	c := NewChecker(Config{Now: func() time.Time { return now }})
	at := func(d time.Duration, count, want int) {
		t.Helper()
		now = t0.Add(d)
		if got := c.recentRestarts("k/uid/manager", t0, count, now); got != want {
			t.Fatalf("at +%s with restartCount %d: %d restarts in the window, want %d", d, count, got, want)
		}
	}
	at(0, 0, 0)
	at(time.Minute, 2, 2)                  // the pod is young: counted from its creation
	at(2*time.Minute, 3, 3)                // 3 within 5 minutes
	at(6*time.Minute+30*time.Second, 3, 1) // the +1m sample (2) is the newest at or before the window start
	at(8*time.Minute, 3, 0)                // nothing since +3m
	at(20*time.Minute, 9, 6)               // 6 since the last sample, however long ago it was
	if n := len(c.restarts["k/uid/manager"].samples); n > 3 {
		t.Fatalf("%d samples kept, want the old ones pruned", n)
	}

	// An old pod seen for the first time: its past restarts are not put in the window.
	old := NewChecker(Config{})
	if got := old.recentRestarts("k/uid2/manager", t0.Add(-time.Hour), 40, t0); got != 0 {
		t.Fatalf("first sight of an old pod with 40 restarts: %d in the window, want 0", got)
	}
	if got := old.recentRestarts("k/uid2/manager", t0.Add(-time.Hour), 43, t0.Add(time.Minute)); got != 3 {
		t.Fatalf("3 restarts since: %d, want 3", got)
	}
}
