package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// fleetControllers are the kube-controller-manager controllers of a workload fleet: the fewest
// with which a Deployment becomes Available, a deleted Deployment takes its ReplicaSets and pods
// with it, and a namespace can be deleted.
//
//   - deployment-controller and replicaset-controller turn a Deployment into pods;
//   - garbage-collector-controller deletes what an owner reference ties to a deleted object;
//   - namespace-controller empties and removes a namespace being deleted.
//
// serviceaccount-controller is not needed: envtest runs kube-apiserver without the ServiceAccount
// admission plugin, so pods are admitted without their namespace's "default" ServiceAccount (which
// therefore does not exist). Jobs, StatefulSets, DaemonSets, EndpointSlices, the node lifecycle and
// the rest are left out, as a fleet cluster stands in for a cluster the manager deploys an
// operator to (the single full control plane runs them all). Without node-lifecycle-controller
// nothing lifts the node.kubernetes.io/not-ready taint the apiserver puts on a new node, so
// startNode removes it once kwok reports the node Ready.
const fleetControllers = "deployment-controller,replicaset-controller,garbage-collector-controller,namespace-controller"

// workloadTuning is what differs between the single full control plane and a fleet cluster.
type workloadTuning struct {
	controllers string
	// syncs is the concurrency of the deployment, replicaset, job and namespace controllers;
	// gcSyncs the garbage collector's.
	syncs, gcSyncs int
	// qps and burst are the client limits of kube-controller-manager and kube-scheduler.
	qps, burst int
}

// The single full plane favours fast feedback: Deployments, Jobs, GC and namespaces settle in
// seconds. A fleet runs ten such sets on two cores, so each gets few workers and a low rate: one
// Deployment of a few replicas per cluster needs no more.
var (
	fullTuning  = workloadTuning{controllers: "*", syncs: 10, gcSyncs: 20, qps: 200, burst: 400}
	fleetTuning = workloadTuning{controllers: fleetControllers, syncs: 2, gcSyncs: 2, qps: 50, burst: 100}
)

// workloadProcesses returns kube-controller-manager, kube-scheduler and kwok (with the kwok stage
// configs in the file stages) for the apiserver of the admin kubeconfig file kubeconfig, unstarted.
// With saKey, the apiserver's service-account signing key, the controller manager fills
// kubernetes.io/service-account-token Secrets as a cluster's does (tests prove who can get one).
func workloadProcesses(assets, kubeconfig, stages string, t workloadTuning, saKey string) []*process {
	syncs, gcSyncs := strconv.Itoa(t.syncs), strconv.Itoa(t.gcSyncs)
	qps, burst := strconv.Itoa(t.qps), strconv.Itoa(t.burst)
	kcm := &process{name: "kube-controller-manager", path: filepath.Join(assets, "kube-controller-manager"), args: []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--controllers=" + t.controllers,
		"--use-service-account-credentials=false",
		"--secure-port=0",
		"--concurrent-deployment-syncs=" + syncs,
		"--concurrent-replicaset-syncs=" + syncs,
		"--concurrent-job-syncs=" + syncs,
		"--concurrent-gc-syncs=" + gcSyncs,
		"--concurrent-namespace-syncs=" + syncs,
		"--kube-api-qps=" + qps,
		"--kube-api-burst=" + burst,
	}, restarts: componentRestarts}
	if saKey != "" {
		kcm.args = append(kcm.args, "--service-account-private-key-file="+saKey)
	}
	sched := &process{name: "kube-scheduler", path: filepath.Join(assets, "kube-scheduler"), args: []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--kube-api-qps=" + qps,
		"--kube-api-burst=" + burst,
	}, restarts: componentRestarts}
	kwok := &process{name: "kwok", path: filepath.Join(assets, "kwok"), args: []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=fake",
		"--server-address=127.0.0.1:0",
	}, restarts: componentRestarts}
	return []*process{kcm, sched, kwok}
}

// componentRestarts is how many times in a row kube-controller-manager, kube-scheduler and kwok
// are started again when they exit on their own (process.restarts): with the pauses between them,
// enough to ride out an API server that is away for a minute.
const componentRestarts = 10

// startWorkloads starts kube-controller-manager, kube-scheduler and kwok for every server, creates
// each server's fake node and waits until every node is Ready. The processes get SIGKILL when this
// process dies (process.spawn).
func (f *Fleet) startWorkloads(ctx context.Context, assets, logDir string) error {
	stages := filepath.Join(logDir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
		return err
	}
	for i, s := range f.Servers {
		kubeconfig := filepath.Join(logDir, fmt.Sprintf("kubeconfig-%d", i))
		if err := os.WriteFile(kubeconfig, s.Kubeconfig, 0o600); err != nil {
			return err
		}
		for _, p := range workloadProcesses(assets, kubeconfig, stages, fleetTuning, "") {
			f.mu.Lock()
			out := f.logFile(logDir, fmt.Sprintf("%s-%d.log", p.name, i))
			err := p.start(out)
			if err == nil {
				s.workloads = append(s.workloads, p)
			}
			f.mu.Unlock()
			if err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(f.Servers))
	for i, s := range f.Servers {
		wg.Go(func() {
			if err := s.startNode(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w (logs in %s)", s.Name, err, logDir)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startNode creates the server's fake node, waits until kwok reports it Ready and removes its
// taints (the not-ready one the apiserver adds on creation), so pods can be scheduled on it.
func (s *FleetServer) startNode(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, FakeNode(s.NodeName), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating fake node %s: %w", s.NodeName, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		node, err := cs.CoreV1().Nodes().Get(ctx, s.NodeName, metav1.GetOptions{})
		if err == nil && countReady([]corev1.Node{*node}) == 1 {
			if len(node.Spec.Taints) == 0 {
				return nil
			}
			node.Spec.Taints = nil
			_, err = cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			if err == nil {
				return nil
			}
		}
		for _, p := range s.workloads {
			if exited, err := p.exited(); exited {
				return fmt.Errorf("%s exited while waiting for node %s: %w", p.name, s.NodeName, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for node %s to be Ready: %w", s.NodeName, errors.Join(ctx.Err(), err))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stopWorkloads stops the server's kwok, kube-scheduler and kube-controller-manager, at once.
func (s *FleetServer) stopWorkloads() error {
	errs := make([]error, len(s.workloads))
	var wg sync.WaitGroup
	for i, p := range s.workloads {
		wg.Go(func() { errs[i] = p.stop(10 * time.Second) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// WorkloadRSS is the resident memory of this server's kube-controller-manager, kube-scheduler and
// kwok, in bytes (Linux /proc); 0 in a fleet started without Workloads.
func (s *FleetServer) WorkloadRSS() (int64, error) { return rssOf(s.workloadPIDs()) }

func (s *FleetServer) workloadPIDs() []int {
	var pids []int
	for _, p := range s.workloads {
		if pid := p.pid(); pid != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pid is the PID of the process's current run, 0 before it starts.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}
