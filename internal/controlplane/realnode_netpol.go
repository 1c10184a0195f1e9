package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// NetworkPolicies are enforced on a real node: the node runs the NetworkPolicy controller of SIG
// Network's kube-network-policies (hack/networkpolicy, built by hack/controlplane.sh), as a
// cluster's CNI would. The first packet of each connection from or to a pod of the node goes to the
// controller through an nfqueue, and the controller accepts or drops it by the policies that select
// its pods. Connections of the machine's root processes (the kubelet's probes, the tests) are
// always accepted, as Kubernetes documents for a pod's own node.
//
// The controller steers packets with an nftables `queue` rule of its own, which this machine's
// kernel lacks (nft_queue: "Could not process rule: No such file or directory"; it logs that at each
// sync and goes on). The iptables NFQUEUE target is there, so the node steers them itself: a chain
// in the mangle table's POSTROUTING (which bridged packets pass, br_netfilter), the controller's own
// rules written for iptables. --queue-bypass: while no controller listens, packets pass (fail open),
// so a node whose controller died is unenforced, never cut off.

// networkPolicyBinary is the controller's executable in the control plane's cache.
const networkPolicyBinary = "networkpolicy"

// networkPolicyUser is the controller's identity: it reads pods, namespaces and NetworkPolicies.
const networkPolicyUser = "system:slipway:network-policies"

// netpolTable, netpolChain and netpolQueue name the node's nftables table (the controller's own,
// see above), iptables chain and nfqueue: all are global to the machine, so each node has its own,
// after its bridge's number.
func (n *RealNode) netpolTable() string { return "slipway-netpol-" + n.Bridge }
func (n *RealNode) netpolChain() string { return "SLIPWAY-NETPOL-" + n.Bridge }

func (n *RealNode) netpolQueue() int {
	i, _ := strconv.Atoi(strings.TrimPrefix(n.Bridge, "slwbr"))
	return 100 + i
}

// startNetworkPolicies starts the node's NetworkPolicy controller.
func (n *RealNode) startNetworkPolicies(ctx context.Context, cp *ControlPlane) error {
	kubeconfig, err := cp.networkPolicyKubeconfig(ctx, filepath.Join(n.Dir, "networkpolicy.kubeconfig"))
	if err != nil {
		return err
	}
	n.record.NetpolChain = n.netpolChain()
	if err := writeJSON(n.record.file(), n.record); err != nil {
		return err
	}
	if err := addNetpolChain(n.netpolChain(), n.Subnet.String(), n.netpolQueue()); err != nil {
		return err
	}
	n.netpol = &process{name: "networkpolicy", path: filepath.Join(cp.assets, networkPolicyBinary), args: []string{
		"--kubeconfig=" + kubeconfig,
		"--node=" + n.Name,
		"--table=" + n.netpolTable(),
		"--queue-id=" + strconv.Itoa(n.netpolQueue()),
		"--v=2",
	}}
	return n.netpol.start(n.logFile("networkpolicy.log"))
}

// networkPolicyKubeconfig writes a kubeconfig of networkPolicyUser, bound to a ClusterRole that
// reads what the controller watches.
func (cp *ControlPlane) networkPolicyKubeconfig(ctx context.Context, path string) (string, error) {
	const name = "slipway:network-policies"
	read := []string{"get", "list", "watch"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}, Verbs: read},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: read},
	}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: networkPolicyUser}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := cp.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("the NetworkPolicy controller's rights: %w", err)
		}
	}
	return cp.writeUserKubeconfig(path, envtest.User{Name: networkPolicyUser})
}

// netpolRules are the node's packet-steering rules, in its chain of the mangle table.
func netpolRules(subnet string, queue int) [][]string {
	q := []string{"-j", "NFQUEUE", "--queue-num", strconv.Itoa(queue), "--queue-bypass"}
	return [][]string{
		{"-m", "owner", "--uid-owner", "0", "-j", "RETURN"},
		{"-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"},
		append([]string{"-s", subnet}, q...),
		append([]string{"-d", subnet}, q...),
	}
}

// addNetpolChain makes the node's chain with its rules and sends POSTROUTING through it.
func addNetpolChain(chain, subnet string, queue int) error {
	cmds := [][]string{{"-N", chain}}
	for _, r := range netpolRules(subnet, queue) {
		cmds = append(cmds, append([]string{"-A", chain}, r...))
	}
	cmds = append(cmds, append([]string{"-A"}, netpolJump(chain)...))
	for _, args := range cmds {
		if out, err := exec.Command("iptables", append([]string{"-w", "-t", "mangle"}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables -t mangle %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func netpolJump(chain string) []string {
	return []string{"POSTROUTING", "-m", "comment", "--comment", "slipway real node NetworkPolicies", "-j", chain}
}

// deleteNetpolChain removes the node's chain and the jump to it, when they are there (Stop, and
// the sweep after a node whose process died).
func deleteNetpolChain(chain string) error {
	if chain == "" || exec.Command("iptables", "-w", "-t", "mangle", "-S", chain).Run() != nil {
		return nil
	}
	var errs []error
	for _, args := range [][]string{append([]string{"-D"}, netpolJump(chain)...), {"-F", chain}, {"-X", chain}} {
		if out, err := exec.Command("iptables", append([]string{"-w", "-t", "mangle"}, args...)...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("iptables -t mangle %s: %w: %s", strings.Join(args, " "), err, out))
		}
	}
	return errors.Join(errs...)
}
