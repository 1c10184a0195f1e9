//go:build e2e

package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/ociimage"
	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// TestRealNode_PodServesHTTPOnThePodNetwork needs real containers: it starts a full control plane
// with a real node (containerd, runc, bridge CNI, a kubelet), runs a pod from an image built here
// (imagePullPolicy Never) that serves HTTP, reaches it from the test at its pod IP on the node's
// private bridge network, and stops everything: no bridge, network namespace, containerd, shim,
// mount, cgroup or iptables rule is left, and ip_forward is as it was.
func TestRealNode_PodServesHTTPOnThePodNetwork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before, err := hostBeforeNodes()
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
	// kube-apiserver reaches the node's kubelet with its client certificate: pods/log (kubectl
	// logs) gives what the container wrote: httpd -v's lines for the requests above and the probes.
	kc, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the pod's log through kube-apiserver (pods/log)", func() (bool, string) {
		out, err := kc.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(out), "response:200"), fmt.Sprintf("log %.200q", out)
	})
	// And pods/exec: a command run in the container through kube-apiserver and the kubelet.
	if out := execIn(ctx, t, cp, pod, "/bin/busybox", "cat", "/www/index.html"); out != HTTPTestBody {
		t.Errorf("exec in the pod printed %q, want %q", out, HTTPTestBody)
	}
	// And pods/portforward (kubectl port-forward): a local port that reaches the pod's 8080.
	if got := forwardedGet(ctx, t, cp, pod, 8080); got != HTTPTestBody {
		t.Errorf("GET through a port-forward answered %q, want %q", got, HTTPTestBody)
	}
	// Nothing of the machine is routed for the pods: no forwarding turned on.
	if v, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); strings.TrimSpace(string(v)) != before.Sysctls["net/ipv4/ip_forward"] {
		t.Errorf("ip_forward is %s while the node runs, was %s", strings.TrimSpace(string(v)), before.Sysctls["net/ipv4/ip_forward"])
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

	checkNothingLeft(t, before, dir, socket, bridge)
}

// checkNothingLeft checks that the machine is as before showed it, with nothing left of the real
// node that had dir, socket and bridge.
// hostBeforeNodes is the machine's state before any real node: recorded now, or, while real nodes
// of other test packages run, as the first of them recorded it (what the last Stop puts back).
func hostBeforeNodes() (hostState, error) {
	if len(loadRecords()) > 0 {
		var h hostState
		data, err := os.ReadFile(filepath.Join(machineDir, "host.json"))
		if err == nil {
			err = json.Unmarshal(data, &h)
		}
		if err == nil {
			return h, nil
		}
	}
	return recordHost()
}

func checkNothingLeft(t *testing.T, before hostState, dir, socket, bridge string) {
	t.Helper()
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		t.Errorf("bridge %s left", bridge)
	}
	if ns := listDir("/run/netns"); !slices.Equal(ns, before.Netns) {
		t.Errorf("network namespaces %v, before %v", ns, before.Netns)
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
	if dirs := append(cgroupDirs("kubepods"), cgroupDirs(filepath.Base(dir))...); len(dirs) > 0 {
		t.Errorf("cgroups left: %v", dirs)
	}
	if out, err := exec.Command("iptables", "-w", "-t", "mangle", "-S", "SLIPWAY-NETPOL-"+bridge).CombinedOutput(); err == nil {
		t.Errorf("the node's NetworkPolicy chain left: %s", out)
	}
	// Other test packages may run real nodes at the same time (go test runs packages in
	// parallel): the machine is put back by the last node to stop, so its state is checked
	// only when no other node runs.
	if others := loadRecords(); len(others) > 0 {
		t.Logf("%d other real node(s) run on this machine: the machine's own state is checked by the last to stop", len(others))
		return
	}
	if _, err := os.Stat(machineDir); err == nil {
		t.Errorf("%s left", machineDir)
	}
	after, err := recordHost()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range before.Sysctls {
		if after.Sysctls[k] != v {
			t.Errorf("sysctl %s = %s, was %s", k, after.Sysctls[k], v)
		}
	}
	for k, v := range before.Iptables {
		if !slices.Equal(after.Iptables[k], v) {
			t.Errorf("%s rules %q, were %q", k, after.Iptables[k], v)
		}
	}
	if !slices.Equal(after.Created, before.Created) {
		t.Errorf("directories made and left: before %v missing, now %v missing", before.Created, after.Created)
	}
	if out, err := exec.Command("nft", "list", "tables").CombinedOutput(); err != nil || strings.Contains(string(out), "slipway-netpol") {
		t.Errorf("nftables tables %q (%v): want no NetworkPolicy table left", out, err)
	}
}

