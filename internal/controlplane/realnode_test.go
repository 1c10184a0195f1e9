//go:build e2e

package controlplane

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRealNode_PodServesHTTPOnThePodNetwork needs real containers: it starts a full control plane
// with a real node (containerd, runc, bridge CNI, a kubelet), runs a pod from an image built here
// (imagePullPolicy Never) that serves HTTP, reaches it from the test at its pod IP on the node's
// private bridge network, and stops everything: no bridge, network namespace, containerd, shim,
// mount, cgroup or iptables rule is left, and ip_forward is as it was.
func TestRealNode_PodServesHTTPOnThePodNetwork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before, err := recordHost()
	if err != nil {
		t.Fatal(err)
	}
	logDir := testLogDir(t)
	start := time.Now()
	cp, err := Start(ctx, Options{Mode: Full, LogDir: logDir, RealNode: &RealNodeOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = cp.Stop()
		}
	}()
	t.Logf("full control plane with a real node up in %s", time.Since(start).Round(time.Millisecond))
	node := cp.RealNodes()[0]

	var n corev1.Node
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: node.Name}, &n); err != nil {
		t.Fatal(err)
	}
	if n.Labels[RealNodeLabel] != "true" || !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == RealNodeTaint }) {
		t.Fatalf("real node's labels %v, taints %v: want %s=true and its taint", n.Labels, n.Spec.Taints, RealNodeLabel)
	}

	podStart := time.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{RealNodeLabel: "true"},
			Tolerations:  RealNodeTolerations(),
			Containers: []corev1.Container{{
				Name:            "web",
				Image:           HTTPTestImage,
				ImagePullPolicy: corev1.PullNever,
				Ports:           []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	if err := cp.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the pod Ready on the real node", func() (bool, string) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return pod.Status.PodIP != "", "ready"
			}
		}
		return false, fmt.Sprintf("phase %s on %q, conditions %v, containers %v", pod.Status.Phase, pod.Spec.NodeName,
			pod.Status.Conditions, pod.Status.ContainerStatuses)
	})
	t.Logf("pod Ready at %s on %s %s after its creation", pod.Status.PodIP, pod.Spec.NodeName, time.Since(podStart).Round(time.Millisecond))
	if pod.Spec.NodeName != node.Name {
		t.Fatalf("pod ran on %s, want the real node %s", pod.Spec.NodeName, node.Name)
	}
	if ip := net.ParseIP(pod.Status.PodIP); !node.Subnet.Contains(ip) {
		t.Fatalf("pod IP %s not in the node's pod network %s", ip, node.Subnet)
	}

	// Traffic only to the pod's address on the node's own bridge.
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + net.JoinHostPort(pod.Status.PodIP, "8080") + "/")
	if err != nil {
		t.Fatalf("GET from the pod: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != HTTPTestBody {
		t.Fatalf("pod answered %d %q, want 200 %q", resp.StatusCode, body, HTTPTestBody)
	}
	if rss, err := node.RSS(); err == nil {
		t.Logf("containerd + kubelet resident memory: %d MiB", rss>>20)
	}

	dir, socket, bridge := node.Dir, node.socket, node.Bridge
	stopStart := time.Now()
	stopped = true
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stopped in %s", time.Since(stopStart).Round(time.Millisecond))

	// Nothing left behind.
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		t.Errorf("bridge %s left", bridge)
	}
	if ns := listDir("/run/netns"); !slices.Equal(ns, before.netns) {
		t.Errorf("network namespaces %v, before %v", ns, before.netns)
	}
	if pids := processesMatching(func(argv []string) bool {
		return strings.Contains(strings.Join(argv, " "), dir) || slices.Contains(argv, socket)
	}); len(pids) > 0 {
		t.Errorf("processes left: %v", pids)
	}
	if points := mountPoints([]string{dir + "/", "/run/netns/"}); len(points) > 0 {
		t.Errorf("mounts left: %v", points)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("%s left", dir)
	}
	if dirs := cgroupDirs("kubepods"); len(dirs) > 0 {
		t.Errorf("cgroups left: %v", dirs)
	}
	after, err := recordHost()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range before.sysctls {
		if after.sysctls[k] != v {
			t.Errorf("sysctl %s = %s, was %s", k, after.sysctls[k], v)
		}
	}
	for k, v := range before.iptables {
		if !slices.Equal(after.iptables[k], v) {
			t.Errorf("%s rules %q, were %q", k, after.iptables[k], v)
		}
	}
	if !slices.Equal(after.created, before.created) {
		t.Errorf("directories made and left: before %v missing, now %v missing", before.created, after.created)
	}
}
