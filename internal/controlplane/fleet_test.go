package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Two servers over one etcd are two clusters: an object made in one is absent from the other, a
// credential of one is refused by the other, and stopping one leaves the other serving.
func TestFleetServersAreIndependentClusters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, err := StartFleet(ctx, FleetOptions{Servers: 2, LogDir: testLogDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	a, b := clientset(t, f.Servers[0].Kubeconfig), clientset(t, f.Servers[1].Kubeconfig)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-a"}}
	if _, err := a.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace made in cluster-0, read from cluster-1: want NotFound, got %v", err)
	}

	// cluster-0's admin credential against cluster-1's server: refused (TLS or 401).
	cfg := *f.Servers[0].Config
	cfg.Host = f.Servers[1].Config.Host
	cfg.TLSClientConfig.Insecure, cfg.TLSClientConfig.CAData = true, nil
	cross, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cross.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("cluster-0's credential on cluster-1: want 401, got %v", err)
	}

	if rss, err := f.Servers[0].RSS(); err != nil || rss < 10<<20 {
		t.Fatalf("kube-apiserver RSS %d bytes, %v", rss, err)
	}
	if rss, err := f.EtcdRSS(); err != nil || rss < 1<<20 {
		t.Fatalf("etcd RSS %d bytes, %v", rss, err)
	}
	if err := f.Servers[0].Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("cluster-1 after stopping cluster-0: %v", err)
	}
	if _, err := a.Discovery().ServerVersion(); err == nil {
		t.Fatal("cluster-0 answers after Stop")
	}
}

func clientset(t *testing.T, kubeconfig []byte) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// A workload fleet's servers are clusters that run workloads: on each of two servers a Deployment
// becomes Available with a Ready pod on that server's own node. Stopping server 1 stops its
// controllers too and leaves server 0 scaling, collecting garbage and deleting namespaces.
func TestWorkloadFleet_DeploymentsBecomeAvailableInEachCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	started := time.Now()
	f, err := StartFleet(ctx, FleetOptions{Servers: 2, LogDir: testLogDir(t), Workloads: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	t.Logf("2-server workload fleet started in %s", time.Since(started).Round(100*time.Millisecond))

	clients := make([]*kubernetes.Clientset, len(f.Servers))
	for i, s := range f.Servers {
		clients[i] = clientset(t, s.Kubeconfig)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}
		if _, err := clients[i].CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if _, err := clients[i].AppsV1().Deployments("apps").Create(ctx, webDeployment(1), metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
	}
	for i, s := range f.Servers {
		waitAvailable(ctx, t, clients[i], s, 1)
	}
	logFleetMemory(t, f)

	if err := f.Servers[1].Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Servers[1].workloads {
		if exited, _ := p.exited(); !exited {
			t.Errorf("%s of cluster-1 still runs after its server's Stop", p.name)
		}
	}

	a, s := clients[0], f.Servers[0]
	scale, err := a.AppsV1().Deployments("apps").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 2
	if _, err := a.AppsV1().Deployments("apps").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(ctx, t, a, s, 2)

	// The garbage collector removes the ReplicaSet of a deleted Deployment, and the namespace
	// controller removes a deleted namespace.
	if err := a.AppsV1().Deployments("apps").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the ReplicaSets of the deleted Deployment to be collected", func() (bool, string) {
		rs, err := a.AppsV1().ReplicaSets("apps").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(rs.Items) == 0, fmt.Sprintf("%d ReplicaSets left", len(rs.Items))
	})
	if err := a.CoreV1().Namespaces().Delete(ctx, "apps", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "namespace apps to be deleted", func() (bool, string) {
		ns, err := a.CoreV1().Namespaces().Get(ctx, "apps", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase %s, conditions %v", ns.Status.Phase, ns.Status.Conditions)
	})
}

// webDeployment is a Deployment "web" of a pause container.
func webDeployment(replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "registry.k8s.io/pause:3.10",
				}}},
			},
		},
	}
}