const realNodeCrashEnv = "SLIPWAY_REALNODE_CRASH"

// TestRealNode_KilledWithoutStopIsSweptUp needs real containers: a test process that dies with a
// real node running a pod (a panic, a timeout, a SIGKILL) leaves the shim, the container, the
// network namespace, the bridge and the kubelet's settings behind (containerd and the kubelet
// die with it); SweepRealNodes, which the next StartRealNode calls, removes them all.
func TestRealNode_KilledWithoutStopIsSweptUp(t *testing.T) {
	if os.Getenv(realNodeCrashEnv) != "" {
		crashWithARealNode()
		return
	}
	before, err := hostBeforeNodes()
	if err != nil {
		t.Fatal(err)
	}
	// What the crashed process's control plane leaves (its certificates, wrappers, etcd's data) stays
	// in a temporary directory of the test's: short, as the node's sockets are made beneath it.
	tmp, err := os.MkdirTemp("", "slipway-crash-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealNode_KilledWithoutStopIsSweptUp$", "-test.v")
	cmd.Env = append(os.Environ(), realNodeCrashEnv+"="+t.TempDir(), "TMPDIR="+tmp)
	out, _ := cmd.CombinedOutput()
	var dir, socket, bridge string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "realnode "); ok {
			f := strings.Fields(rest)
			if len(f) == 3 {
				dir, socket, bridge = f[0], f[1], f[2]
			}
		}
	}
	if dir == "" || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("the crashing process (exit %d) did not run a real node:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	// The shim and its containers outlive the process; so does the bridge.
	if _, err := os.Stat("/sys/class/net/" + bridge); err != nil {
		t.Fatalf("no bridge %s after the crash: nothing to sweep up? %v", bridge, err)
	}
	if len(processesMatching(func(argv []string) bool { return slices.Contains(argv, socket) })) == 0 {
		t.Fatalf("no shim left after the crash: nothing to sweep up?")
	}
	swept, err := SweepRealNodes()
	if err != nil {
		t.Fatalf("SweepRealNodes: %v", err)
	}
	if !slices.Contains(swept, dir) {
		t.Fatalf("swept %v, want %s", swept, dir)
	}
	checkNothingLeft(t, before, dir, socket, bridge)
}

// crashWithARealNode starts a full control plane with a real node running a pod, prints the node's
// directory, socket and bridge, and exits without stopping anything.
func crashWithARealNode() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cp, err := Start(ctx, Options{Mode: Full, LogDir: os.Getenv(realNodeCrashEnv), RealNode: &RealNodeOptions{}})
	if err != nil {
		fail(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{RealNodeLabel: "true"},
			Tolerations:  RealNodeTolerations(),
			Containers:   []corev1.Container{{Name: "web", Image: HTTPTestImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
	if err := cp.Client.Create(ctx, pod); err != nil {
		fail(err)
	}
	for pod.Status.Phase != corev1.PodRunning {
		if ctx.Err() != nil {
			fail(fmt.Errorf("pod not running: %v", pod.Status))
		}
		time.Sleep(200 * time.Millisecond)
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			fail(err)
		}
	}
	n := cp.RealNodes()[0]
	fmt.Printf("realnode %s %s %s\n", n.Dir, n.socket, n.Bridge)
	os.Exit(3)
}

// TestRealNode_RunsAnImageOfTheProjectsBuilder needs real containers: an image built by
// internal/ociimage (the builder of the operator's and the manager's images: static binary,
// nonroot user, no shell) runs on the real node under the restricted Pod Security profile's
// settings (non-root, read-only root file system, no privilege escalation, no capabilities) and
// answers on the pod network as that user.
func TestRealNode_RunsAnImageOfTheProjectsBuilder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "httpserver")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testdata/httpserver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test server: %v\n%s", err, out)
	}
	img, err := ociimage.Build(ociimage.Spec{Binary: bin, Path: "/httpserver",
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Created: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
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
	const ref = "slipway.local/test/httpserver:1"
	importStart := time.Now()
	if err := node.ImportImages(ctx, ref, []v1.Image{img}); err != nil {
		t.Fatal(err)
	}
	t.Logf("image imported in %s", time.Since(importStart).Round(time.Millisecond))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "restricted", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{RealNodeLabel: "true"},
			Tolerations:  RealNodeTolerations(),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "server",
				Image:           ref,
				ImagePullPolicy: corev1.PullNever,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
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
	poll(ctx, t, "the restricted pod Ready", func() (bool, string) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return pod.Status.PodIP != "", "ready"
			}
		}
		return false, fmt.Sprintf("phase %s, containers %v", pod.Status.Phase, pod.Status.ContainerStatuses)
	})
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + net.JoinHostPort(pod.Status.PodIP, "8080") + "/")
	if err != nil {
		t.Fatalf("GET from the pod: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if want := fmt.Sprintf("uid=%d readonly=true host=restricted\n", ociimage.UID); string(body) != want {
		t.Fatalf("the pod answered %q, want %q", body, want)
	}
	dir, socket, bridge := node.Dir, node.socket, node.Bridge
	stopped = true
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	checkNothingLeft(t, before, dir, socket, bridge)
}

