//go:build e2e

package controlplane

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRealNode_NetworkPolicyIsEnforced needs real containers and a real pod network: a
// NetworkPolicy only means something where packets flow. A server pod answers a pod of another
// namespace until a policy admits its own namespace only; then the other namespace's pod is cut off
// and a pod of its own namespace still gets through. Stop leaves no nftables table.
func TestRealNode_NetworkPolicyIsEnforced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before, err := hostBeforeNodes()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := Start(ctx, Options{Mode: Full, LogDir: testLogDir(t), RealNode: &RealNodeOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = cp.Stop()
		}
	}()
	node := cp.RealNodes()[0]
	for _, ns := range []string{"shop", "outside"} {
		if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: RealNodeNamespaceAnnotations()}}); err != nil {
			t.Fatal(err)
		}
		poll(ctx, t, ns+"'s default ServiceAccount", func() (bool, string) {
			err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
			return err == nil, fmt.Sprint(err)
		})
	}
	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "server", Namespace: "shop", Labels: map[string]string{"app": "server"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "server", Image: HTTPTestImage, ImagePullPolicy: corev1.PullNever,
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}}},
	}
	if err := cp.Client.Create(ctx, server); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the server running", func() (bool, string) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(server), server); err != nil {
			return false, err.Error()
		}
		return server.Status.Phase == corev1.PodRunning && server.Status.PodIP != "", string(server.Status.Phase)
	})
	url := "http://" + net.JoinHostPort(server.Status.PodIP, "8080") + "/"

	if got := fetchFromPod(ctx, t, cp, "outside", "before", url, false); got != "reached" {
		t.Fatalf("before any policy a pod of another namespace got %q, want reached", got)
	}
	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "own-namespace-only", Namespace: "shop"},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
		},
	}
	if err := cp.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	// The controller applies a new policy within moments: the other namespace's pod tries until
	// it is cut off, for 15 s at most.
	if got := fetchFromPod(ctx, t, cp, "outside", "after", url, true); got != "blocked" {
		t.Fatalf("with the policy a pod of another namespace got %q, want blocked", got)
	}
	if got := fetchFromPod(ctx, t, cp, "shop", "neighbour", url, false); got != "reached" {
		t.Fatalf("with the policy a pod of the server's namespace got %q, want reached", got)
	}
	t.Logf("enforced on %s: table %s, queue %d", node.Name, node.netpolTable(), node.netpolQueue())
	stopped = true
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	checkNothingLeft(t, before, node.Dir, node.socket, node.Bridge)
}

// fetchFromPod runs a pod in ns that fetches url once a second and reports (its termination
// message) "blocked" once three fetches in a row failed, or "reached": at the first success, or,
// when waitBlocked (a policy just made takes moments to apply), after 15 tries without being
// blocked. busybox's wget -T crashes in these images: timeout bounds each try instead.
func fetchFromPod(ctx context.Context, t *testing.T, cp *ControlPlane, ns, name, url string, waitBlocked bool) string {
	t.Helper()
	onSuccess := "echo reached >/dev/termination-log; exit 0"
	if waitBlocked {
		onSuccess = "fails=0"
	}
	// The controller knows a pod by the address the API server reports: the first packets of a
	// pod that has just started, before the kubelet posted its address, count as from outside
	// (in a cluster, the runtime's NRI tells it sooner; containerd 1.6 has none). So wait a little.
	script := `sleep 3; fails=0; for i in $(seq 1 15); do
  if /bin/busybox timeout 3 /bin/busybox wget -q -O - ` + url + ` >/dev/null; then ` + onSuccess + `
  else fails=$((fails+1)); [ $fails -ge 3 ] && { echo blocked >/dev/termination-log; exit 0; }; fi
  sleep 1; done; echo reached >/dev/termination-log`
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "client", Image: HTTPTestImage, ImagePullPolicy: corev1.PullNever,
			Command: []string{"/bin/sh", "-c", script},
		}}},
	}
	if err := cp.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "pod "+ns+"/"+name+" ended", func() (bool, string) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed, string(pod.Status.Phase)
	})
	if cs := pod.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
		return strings.TrimSpace(cs[0].State.Terminated.Message)
	}
	return fmt.Sprintf("no result (%s)", pod.Status.Phase)
}