// waitAvailable waits until the Deployment apps/web of server s is Available with want updated,
// available replicas, each a Ready pod on s's own node.
func waitAvailable(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, s *FleetServer, want int32) {
	t.Helper()
	poll(ctx, t, fmt.Sprintf("%s: Deployment apps/web Available with %d Ready pods", s.Name, want), func() (bool, string) {
		d, err := cs.AppsV1().Deployments("apps").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		available := false
		for _, c := range d.Status.Conditions {
			available = available || c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
		}
		if !available || d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want || d.Status.AvailableReplicas != want {
			return false, fmt.Sprintf("status %+v", d.Status)
		}
		pods, err := cs.CoreV1().Pods("apps").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Spec.NodeName == s.NodeName {
					ready++
				}
			}
		}
		return ready == int(want), fmt.Sprintf("%d of %d pods Ready on node %s", ready, len(pods.Items), s.NodeName)
	})
}

// poll calls check every 200 ms until it reports done; the test fails when ctx ends first, with
// check's last word.
func poll(ctx context.Context, t *testing.T, what string, check func() (bool, string)) {
	t.Helper()
	for {
		done, last := check()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last: %s", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// logFleetMemory logs the resident memory of every server's processes and of etcd.
func logFleetMemory(t *testing.T, f *Fleet) {
	t.Helper()
	for _, s := range f.Servers {
		total, err := s.RSS()
		if err != nil {
			t.Fatalf("%s: RSS: %v", s.Name, err)
		}
		apiserver, err := rssOf(s.pids)
		if err != nil {
			t.Fatalf("%s: kube-apiserver RSS: %v", s.Name, err)
		}
		parts := fmt.Sprintf("kube-apiserver %d MiB", apiserver>>20)
		for _, p := range s.workloads {
			rss, err := rssOf([]int{p.pid()})
			if err != nil {
				t.Fatalf("%s: %s RSS: %v", s.Name, p.name, err)
			}
			parts += fmt.Sprintf(", %s %d MiB", p.name, rss>>20)
		}
		if workloads, err := s.WorkloadRSS(); err != nil || workloads < 10<<20 {
			t.Errorf("%s: WorkloadRSS %d bytes, %v", s.Name, workloads, err)
		}
		t.Logf("%s: %d MiB (%s)", s.Name, total>>20, parts)
	}
	etcd, err := f.EtcdRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd: %d MiB", etcd>>20)
}

// A process that starts a workload fleet and dies without stopping it (a panic, a test timeout)
// leaves nothing behind: every process, etcd and kube-apiserver included, has a parent-death
// signal.
func TestWorkloadFleet_CrashedParentLeavesNoProcess(t *testing.T) {
	if os.Getenv("SLIPWAY_FLEET_CRASH_HELPER") == "1" {
		if _, err := StartFleet(context.Background(), FleetOptions{Servers: 1, LogDir: os.Getenv("SLIPWAY_FLEET_CRASH_LOGS"), Workloads: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("pids", strings.Trim(fmt.Sprint(children(fleetCommands...)), "[]"))
		os.Exit(3)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkloadFleet_CrashedParentLeavesNoProcess$")
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "SLIPWAY_FLEET_CRASH_HELPER=1", "SLIPWAY_FLEET_CRASH_LOGS="+t.TempDir(), "TMPDIR="+tmp)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("the helper ended with %v, want exit status 3", err)
	}
	rest, _ := strings.CutPrefix(strings.TrimSpace(string(out)), "pids ")
	pids := strings.Fields(rest)
	if len(pids) != len(fleetCommands) {
		t.Fatalf("the helper reported pids %v, want one each of %v", pids, fleetCommands)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, f := range pids {
		pid, _ := strconv.Atoi(f)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still running 30 s after its parent died", pid)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Its etcd's data stayed behind; the next start of an etcd on the machine removes it.
	left, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("%s%d-*", etcdDirPrefix, cmd.Process.Pid)))
	if len(left) != 1 {
		t.Fatalf("the crashed helper's etcd data directories: %v, want one", left)
	}
	sweepEtcdDataDirs(tmp)
	if _, err := os.Stat(left[0]); !os.IsNotExist(err) {
		t.Errorf("%s after the sweep: %v, want it removed", left[0], err)
	}
}

// fleetCommands are the command names of a one-server workload fleet's processes
// (kube-controller-manager's is cut to 15 bytes).
var fleetCommands = []string{"etcd", "kube-apiserver", "kube-controller", "kube-scheduler", "kwok"}