// TestRealNode_TwoNodesSideBySide needs real containers: two real nodes run at once (as two test
// packages' would), each with its own bridge, subnet and cgroups; a pod on each answers; stopping
// one leaves the other serving and the machine's settings in place until the last one stops.
func TestRealNode_TwoNodesSideBySide(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before, err := hostBeforeNodes()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := Start(ctx, Options{Mode: Full, LogDir: testLogDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = cp.Stop()
		}
	}()
	a, err := cp.StartRealNode(ctx, RealNodeOptions{Name: "real-a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cp.StartRealNode(ctx, RealNodeOptions{Name: "real-b"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Bridge == b.Bridge || a.Subnet.String() == b.Subnet.String() {
		t.Fatalf("nodes share a network: %s %s, %s %s", a.Bridge, a.Subnet, b.Bridge, b.Subnet)
	}
	ips := map[string]string{}
	for _, n := range []*RealNode{a, b} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + n.Name, Namespace: metav1.NamespaceDefault},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{RealNodeLabel: "true", "kubernetes.io/hostname": n.Name},
				Tolerations:  RealNodeTolerations(),
				Containers: []corev1.Container{{Name: "web", Image: HTTPTestImage, ImagePullPolicy: corev1.PullNever,
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}},
						PeriodSeconds: 1,
					}}},
			},
		}
		if err := cp.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		poll(ctx, t, "pod Ready on "+n.Name, func() (bool, string) {
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return false, err.Error()
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return pod.Status.PodIP != "", "ready"
				}
			}
			return false, fmt.Sprintf("phase %s on %q", pod.Status.Phase, pod.Spec.NodeName)
		})
		if !n.Subnet.Contains(net.ParseIP(pod.Status.PodIP)) || pod.Spec.NodeName != n.Name {
			t.Fatalf("pod on %s at %s, want on %s in %s", pod.Spec.NodeName, pod.Status.PodIP, n.Name, n.Subnet)
		}
		ips[n.Name] = pod.Status.PodIP
	}
	get := func(ip string) error {
		hc := &http.Client{Timeout: 5 * time.Second}
		resp, err := hc.Get("http://" + net.JoinHostPort(ip, "8080") + "/")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(body) != HTTPTestBody {
			return fmt.Errorf("answered %q", body)
		}
		return nil
	}
	for name, ip := range ips {
		if err := get(ip); err != nil {
			t.Fatalf("pod on %s: %v", name, err)
		}
	}
	aDir, aSocket, aBridge := a.Dir, a.socket, a.Bridge
	if err := a.Stop(); err != nil {
		t.Fatalf("stopping %s: %v", a.Name, err)
	}
	if _, err := os.Stat("/sys/class/net/" + aBridge); err == nil {
		t.Errorf("bridge %s of the stopped node left", aBridge)
	}
	if _, err := os.Stat(aDir); err == nil {
		t.Errorf("%s of the stopped node left", aDir)
	}
	if len(processesMatching(func(argv []string) bool { return slices.Contains(argv, aSocket) })) > 0 {
		t.Errorf("shims of the stopped node left")
	}
	if err := get(ips[b.Name]); err != nil {
		t.Fatalf("pod on %s after %s stopped: %v", b.Name, a.Name, err)
	}
	if _, err := os.Stat(machineDir); err != nil {
		t.Errorf("the machine's record went with the first node: %v", err)
	}
	dir, socket, bridge := b.Dir, b.socket, b.Bridge
	stopped = true
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	checkNothingLeft(t, before, dir, socket, bridge)
}

