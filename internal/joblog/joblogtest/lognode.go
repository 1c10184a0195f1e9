// Package joblogtest gives tests a real pods/log. kwok runs no container, so the control plane's
// pods have no log; a LogNode is a kwok node of its own whose kubelet API (kwok's server, with its
// ClusterLogs feature) answers the API server's pods/log requests for the pods bound to it with
// log files the test writes. A pod's log is then read the way the operator reads it: through the
// API server, which proxies pods/log to the node, where the kubelet's own log reader (tailLines,
// limitBytes) serves the file.
//
//	node := joblogtest.StartLogNode(t, env, "team-a")        // logs of pods in namespace team-a
//	node.WriteLog(t, "team-a", strings.Repeat("step\n", 5000)+"Error: it broke\n")
//	node.Bind(&pod.Spec)                                     // spec.nodeName = node.Name
//
// The node carries a NoSchedule taint, so the scheduler never places other pods on it; pods get
// there through spec.nodeName. It runs the project's kwok stages (internal/controlplane), so a pod
// labelled controlplane.FailLabel fails there as on the control plane's own node.
package joblogtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// NodeAnnotation selects the nodes a LogNode's kwok manages (value: the node's name); the control
// plane's own kwok manages only nodes with controlplane.FakeNodeAnnotation.
const NodeAnnotation = "slipway.dev/kwok-log-node"

// TaintKey is the NoSchedule taint on a LogNode.
const TaintKey = "slipway.dev/log-node"

// criChunk is how much of a line a container runtime writes in one CRI log entry; longer lines
// are split into partial ("P") entries, as containerd and CRI-O do.
const criChunk = 16 << 10

// LogNode is a kwok node serving pod logs from files.
type LogNode struct {
	// Name is the Node's name: put it in a pod's spec.nodeName.
	Name string

	dir   string
	files map[string]string // namespace -> log file
}

// StartLogNode starts a kwok process managing one new Node whose pods in the given namespaces
// have the log WriteLog writes for that namespace (every container the same log), and waits until
// the Node is Ready. The process, its Node and its files go when tb ends; kwok's log is kept when
// tb failed. KUBEBUILDER_ASSETS must name the control-plane binaries, as for every test on env.
func StartLogNode(tb testing.TB, env *testenv.Env, namespaces ...string) *LogNode {
	tb.Helper()
	if len(namespaces) == 0 {
		tb.Fatal("joblogtest: StartLogNode needs at least one namespace")
	}
	kwokBin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kwok")
	if _, err := os.Stat(kwokBin); err != nil {
		tb.Fatalf("joblogtest: no kwok in KUBEBUILDER_ASSETS (run hack/controlplane.sh): %v", err)
	}
	path, err := stagesPath()
	if err != nil {
		tb.Fatalf("joblogtest: finding the project's kwok stages: %v", err)
	}
	stages, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("joblogtest: reading the project's kwok stages: %v", err)
	}
	dir, err := os.MkdirTemp("", "slipway-lognode-")
	if err != nil {
		tb.Fatal(err)
	}
	n := &LogNode{Name: "log-node-" + rand.String(6), dir: dir, files: map[string]string{}}

	// One ClusterLogs per namespace: kwok reads the file when the log is asked for, so the test
	// may write it at any time before.
	cfg := strings.Builder{}
	cfg.Write(stages)
	for _, ns := range namespaces {
		file := filepath.Join(dir, ns+".log")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			tb.Fatal(err)
		}
		n.files[ns] = file
		fmt.Fprintf(&cfg, "\n---\napiVersion: kwok.x-k8s.io/v1alpha1\nkind: ClusterLogs\nmetadata:\n  name: %s\nspec:\n"+
			"  selector:\n    matchNamespaces: [%q]\n  logs:\n  - logsFile: %q\n", ns, ns, file)
	}
	cfgPath := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		tb.Fatal(err)
	}

	addr := testenv.FreeAddr(tb)
	_, port, _ := net.SplitHostPort(addr)
	proc := &kwokProcess{
		path: kwokBin,
		args: []string{
			"--kubeconfig=" + env.Kubeconfig,
			"--config=" + cfgPath,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + NodeAnnotation + "=" + n.Name,
			// kwok serves its kubelet API over TLS with a certificate of its own; the API server
			// has no kubelet CA (envtest sets none), so it does not verify it, as with any kubelet
			// whose certificate authority it was not given.
			"--server-address=" + addr,
			"--node-ip=127.0.0.1",
			"--node-port=" + port,
		},
		logPath:  filepath.Join(dir, "kwok.log"),
		restarts: 3,
	}
	if err := proc.start(); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := n.node(port)
	tb.Cleanup(func() {
		// The pods bound to the node first (they would otherwise wait for pod GC), then the node,
		// then kwok: nothing of the node outlives the test.
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		var pods corev1.PodList
		if err := env.Client.List(cctx, &pods, client.MatchingFields{"spec.nodeName": n.Name}); err == nil {
			for i := range pods.Items {
				_ = env.Client.Delete(cctx, &pods.Items[i], client.GracePeriodSeconds(0))
			}
		}
		_ = env.Client.Delete(cctx, node)
		proc.stop()
		if tb.Failed() {
			tb.Logf("joblogtest: kwok log of node %s kept in %s", n.Name, proc.logPath)
			return
		}
		_ = os.RemoveAll(dir)
	})
	if err := env.Client.Create(ctx, node); err != nil {
		tb.Fatalf("joblogtest: creating node %s: %v", n.Name, err)
	}
	testenv.Eventually(ctx, tb, "log node "+n.Name+" is Ready", func() (bool, error) {
		if exited, err := proc.exited(); exited {
			return false, fmt.Errorf("kwok exited (log %s): %v", proc.logPath, err)
		}
		got := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return n
}

// node is the Node object: addresses and kubelet port pointing at kwok's server, tainted so that
// only pods bound to it by name land there.
func (n *LogNode) node(port string) *corev1.Node {
	var p int32
	_, _ = fmt.Sscan(port, &p)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("4Ti"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Annotations: map[string]string{NodeAnnotation: n.Name},
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux"},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: TaintKey, Value: n.Name, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			// The API server dials the first address of its preferred types (Hostname first).
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: "127.0.0.1"},
				{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: p}},
			Allocatable:     capacity,
			Capacity:        capacity,
		},
	}
}

