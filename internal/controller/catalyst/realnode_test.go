//go:build e2e

package catalyst_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/ociimage"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/sampleapp"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestEnvironment_RealNode_PreviewAnswersAtItsAddressBehindItsPolicy needs real containers: under kwok a
// preview's Deployment becomes available whatever its image, so only a real node shows that the
// image the operator deploys for the commit is pulled from the Project's registry, starts under
// the environment namespace's restricted Pod Security level, quota and LimitRange, and serves
// with the Environment's variables at the address its Ingress routes to. The sample app's image
// is pushed where an earlier build would have left it (<repository>:<commit>), so the build is
// skipped (kaniko cannot run here); the node's containerd pulls it over plain HTTP from the test's
// registry. The operator puts controlplane.RealNodeNamespaceAnnotations on the namespace it
// creates (--catalyst-namespace-annotation), which sends the preview's pods to the real node.
// The NetworkPolicy is what the API server holds, and the node enforces it (kube-network-policies,
// internal/controlplane/realnode_netpol.go): a pod of the ingress controller's namespace reaches
// the preview's pod, a pod of any other namespace is cut off.
func TestEnvironment_RealNode_PreviewAnswersAtItsAddressBehindItsPolicy(t *testing.T) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	img, err := sampleapp.Image(ctx, "pr-123")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.StartDistribution(t)
	cp := testenv.NewWithRealNode(t, controlplane.RealNodeOptions{InsecureRegistries: []string{reg.Host}})
	node := cp.RealNodes()[0]
	f := newFixture(t, onEnv(cp, reg))
	f.namespaceAnnotations = controlplane.RealNodeNamespaceAnnotations()
	image := f.reg.Repository("org/app") + ":" + f.head
	if _, err := ociimage.Push(ctx, image, []v1.Image{img}, true); err != nil {
		t.Fatal(err)
	}
	p := f.project()
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	t.Logf("control plane, real node, registry and operator ready %s after the start", time.Since(begin).Round(time.Millisecond))

	created := time.Now()
	const greeting = "hello from the preview"
	e := f.createEnvironment(f.environment("pr-123", f.head, func(e *catalystv1alpha1.Environment) {
		e.Spec.Config.EnvVars = append(e.Spec.Config.EnvVars, catalystv1alpha1.EnvVar{Name: sampleapp.EnvGreeting, Value: greeting})
	}))
	got := f.waitReady(e)
	t.Logf("Environment Ready %s after its creation", time.Since(created).Round(time.Millisecond))
	if c := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition); c == nil || c.Reason != catalystv1alpha1.ImageFoundReason || len(f.buildJobs(e)) != 0 {
		t.Errorf("BuildReady %+v with %d build Jobs, want %s and none", c, len(f.buildJobs(e)), catalystv1alpha1.ImageFoundReason)
	}
	if got.Status.Image != image {
		t.Errorf("image %q, want %q", got.Status.Image, image)
	}
	nsName := naming.NamespaceName(f.team, projectName, "pr-123")
	var ns corev1.Namespace
	if err := f.c.Get(f.ctx, client.ObjectKey{Name: nsName}, &ns); err != nil {
		t.Fatal(err)
	}
	for k, v := range controlplane.RealNodeNamespaceAnnotations() {
		if ns.Annotations[k] != v {
			t.Errorf("namespace annotation %s = %q, want %q", k, ns.Annotations[k], v)
		}
	}

	u, err := url.Parse(got.Status.URL)
	if err != nil || u.Host != "pr-123."+previewDomain {
		t.Fatalf("url %q: %v", got.Status.URL, err)
	}
	endpoints, port := ingressBackends(f.ctx, t, f.c, nsName, u.Host)
	if len(endpoints) != 1 {
		t.Fatalf("%d ready endpoints behind %s, want the Deployment's 1", len(endpoints), u.Host)
	}
	for _, ep := range endpoints {
		pod := &corev1.Pod{}
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: nsName, Name: ep.TargetRef.Name}, pod); err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != node.Name || !node.Subnet.Contains(net.ParseIP(ep.Addresses[0])) || pod.Spec.Containers[0].Image != image {
			t.Errorf("pod %s on %q at %v running %s, want on %s in %s running %s", pod.Name, pod.Spec.NodeName, ep.Addresses,
				pod.Spec.Containers[0].Image, node.Name, node.Subnet, image)
		}
		want := sampleapp.Answer(greeting, pod.Name, "pr-123")
		if body, err := httpGet(f.ctx, ep.Addresses[0], port); err != nil || body != want {
			t.Errorf("GET %s for %s at %s:%d: %q (%v), want %q", got.Status.URL, pod.Name, ep.Addresses[0], port, body, err, want)
		}
	}

	var np networkingv1.NetworkPolicy
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: nsName, Name: catalyst.NetworkPolicyName}, &np); err != nil {
		t.Fatal(err)
	}
	var wantPolicy networkingv1.NetworkPolicySpec
	if err := sigsyaml.UnmarshalStrict([]byte(wantNetworkPolicy), &wantPolicy); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(np.Spec, wantPolicy) {
		t.Errorf("NetworkPolicy spec:\n%s\nwant:\n%s", toYAML(t, np.Spec), wantNetworkPolicy)
	}
	selects(t, f, &np, nsName)

	target := "http://" + net.JoinHostPort(endpoints[0].Addresses[0], strconv.Itoa(int(port))) + "/"
	ingress, outsider := startFetch(f, "ingress-nginx", target), startFetch(f, "outsider", target)
	if got := fetchResult(f, ingress); got != "reached" {
		t.Errorf("a pod of the ingress controller's namespace got %q from the preview, want reached", got)
	}
	if got := fetchResult(f, outsider); got != "blocked" {
		t.Errorf("a pod of another namespace got %q from the preview, want blocked", got)
	}
}

