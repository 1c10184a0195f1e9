package devenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/controlplane"
)

// make dev's real node (docs/development.md, "make dev on the real node"): containerd and a
// kubelet beside kwok's node (internal/controlplane, realnode.go), on by default, where chosen
// pods run as real containers. kwok's node keeps every other pod.

// EnvRealNode turns the real node off ("0", "false") or on ("1", "true"); unset, it is on when
// devenv runs as root (containerd, the kubelet and the pods' network namespaces need root).
const EnvRealNode = "SLIPWAY_REAL_NODE"

// RealNodeDefault is the real node's setting from $SLIPWAY_REAL_NODE, and why, for the flag's
// default.
func RealNodeDefault() (on bool, why string, err error) {
	v := os.Getenv(EnvRealNode)
	if v == "" {
		if os.Geteuid() != 0 {
			return false, "off: not root (containerd and the kubelet need root; kwok simulates every pod)", nil
		}
		return true, "on", nil
	}
	on, err = strconv.ParseBool(v)
	if err != nil {
		return false, "", fmt.Errorf("%s=%q: want 1 or 0", EnvRealNode, v)
	}
	if on {
		return true, "on (" + EnvRealNode + "=" + v + ")", nil
	}
	return false, "off (" + EnvRealNode + "=" + v + ")", nil
}

// realNodeOptions are the control plane's node options: nil without the real node.
func (o Options) realNodeOptions() (*controlplane.RealNodeOptions, error) {
	if !o.RealNode {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the real node needs root (containerd, the kubelet, network namespaces): run as root, "+
			"or turn it off with %s=0 (make dev) or --real-node=false (devenv)", EnvRealNode)
	}
	return &controlplane.RealNodeOptions{}, nil
}

// controlPlaneStep says what the control plane holds.
func (o Options) controlPlaneStep() string {
	if o.RealNode {
		return "Starting the control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) and a real node (containerd, kubelet)"
	}
	return "Starting the control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)"
}

// RealNode is the environment's real node, nil when it runs without one.
func (e *Env) RealNode() *controlplane.RealNode { return e.realNode() }

func (e *Env) realNode() *controlplane.RealNode {
	if e.cp == nil || len(e.cp.RealNodes()) == 0 {
		return nil
	}
	return e.cp.RealNodes()[0]
}

// nodeReadyStep says which nodes are Ready.
func (e *Env) nodeReadyStep() string {
	if n := e.realNode(); n != nil {
		return fmt.Sprintf("kwok node and real node %s Ready (pod network %s, the machine at %s)", n.Name, n.Subnet, n.Gateway)
	}
	return "kwok node Ready"
}

// RealPods returns the pods running on the real node as "namespace/name (phase, IP)", sorted by
// namespace and name; none without a real node.
func (e *Env) RealPods(ctx context.Context) ([]string, error) {
	n := e.realNode()
	if n == nil {
		return nil, nil
	}
	var pods corev1.PodList
	if err := e.cp.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, fmt.Sprintf("%s/%s (%s, %s)", p.Namespace, p.Name, p.Status.Phase, p.Status.PodIP))
	}
	return out, nil
}

// realPodRows are the status table's rows of the pods on the real node (KIND, NAMESPACE, NAME,
// STATUS, MESSAGE): each a real container, with its address on the pod network.
func (e *Env) realPodRows(ctx context.Context) []string {
	n := e.realNode()
	if n == nil {
		return nil
	}
	var pods corev1.PodList
	if err := e.cp.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
		return []string{fmt.Sprintf("Pod\t\t\t<error>\t%v", err)}
	}
	var rows []string
	for _, p := range pods.Items {
		ready := "not ready"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = "ready"
			}
		}
		rows = append(rows, fmt.Sprintf("Pod\t%s\t%s\t%s\treal container on %s, %s, %s", p.Namespace, p.Name, p.Status.Phase, n.Name, ready, p.Status.PodIP))
	}
	return rows
}

// printPods says in the Ready summary where pods run: which are real containers, and that kwok
// simulates the rest.
func (e *Env) printPods(ctx context.Context, w io.Writer) {
	n := e.realNode()
	if n == nil {
		fmt.Fprintf(w, "Pods are simulated by kwok: no container runs (the real node is off: %s=0, or not root).\n", EnvRealNode)
		return
	}
	pods, err := e.RealPods(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(w, "Real node %s: listing its pods: %v\n", n.Name, err)
	case len(pods) == 0:
		fmt.Fprintf(w, "Real node %s runs no pod yet; kwok simulates the others.\n", n.Name)
	default:
		fmt.Fprintf(w, "Real pods (containers on node %s, pod network %s):\n    %s\nkwok simulates the others.\n",
			n.Name, n.Subnet, strings.Join(pods, "\n    "))
	}
}

// nodeKind says what runs a Node's pods, for the status table.
func nodeKind(n *corev1.Node) string {
	if n.Labels[controlplane.RealNodeLabel] == "true" {
		return "real (containerd)"
	}
	return "kwok"
}