// TestRealNode_PodReachesTheMachineAtItsGateway needs real containers: a server of the test
// listening on the node's gateway address (the bridge's, there from the node's start) is reached by
// a pod, as a component of the machine (an API server, a registry) would be. The pod lands on the
// real node by its namespace's annotations (RealNodeNamespaceAnnotations) alone.
func TestRealNode_PodReachesTheMachineAtItsGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{Mode: Full, LogDir: testLogDir(t), RealNode: &RealNodeOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.Stop() }()
	node := cp.RealNodes()[0]
	l, err := net.Listen("tcp", net.JoinHostPort(node.Gateway.String(), "0"))
	if err != nil {
		t.Fatalf("listening on the gateway %s: %v", node.Gateway, err)
	}
	got := make(chan string, 1)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.RemoteAddr:
		default:
		}
		_, _ = io.WriteString(w, "hello pod\n")
	})}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()
	// The pod says nothing of the real node: its namespace's annotations put it there.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "routed", Annotations: RealNodeNamespaceAnnotations()}}
	if err := cp.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the namespace's default ServiceAccount", func() (bool, string) {
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, fmt.Sprint(err)
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: ns.Name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "client", Image: HTTPTestImage, ImagePullPolicy: corev1.PullNever,
				// The pod's routes go to the termination message: the subnet's only, no default route.
				Command: []string{"/bin/sh", "-c", "/bin/busybox wget -q -O - http://" + l.Addr().String() +
					"/ && /bin/busybox ip route >/dev/termination-log"},
			}},
		},
	}
	if err := cp.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the client pod Succeeded", func() (bool, string) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		if pod.Status.Phase == corev1.PodFailed {
			t.Fatalf("the client pod failed: %v", pod.Status.ContainerStatuses)
		}
		return pod.Status.Phase == corev1.PodSucceeded, string(pod.Status.Phase)
	})
	if pod.Spec.NodeName != node.Name || pod.Spec.NodeSelector[RealNodeLabel] != "true" {
		t.Fatalf("pod ran on %q with node selector %v: want the real node %s, selected by its namespace", pod.Spec.NodeName, pod.Spec.NodeSelector, node.Name)
	}
	select {
	case from := <-got:
		host, _, _ := net.SplitHostPort(from)
		if host != pod.Status.PodIP {
			t.Fatalf("request from %s, want the pod's %s", host, pod.Status.PodIP)
		}
	default:
		t.Fatal("the pod succeeded but the server saw no request")
	}
	var routes string
	if cs := pod.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
		routes = cs[0].State.Terminated.Message
	}
	if !strings.Contains(routes, node.Subnet.String()) || strings.Contains(routes, "default") {
		t.Fatalf("the pod's routes %q: want %s only, no default route", routes, node.Subnet)
	}
	t.Logf("the pod's routes: %q", routes)
}

// TestRealNode_PodTalksToTheAPIServerInCluster needs real containers: a pod on the real node gets
// its ServiceAccount token and the cluster's CA mounted, reaches kube-apiserver (served on the
// node's gateway) and is authenticated as its ServiceAccount — what the operator's pods and the
// WerfBundle Job's container do in a cluster.
func TestRealNode_PodTalksToTheAPIServerInCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "incluster")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testdata/incluster")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test program: %v\n%s", err, out)
	}
	img, err := ociimage.Build(ociimage.Spec{Binary: bin, Path: "/incluster",
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Created: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cp, err := Start(ctx, Options{Mode: Full, LogDir: testLogDir(t), RealNode: &RealNodeOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		stopStart := time.Now()
		if err := cp.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		t.Logf("stopped in %s", time.Since(stopStart).Round(time.Millisecond))
	}()
	t.Logf("control plane with a real node up in %s", time.Since(start).Round(time.Millisecond))
	node := cp.RealNodes()[0]
	const ref = "slipway.local/test/incluster:1"
	if err := node.ImportImages(ctx, ref, []v1.Image{img}); err != nil {
		t.Fatal(err)
	}
	t.Logf("image imported %s after the start", time.Since(start).Round(time.Millisecond))
	host, port, err := net.SplitHostPort(strings.TrimPrefix(cp.Config.Host, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	if host != node.Gateway.String() {
		t.Fatalf("kube-apiserver serves at %s, want the real node's gateway %s", cp.Config.Host, node.Gateway)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "incluster", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeSelector:  map[string]string{RealNodeLabel: "true"},
			Tolerations:   RealNodeTolerations(),
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "incluster", Image: ref, ImagePullPolicy: corev1.PullNever,
				Env: []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: host}, {Name: "KUBERNETES_SERVICE_PORT", Value: port}},
			}},
		},
	}
	podStart := time.Now()
	if err := cp.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the in-cluster pod done", func() (bool, string) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed,
			fmt.Sprintf("phase %s, conditions %v, containers %v", pod.Status.Phase, pod.Status.Conditions, pod.Status.ContainerStatuses)
	})
	t.Logf("pod done %s after its creation", time.Since(podStart).Round(time.Millisecond))
	var msg string
	if cs := pod.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
		msg = cs[0].State.Terminated.Message
	}
	if want := "system:serviceaccount:default:default"; pod.Status.Phase != corev1.PodSucceeded || msg != want {
		t.Fatalf("the pod %s saying %q, want Succeeded saying %q", pod.Status.Phase, msg, want)
	}
}

