//go:build e2e

package webapp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controller/webapp"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/sampleapp"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestWebApp_RealNode_PodsServeHTTPAndAChangeRollsThem needs real containers: kwok marks pods
// Ready without running anything, so only a real node shows that a WebApp's Deployment really
// serves: the sample app's image starts as its nonroot user, listens on the WebApp's port 80
// (given through $PORT; the node lets pods bind ports below 1024 without a capability, as
// containerd 2 does), passes the readiness probe on healthCheckPath, and each endpoint of the
// WebApp's Service answers HTTP at its pod IP with the WebApp's GREETING and that pod's name. A
// new GREETING and a new image tag then roll the pods: the new ones answer with the new greeting
// and version, the old ones are gone.
func TestWebApp_RealNode_PodsServeHTTPAndAChangeRollsThem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	begin := time.Now()
	v1img, err := sampleapp.Image(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	v2img, err := sampleapp.Versioned(v1img, "2")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sample image built in %s", time.Since(begin).Round(time.Millisecond))

	full := testenv.NewWithRealNode(t, controlplane.RealNodeOptions{})
	node := full.RealNodes()[0]
	importStart := time.Now()
	for version, img := range map[string]v1.Image{"1": v1img, "2": v2img} {
		if err := node.ImportImages(ctx, sampleapp.Ref(version), []v1.Image{img}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("both versions imported in %s", time.Since(importStart).Round(time.Millisecond))

	c := full.Client
	ns := "wa-real-" + rand.String(5)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Annotations: controlplane.RealNodeNamespaceAnnotations()}}); err != nil {
		t.Fatal(err)
	}
	startOperator(ctx, t, full)

	const port = 80
	app := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: webappv1.WebAppSpec{Image: sampleapp.Ref("1"), Replicas: ptr.To[int32](2), Port: port,
			HealthCheckPath: sampleapp.HealthPath,
			Env: []corev1.EnvVar{
				{Name: sampleapp.EnvPort, Value: strconv.Itoa(port)},
				{Name: sampleapp.EnvGreeting, Value: "hello from the real node"},
			}},
	}
	created := time.Now()
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	readyOn := func(image string) func(*webappv1.WebApp) bool {
		return func(a *webappv1.WebApp) bool {
			return a.Status.Phase == webappv1.PhaseReady && a.Status.ObservedGeneration == a.Generation &&
				a.Spec.Image == image && a.Status.AvailableReplicas == 2 && a.Status.UpdatedReplicas == 2 && a.Status.Replicas == 2
		}
	}
	got := testenv.WaitFor(ctx, t, c, client.ObjectKeyFromObject(app), "web Ready with 2 pods on the real node", readyOn(sampleapp.Ref("1")),
		func(a *webappv1.WebApp) string { return string(a.Status.Phase) + "; pods: " + describePods(ctx, c, ns) })
	t.Logf("WebApp Ready %s after its creation", time.Since(created).Round(time.Millisecond))
	if s := kstatus(t, got); s != status.CurrentStatus {
		t.Errorf("kstatus = %s, want Current", s)
	}
	first := servedBy(ctx, t, c, node, ns, port, "hello from the real node", "1")

	rollStart := time.Now()
	patchSpec(ctx, t, c, app, func(a *webappv1.WebApp) {
		a.Spec.Image = sampleapp.Ref("2")
		a.Spec.Env[1].Value = "hello again"
	})
	testenv.WaitFor(ctx, t, c, client.ObjectKeyFromObject(app), "web Ready on version 2", readyOn(sampleapp.Ref("2")),
		func(a *webappv1.WebApp) string { return string(a.Status.Phase) + "; pods: " + describePods(ctx, c, ns) })
	t.Logf("rollout: WebApp Ready on the new version %s after the change", time.Since(rollStart).Round(time.Millisecond))
	testenv.Eventually(ctx, t, "the old pods are gone", func() (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{webapp.LabelInstance: "web"}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if slices.Contains(first, p.Name) {
				return false, fmt.Errorf("old pod %s still exists (%s)", p.Name, p.Status.Phase)
			}
		}
		return len(pods.Items) == 2, fmt.Errorf("%d pods", len(pods.Items))
	})
	t.Logf("rollout: old pods gone %s after the change", time.Since(rollStart).Round(time.Millisecond))
	second := servedBy(ctx, t, c, node, ns, port, "hello again", "2")
	for _, p := range second {
		if slices.Contains(first, p) {
			t.Errorf("pod %s served both versions", p)
		}
	}
	restrictedNamespace(ctx, t, c, node)
}