// startFetch starts a pod on the real node in namespace ns (made, annotated for the node, when
// missing) that fetches url once a second and reports, as its termination message, "reached" at
// the first success or "blocked" after three failures in a row. It waits 3 s first: the
// NetworkPolicy controller knows a pod by the address the API server reports, a moment after it
// started (containerd 1.6 has no NRI). busybox's wget -T crashes in these images: timeout bounds
// each try instead.
func startFetch(f *fixture, ns, url string) *corev1.Pod {
	f.t.Helper()
	err := f.c.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: controlplane.RealNodeNamespaceAnnotations()}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		f.t.Fatal(err)
	}
	testenv.Eventually(f.ctx, f.t, ns+"'s default ServiceAccount", func() (bool, error) {
		err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, err
	})
	script := `sleep 3; fails=0; for i in $(seq 1 15); do
  if /bin/busybox timeout 3 /bin/busybox wget -q -O - ` + url + ` >/dev/null; then echo reached >/dev/termination-log; exit 0; fi
  fails=$((fails+1)); [ $fails -ge 3 ] && { echo blocked >/dev/termination-log; exit 0; }
  sleep 1; done`
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "client", Image: controlplane.HTTPTestImage, ImagePullPolicy: corev1.PullNever,
			Command: []string{"/bin/sh", "-c", script},
		}}},
	}
	f.create(pod)
	return pod
}

// fetchResult waits until the pod of startFetch ends and returns what it reported.
func fetchResult(f *fixture, pod *corev1.Pod) string {
	f.t.Helper()
	ns := pod.Namespace
	got := testenv.WaitFor(f.ctx, f.t, f.c, client.ObjectKeyFromObject(pod), "pod "+ns+"/client ended", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if cs := got.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
		return strings.TrimSpace(cs[0].State.Terminated.Message)
	}
	return fmt.Sprintf("no result (%s)", got.Status.Phase)
}

// ingressBackends routes host as an ingress controller would (none runs here): the environment
// Ingress's rule for host names a Service and port; the Service's port names a target port; the
// Service's EndpointSlices give the ready pods and that port's number. It returns the endpoints
// and the port the traffic would reach them on.
func ingressBackends(ctx context.Context, t *testing.T, c client.Client, ns, host string) ([]discoveryv1.Endpoint, int32) {
	t.Helper()
	var ing networkingv1.Ingress
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.IngressName}, &ing); err != nil {
		t.Fatal(err)
	}
	var backend *networkingv1.IngressServiceBackend
	for _, r := range ing.Spec.Rules {
		if r.Host == host && r.HTTP != nil && len(r.HTTP.Paths) > 0 {
			backend = r.HTTP.Paths[0].Backend.Service
		}
	}
	if backend == nil {
		t.Fatalf("no Ingress rule routes %s: %+v", host, ing.Spec.Rules)
	}
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: backend.Name}, &svc); err != nil {
		t.Fatal(err)
	}
	var portName string
	found := false
	for _, sp := range svc.Spec.Ports {
		if sp.Port == backend.Port.Number || (backend.Port.Name != "" && sp.Name == backend.Port.Name) {
			portName, found = sp.Name, true
		}
	}
	if !found {
		t.Fatalf("Service %s has no port %+v: %+v", svc.Name, backend.Port, svc.Spec.Ports)
	}
	var list discoveryv1.EndpointSliceList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		t.Fatal(err)
	}
	var eps []discoveryv1.Endpoint
	var port int32
	for _, s := range list.Items {
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == portName && p.Port != nil {
				port = *p.Port
			}
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready && e.TargetRef != nil && len(e.Addresses) > 0 {
				eps = append(eps, e)
			}
		}
	}
	if port == 0 {
		t.Fatalf("the EndpointSlices of %s have no port %q: %+v", svc.Name, portName, list.Items)
	}
	return eps, port
}

// selects checks that the policy, as the API server holds it, applies to the preview's running
// pods: what a policy-enforcing network would enforce on them.
func selects(t *testing.T, f *fixture, np *networkingv1.NetworkPolicy, ns string) {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := f.c.List(f.ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
			if !sel.Matches(labels.Set(p.Labels)) {
				t.Errorf("NetworkPolicy %s does not select pod %s", np.Name, p.Name)
			}
		}
	}
	if running == 0 {
		t.Error("no running pod in the environment namespace")
	}
}

func httpGet(ctx context.Context, ip string, port int32) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, strconv.Itoa(int(port)))+"/", nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("%s", resp.Status)
	}
	return string(body), err
}