// TestRealNode_WebhookIsCalledThroughItsService needs real containers: a validating webhook served
// by a pod on the real node, registered through a Service, is called by kube-apiserver (at the
// Service's endpoint, the pod's IP on the bridge) and its denial reaches the client — as the
// operator's webhooks are in a cluster.
func TestRealNode_WebhookIsCalledThroughItsService(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "webhook")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testdata/webhook")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the webhook: %v\n%s", err, out)
	}
	img, err := ociimage.Build(ociimage.Spec{Binary: bin, Path: "/webhook",
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Created: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	// A certificate that is its own CA: the webhook's caBundle is the certificate itself.
	certPEM, keyPEM, err := selfsigned.Generate(time.Now(), "whk.default.svc", []string{"whk.default.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := certPEM
	cp, err := Start(ctx, Options{Mode: Full, LogDir: testLogDir(t), RealNode: &RealNodeOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.Stop() }()
	const ref, deny = "slipway.local/test/webhook:1", "denied by the webhook on the real node"
	if err := cp.RealNodes()[0].ImportImages(ctx, ref, []v1.Image{img}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "whk"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "whk", Namespace: metav1.NamespaceDefault, Labels: labels},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{RealNodeLabel: "true"},
			Tolerations:  RealNodeTolerations(),
			Containers: []corev1.Container{{
				Name: "webhook", Image: ref, ImagePullPolicy: corev1.PullNever,
				Env: []corev1.EnvVar{{Name: "TLS_CERT", Value: string(certPEM)}, {Name: "TLS_KEY", Value: string(keyPEM)}, {Name: "DENY", Value: deny}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8443), Path: "/healthz", Scheme: corev1.URISchemeHTTPS}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "whk", Namespace: metav1.NamespaceDefault},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}},
	}
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	whc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "real-node-test"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "deny.real-node.slipway.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "whk", Path: ptr.To("/validate")},
				CABundle: caPEM,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-test": "true"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	for _, o := range []client.Object{pod, svc, whc} {
		if err := cp.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	poll(ctx, t, "the webhook's pod Ready", func() (bool, string) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, "ready"
			}
		}
		return false, fmt.Sprintf("phase %s, containers %v", pod.Status.Phase, pod.Status.ContainerStatuses)
	})
	// The EndpointSlice follows the pod's readiness: until then the call fails with no endpoint.
	var last error
	poll(ctx, t, "the webhook's denial", func() (bool, string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: "default",
			Labels: map[string]string{"webhook-test": "true"}}}
		last = cp.Client.Create(ctx, cm)
		return last != nil && strings.Contains(last.Error(), deny), fmt.Sprint(last)
	})
	t.Logf("the API server answered: %v", last)
}

// execIn runs command in the pod's first container through kube-apiserver (pods/exec) and returns
// what it printed.
func execIn(ctx context.Context, t *testing.T, cp *ControlPlane, pod *corev1.Pod, command ...string) string {
	t.Helper()
	kc, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	req := kc.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: pod.Spec.Containers[0].Name, Command: command, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cp.Config, http.MethodPost, req.URL())
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatalf("exec %v in %s: %v (stderr %q)", command, pod.Name, err, stderr.String())
	}
	return stdout.String()
}

// forwardedGet forwards a free local port to the pod's port through kube-apiserver and the
// kubelet (pods/portforward, as kubectl port-forward does) and returns the body of a GET of / on it.
func forwardedGet(ctx context.Context, t *testing.T, cp *ControlPlane, pod *corev1.Pod, port int) string {
	t.Helper()
	kc, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	req := kc.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward")
	transport, upgrader, err := spdy.RoundTripperFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	var out strings.Builder
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("port-forward to %s: %v (%s)", pod.Name, err, out.String())
	case <-ctx.Done():
		t.Fatalf("port-forward to %s never got ready: %s", pod.Name, out.String())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("the forwarded ports: %v, %v", ports, err)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local))
	if err != nil {
		t.Fatalf("GET through the port-forward: %v (%s)", err, out.String())
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET through the port-forward: %d %q", resp.StatusCode, body)
	}
	return string(body)
}