// restrictedNamespace is a WebApp in a namespace that enforces the Pod Security Standard
// "restricted": with the default spec.podSecurity (baseline) the API server refuses its pods, and
// the WebApp says so and what to set; with podSecurity restricted its pods run as the image's
// non-root user with every capability dropped, and serve.
func restrictedNamespace(ctx context.Context, t *testing.T, c client.Client, node *controlplane.RealNode) {
	ns := "wa-restricted-" + rand.String(5)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels:      map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
		Annotations: controlplane.RealNodeNamespaceAnnotations()}}); err != nil {
		t.Fatal(err)
	}
	const port = 8080
	app := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: webappv1.WebAppSpec{Image: sampleapp.Ref("2"), Replicas: ptr.To[int32](2), Port: port, HealthCheckPath: sampleapp.HealthPath,
			Env: []corev1.EnvVar{{Name: sampleapp.EnvPort, Value: strconv.Itoa(port)}, {Name: sampleapp.EnvGreeting, Value: "restricted"}}},
	}
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	got := testenv.WaitFor(ctx, t, c, client.ObjectKeyFromObject(app), "the WebApp says its pods are refused and what to set", func(a *webappv1.WebApp) bool {
		ready := meta.FindStatusCondition(a.Status.Conditions, "Ready")
		return a.Spec.PodSecurity == webappv1.PodSecurityBaseline && ready != nil && ready.Status == metav1.ConditionFalse &&
			strings.Contains(ready.Message, "violates PodSecurity") && strings.Contains(ready.Message, "set spec.podSecurity to restricted")
	}, func(a *webappv1.WebApp) string { return fmt.Sprintf("%s %v", a.Status.Phase, a.Status.Conditions) })
	t.Logf("refused: %s", meta.FindStatusCondition(got.Status.Conditions, "Ready").Message)

	patchSpec(ctx, t, c, app, func(a *webappv1.WebApp) { a.Spec.PodSecurity = webappv1.PodSecurityRestricted })
	testenv.WaitFor(ctx, t, c, client.ObjectKeyFromObject(app), "the restricted WebApp Ready with 2 pods", func(a *webappv1.WebApp) bool {
		return a.Status.Phase == webappv1.PhaseReady && a.Status.ObservedGeneration == a.Generation && a.Status.AvailableReplicas == 2
	}, func(a *webappv1.WebApp) string { return string(a.Status.Phase) + "; pods: " + describePods(ctx, c, ns) })
	for _, name := range servedBy(ctx, t, c, node, ns, port, "restricted", "2") {
		pod := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			t.Fatal(err)
		}
		if sc := pod.Spec.SecurityContext; sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) {
			t.Errorf("pod %s runs without runAsNonRoot: %+v", name, sc)
		}
	}
}

// servedBy waits until the Service "web" has exactly two ready endpoints, all pods on the real
// node in its subnet, checks that each answers HTTP at its address (what kube-proxy would route
// the Service to) with greeting, its own pod name and version, and returns the pods' names.
func servedBy(ctx context.Context, t *testing.T, c client.Client, node *controlplane.RealNode, ns string, port int, greeting, version string) []string {
	t.Helper()
	var eps []discoveryv1.Endpoint
	testenv.Eventually(ctx, t, "the Service web has 2 ready endpoints of version "+version, func() (bool, error) {
		var list discoveryv1.EndpointSliceList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "web"}); err != nil {
			return false, err
		}
		eps = eps[:0]
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					eps = append(eps, e)
				}
			}
		}
		if len(eps) != 2 {
			return false, fmt.Errorf("%d ready endpoints", len(eps))
		}
		for _, e := range eps {
			if e.TargetRef == nil || answer(e.Addresses[0], port) != sampleapp.Answer(greeting, e.TargetRef.Name, version) {
				return false, fmt.Errorf("endpoint %v answers %q", e.Addresses, answer(e.Addresses[0], port))
			}
		}
		return true, nil
	})
	var names []string
	for _, e := range eps {
		pod := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.TargetRef.Name}, pod); err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != node.Name || !node.Subnet.Contains(net.ParseIP(e.Addresses[0])) {
			t.Errorf("pod %s on %q at %v, want on %s in %s", pod.Name, pod.Spec.NodeName, e.Addresses, node.Name, node.Subnet)
		}
		names = append(names, pod.Name)
	}
	return names
}

// answer is what a pod serves at "/", or the error.
func answer(ip string, port int) string {
	hc := &http.Client{Timeout: 3 * time.Second}
	resp, err := hc.Get("http://" + net.JoinHostPort(ip, strconv.Itoa(port)) + "/")
	if err != nil {
		return err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	return string(body)
}

// describePods says where the namespace's pods are, for a timeout's message.
func describePods(ctx context.Context, c client.Client, ns string) string {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	out := ""
	for _, p := range pods.Items {
		out += fmt.Sprintf("%s on %q: %s %v; ", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
	}
	return out
}