// Bind puts the pods of a template on the node (spec.nodeName, and a toleration of its taint for
// completeness).
func (n *LogNode) Bind(spec *corev1.PodSpec) {
	spec.NodeName = n.Name
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
}

// WriteLog makes log the log of every container of the node's pods in namespace, as a container
// runtime writes it (CRI format; lines longer than 16 KiB in partial entries). A log that does not
// end in a newline ends in a partial line, as a container's last unterminated write does.
func (n *LogNode) WriteLog(tb testing.TB, namespace, log string) {
	tb.Helper()
	file, ok := n.files[namespace]
	if !ok {
		tb.Fatalf("joblogtest: node %s serves no logs for namespace %s", n.Name, namespace)
	}
	if err := os.WriteFile(file, CRI(log), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// CRI encodes log in the CRI container log format the kubelet reads: one entry per line, "F" for
// a line's last entry and "P" for the entries before it (and for an unterminated end).
func CRI(log string) []byte {
	var b strings.Builder
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entry := func(tag, content string) {
		b.WriteString(ts.Format(time.RFC3339Nano))
		b.WriteString(" stdout ")
		b.WriteString(tag)
		b.WriteByte(' ')
		b.WriteString(content)
		b.WriteByte('\n')
		ts = ts.Add(time.Millisecond)
	}
	for log != "" {
		line, rest, terminated := strings.Cut(log, "\n")
		log = rest
		for len(line) > criChunk {
			entry("P", line[:criChunk])
			line = line[criChunk:]
		}
		if terminated {
			entry("F", line)
		} else {
			entry("P", line)
		}
	}
	return []byte(b.String())
}

// stagesPath is internal/controlplane/kwok-stages.yaml of the module whose tests run (they run in
// a directory of the module).
func stagesPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "internal", "controlplane", "kwok-stages.yaml"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// kwokProcess runs kwok, started again (up to restarts times) when it dies on its own: kwok
// v0.8.0 can crash at start with "concurrent map writes" (see internal/controlplane) and keeps no
// state.
type kwokProcess struct {
	path     string
	args     []string
	logPath  string
	restarts int

	mu       sync.Mutex
	cmd      *exec.Cmd
	stopping bool
	done     chan struct{}
	err      error
	out      *os.File
}

func (p *kwokProcess) start() error {
	out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.out = out
	p.done = make(chan struct{})
	cmd, err := p.spawn()
	if err != nil {
		return err
	}
	go p.supervise(cmd)
	return nil
}

func (p *kwokProcess) spawn() (*exec.Cmd, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return nil, errors.New("kwok is stopping")
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kwok: %w", err)
	}
	p.cmd = cmd
	return cmd, nil
}

func (p *kwokProcess) supervise(cmd *exec.Cmd) {
	for {
		err := cmd.Wait()
		p.mu.Lock()
		again := !p.stopping && p.restarts > 0
		if again {
			p.restarts--
		}
		p.mu.Unlock()
		if again {
			_, _ = fmt.Fprintf(p.out, "\n[joblogtest] kwok exited (%v); starting it again\n", err)
			if next, serr := p.spawn(); serr == nil {
				cmd = next
				continue
			}
		}
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
		return
	}
}

// exited reports whether kwok has ended for good, and how.
func (p *kwokProcess) exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// stop ends kwok: SIGTERM, then SIGKILL after 10 s.
func (p *kwokProcess) stop() {
	p.mu.Lock()
	p.stopping = true
	cmd := p.cmd
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	}
	_ = p.out.Close()
}
