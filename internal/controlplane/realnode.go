package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/slipway-dev/slipway/internal/ociimage"
)

// A real node: containerd (Debian's, with runc) and a kubelet built from k8s.io/kubernetes
// (hack/controlplane.sh), registered with the control plane's API server beside kwok's nodes.
// Pods on it are real containers on a bridge network of their own (the bridge and host-local CNI
// plugins of containernetworking-plugins, on a private /24 that exists only on this machine: no
// masquerade, no route out). Only pods that tolerate RealNodeTaint land on it; select it with
// RealNodeLabel. Stop leaves nothing behind: containers, shims, mounts, network namespaces, the
// bridge, iptables rules and the kernel settings the kubelet and the bridge plugin change.
//
// It needs root, cgroups (v1 or v2) and Debian's containerd, runc, containernetworking-plugins,
// busybox-static and iptables (hack/deps.sh).

const (
	// RealNodeLabel (value "true") is on every real node.
	RealNodeLabel = "slipway.dev/real-node"
	// RealNodeTaint (value "true", NoSchedule) keeps the pods that do not tolerate it off real nodes.
	RealNodeTaint = "slipway.dev/real-node"
	// cniBinDir holds Debian's CNI plugins.
	cniBinDir = "/usr/lib/cni"
)

// RealNodeTolerations are what a pod needs to run on a real node (with a node selector
// RealNodeLabel=true).
func RealNodeTolerations() []corev1.Toleration {
	return []corev1.Toleration{{Key: RealNodeTaint, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
}

// RealNodeNamespaceAnnotations put every pod of a namespace on the real node, whatever its spec
// says: the PodNodeSelector admission plugin adds the node selector RealNodeLabel=true and
// PodTolerationRestriction the toleration of RealNodeTaint. The API server runs with both plugins
// when the control plane starts with its real node (Options.RealNode).
func RealNodeNamespaceAnnotations() map[string]string {
	return map[string]string{
		"scheduler.alpha.kubernetes.io/node-selector":      RealNodeLabel + "=true",
		"scheduler.alpha.kubernetes.io/defaultTolerations": `[{"key":"` + RealNodeTaint + `","operator":"Equal","value":"true","effect":"NoSchedule"}]`,
	}
}

// RealNodeOptions configures a real node.
type RealNodeOptions struct {
	// Name of the Node; default "real-node".
	Name string
	// InsecureRegistries are registries on this machine (loopback, "host:port") that the node's
	// containerd pulls from over plain HTTP: a test's or make dev's registry, where pods find
	// images pushed there (registry.mirrors of a real node's containerd, as hosts.toml files).
	InsecureRegistries []string
}

// RealNode is a running real node.
type RealNode struct {
	Name string
	// Subnet is the pod network (a private /24), Gateway the bridge's address on it.
	Subnet  *net.IPNet
	Gateway net.IP
	// Bridge is the name of the Linux bridge the pods are attached to.
	Bridge string
	// Dir holds containerd's and the kubelet's state, configuration and socket.
	Dir string

	logDir     string
	registries []string
	socket     string
	containerd *process
	kubelet    *process
	netpol     *process
	record     nodeRecord
	files      []*os.File
	// processesStopped and stopped: Stop's two halves are done.
	processesStopped, stopped bool
}

// StartRealNode starts a real node and waits until its Node is Ready. Stop (or the control plane's
// Stop) removes it.
func (cp *ControlPlane) StartRealNode(ctx context.Context, opts RealNodeOptions) (*RealNode, error) {
	n, err := cp.prepareRealNode(opts)
	if err != nil {
		return nil, err
	}
	if err := n.start(ctx, cp); err != nil {
		return nil, errors.Join(err, n.Stop())
	}
	return n, nil
}

// prepareRealNode checks what a real node needs, registers it, and makes its directory, its
// configuration and its bridge with the gateway address; start starts it. The control plane's
// Stop stops it from then on.
func (cp *ControlPlane) prepareRealNode(opts RealNodeOptions) (n *RealNode, err error) {
	if opts.Name == "" {
		opts.Name = "real-node"
	}
	for _, need := range []string{"/usr/bin/containerd", "/usr/bin/ctr", "/usr/sbin/runc", filepath.Join(cniBinDir, "bridge"),
		filepath.Join(cniBinDir, "host-local"), busyboxPath, "/usr/sbin/nft", filepath.Join(cp.assets, "kubelet"),
		filepath.Join(cp.assets, networkPolicyBinary)} {
		if _, err := os.Stat(need); err != nil {
			return nil, fmt.Errorf("real node: %s missing (hack/deps.sh installs containerd, runc, containernetworking-plugins, "+
				"busybox-static and nftables; hack/controlplane.sh builds the kubelet and the NetworkPolicy controller): %w", need, err)
		}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("real node: needs root (containers, network namespaces, a bridge)")
	}
	if err := checkLocalRegistries(opts.InsecureRegistries); err != nil {
		return nil, err
	}
	n = &RealNode{Name: opts.Name, logDir: cp.LogDir, registries: opts.InsecureRegistries}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
			n = nil
		}
	}()
	if err := n.register(); err != nil {
		return n, err
	}
	if err := n.writeConfig(); err != nil {
		return n, err
	}
	if err := n.createBridge(); err != nil {
		return n, err
	}
	cp.realNodes = append(cp.realNodes, n)
	return n, nil
}

// start starts containerd with the node's images and the kubelet, and waits until the Node is Ready.
func (n *RealNode) start(ctx context.Context, cp *ControlPlane) error {
	start := time.Now()
	n.containerd = &process{name: "containerd", path: "/usr/bin/containerd", args: []string{"--config", filepath.Join(n.Dir, "containerd.toml")}}
	if err := n.containerd.start(n.logFile("containerd.log")); err != nil {
		return err
	}
	if err := n.waitContainerd(ctx); err != nil {
		return err
	}
	if err := n.importImages(ctx); err != nil {
		return err
	}
	n.logf("containerd up with images in %s", time.Since(start).Round(time.Millisecond))

	kubeconfig, err := cp.nodeKubeconfig(ctx, n.Name, filepath.Join(n.Dir, "kubelet.kubeconfig"))
	if err != nil {
		return err
	}
	serve := n.kubeletServing(cp.kubeletClientCA)
	kubeletConfig, err := n.writeKubeletConfig(serve)
	if err != nil {
		return err
	}
	n.kubelet = &process{name: "kubelet", path: filepath.Join(cp.assets, "kubelet"), args: []string{
		"--config=" + kubeletConfig,
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + filepath.Join(n.Dir, "kubelet"),
		"--hostname-override=" + n.Name,
		"--node-labels=" + RealNodeLabel + "=true",
		"--v=2",
	}}
	if serve.nodeIP != "" {
		n.kubelet.args = append(n.kubelet.args, "--node-ip="+serve.nodeIP)
	}
	if err := n.kubelet.start(n.logFile("kubelet.log")); err != nil {
		return err
	}
	if err := n.startNetworkPolicies(ctx, cp); err != nil {
		return err
	}
	if err := n.waitReady(ctx, cp.Client); err != nil {
		return err
	}
	n.logf("node %s Ready %s after start", n.Name, time.Since(start).Round(time.Millisecond))
	return nil
}

// register, under the machine lock: sweeps up after dead nodes, records the machine's state when
// no other node runs, makes the node's directory, picks its network, makes its cgroups and records
// the node for Stop and for a later sweep.
func (n *RealNode) register() (err error) {
	unlock, err := lockMachine()
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := sweepLocked(); err != nil {
		return fmt.Errorf("real node: cleaning up after a real node that was not stopped: %w", err)
	}
	if len(loadRecords()) == 0 {
		if _, err := os.Stat(filepath.Join(cgroupRoot, "memory", "kubepods")); err == nil {
			return errors.New("real node: /sys/fs/cgroup/memory/kubepods exists: a kubelet of something else runs on this machine")
		}
		h, err := recordHost()
		if err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(machineDir, "host.json"), h); err != nil {
			return err
		}
	}
	// A short directory: containerd's socket path must fit a sockaddr_un (108 bytes).
	if n.Dir, err = os.MkdirTemp("", "slipway-node-"); err != nil {
		return err
	}
	n.socket = filepath.Join(n.Dir, "containerd.sock")
	n.record = nodeRecord{Dir: n.Dir, Socket: n.socket, Cgroup: filepath.Base(n.Dir), Owner: os.Getpid(), OwnerStart: processStart(os.Getpid())}
	if err := n.pickNetwork(); err != nil {
		return err
	}
	if err := cgroupCreate(n.record.Cgroup); err != nil {
		return err
	}
	return writeJSON(n.record.file(), n.record)
}

// nodeKubeconfig writes a kubeconfig for the node's user (system:node:NAME in system:nodes), bound
// to the system:node ClusterRole, as a node's credentials are in a cluster.
func (cp *ControlPlane) nodeKubeconfig(ctx context.Context, name, path string) (string, error) {
	user := "system:node:" + name
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "slipway-real-node-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := cp.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("binding the node's user: %w", err)
	}
	return cp.writeUserKubeconfig(path, envtest.User{Name: user, Groups: []string{"system:nodes"}})
}

// pickNetwork chooses a bridge and a /24 in 10.251.0.0/16 that no interface or route uses.
func (n *RealNode) pickNetwork() error {
	routes, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	// The bridge plugin makes the bridge at the first pod: other nodes' records name theirs.
	taken := map[string]bool{}
	for _, r := range loadRecords() {
		taken[r.Bridge] = true
	}
	for i := 0; i < 256; i++ {
		bridge := fmt.Sprintf("slwbr%d", i)
		prefix := fmt.Sprintf("10.251.%d.", i)
		if _, err := os.Stat("/sys/class/net/" + bridge); err == nil || taken[bridge] || strings.Contains(string(routes), prefix) {
			continue
		}
		_, subnet, _ := net.ParseCIDR(prefix + "0/24")
		n.Bridge, n.Subnet, n.Gateway = bridge, subnet, net.ParseIP(prefix+"1")
		n.record.Bridge = bridge
		return nil
	}
	return errors.New("real node: no free /24 in 10.251.0.0/16")
}

// createBridge makes the pods' bridge with the gateway address before any pod exists (the bridge
// plugin takes it as it finds it), so that the machine is reachable from the pods at Gateway from
// the start: a server of the machine can listen there before the first pod.
func (n *RealNode) createBridge() error {
	ones, _ := n.Subnet.Mask.Size()
	for _, args := range [][]string{
		{"link", "add", n.Bridge, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("%s/%d", n.Gateway, ones), "dev", n.Bridge},
		{"link", "set", n.Bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// writeConfig writes containerd's configuration and the CNI network. The network has no gateway
// role (isGateway false): pods get an address and the subnet's route only, no default route, so a
// packet for anything but the bridge's subnet (a ClusterIP that nothing routes, an outside
// address) fails in the pod at once ("network unreachable") instead of being forwarded by the
// machine; the bridge plugin then leaves ip_forward alone too. The machine is still at Gateway on
// the subnet (createBridge gives the bridge that address).
func (n *RealNode) writeConfig() error {
	for _, d := range []string{"cni/net.d", "cni/ipam", "containerd/root", "containerd/state", "containerd/opt", "runc", "kubelet", "pod-logs", "volume-plugins"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			return err
		}
	}
	cni := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "slipway-real-node",
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": false,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": %q,
      "ranges": [[{"subnet": %q, "gateway": %q}]]
    }
  }]
}
`, n.Bridge, filepath.Join(n.Dir, "cni/ipam"), n.Subnet.String(), n.Gateway.String())
	if err := os.WriteFile(filepath.Join(n.Dir, "cni/net.d/10-slipway.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	d := func(p string) string { return strconv.Quote(filepath.Join(n.Dir, p)) }
	config := `version = 2
root = ` + d("containerd/root") + `
state = ` + d("containerd/state") + `
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = ` + strconv.Quote(n.socket) + `

[ttrpc]
  address = ` + strconv.Quote(n.socket+".ttrpc") + `

[plugins."io.containerd.internal.v1.opt"]
  path = ` + d("containerd/opt") + `

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "` + PauseImage + `"
  # runc cannot write oom_score_adj here (CAP_SYS_RESOURCE is not in the bounding set).
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Pod network namespaces under state (StateDir/netns), not in the machine's /run/netns.
  netns_mounts_under_state_dir = true
  # Every pod may bind ports below 1024 without a capability (net.ipv4.ip_unprivileged_port_start
  # 0 in its network namespace), as containerd 2 does by default: a nonroot image serves port 80.
  enable_unprivileged_ports = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = ` + d("runc") + `
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "` + cniBinDir + `"
    conf_dir = ` + d("cni/net.d") + `
    max_conf_num = 1
  # A hosts.toml per registry (InsecureRegistries); no directory, no registry configured.
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ` + d("certs.d") + `
`
	if err := n.writeRegistryHosts(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.Dir, "containerd.toml"), []byte(config), 0o644)
}

// checkLocalRegistries refuses a registry that is not "host:port" on this machine's loopback:
// nothing a node pulls may come from elsewhere.
func checkLocalRegistries(registries []string) error {
	for _, r := range registries {
		host, port, err := net.SplitHostPort(r)
		if err != nil || port == "" {
			return fmt.Errorf("real node: insecure registry %q: want host:port", r)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("real node: insecure registry %q: only a registry on this machine's loopback (127.0.0.1, ::1, localhost) is allowed", r)
		}
	}
	return nil
}

// writeRegistryHosts writes containerd's hosts.toml for each registry of InsecureRegistries.
func (n *RealNode) writeRegistryHosts() error {
	for _, r := range n.registries {
		if err := n.writeRegistryHost(r); err != nil {
			return err
		}
	}
	return nil
}

// AddInsecureRegistry lets the running node pull from registry ("host:port") over plain HTTP,
// as InsecureRegistries does at its start: containerd reads the hosts.toml files at every pull.
// The registry must be on this machine: on loopback, or at the node's Gateway (a server the
// machine listens with there for its pods, as make dev's registry).
func (n *RealNode) AddInsecureRegistry(registry string) error {
	host, _, err := net.SplitHostPort(registry)
	if err == nil && net.ParseIP(host).Equal(n.Gateway) {
		return n.writeRegistryHost(registry)
	}
	if err := checkLocalRegistries([]string{registry}); err != nil {
		return fmt.Errorf("%w, or the node's gateway %s", err, n.Gateway)
	}
	return n.writeRegistryHost(registry)
}

// writeRegistryHost writes the hosts.toml of one registry: pull and resolve over plain HTTP
// from the registry itself.
func (n *RealNode) writeRegistryHost(registry string) error {
	dir := filepath.Join(n.Dir, "certs.d", registry)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+registry, "http://"+registry)
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644)
}

// kubeletServing is where a node's kubelet serves its API and whom it lets in.
type kubeletServing struct {
	// address is what it listens on; nodeIP its Node's InternalIP ("": the kubelet's own choice).
	address, nodeIP string
	// clientCA, when set, is the only CA of its clients (kube-apiserver's certificate).
	clientCA string
}

// kubeletServing: with kube-apiserver's client certificate (clientCA), the kubelet serves on this
// machine's address, its Node's InternalIP, which kube-apiserver dials for pods/log, exec and
// port-forward, and lets in that certificate alone (no anonymous access, no token review). Without
// it, or when the machine has no address to serve on, it serves on 127.0.0.1, which kube-apiserver
// does not dial: those requests fail (a failed container's log end is still in its termination
// message).
func (n *RealNode) kubeletServing(clientCA string) kubeletServing {
	if clientCA == "" {
		return kubeletServing{address: "127.0.0.1"}
	}
	ip, err := utilnet.ChooseHostInterface()
	if err != nil {
		n.logf("no address of this machine to serve the kubelet on (%v): 127.0.0.1, and kube-apiserver cannot reach it", err)
		return kubeletServing{address: "127.0.0.1"}
	}
	return kubeletServing{address: ip.String(), nodeIP: ip.String(), clientCA: clientCA}
}

func (n *RealNode) writeKubeletConfig(serve kubeletServing) (string, error) {
	port, err := freeTCPPort()
	if err != nil {
		return "", err
	}
	x509 := ""
	if serve.clientCA != "" {
		x509 = "\n  x509: {clientCAFile: " + serve.clientCA + "}"
	}
	config := `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine kind has cgroup v1 and no systemd.
failCgroupV1: false
cgroupDriver: cgroupfs
# The node's own cgroup tree (made in every hierarchy by cgroupCreate): nodes side by side, and
# what is left in it after a crash, are told apart.
cgroupRoot: /` + n.record.Cgroup + `
containerRuntimeEndpoint: unix://` + n.socket + `
address: ` + serve.address + `
port: ` + strconv.Itoa(port) + `
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}` + x509 + `
authorization:
  mode: AlwaysAllow
failSwapOn: false
# No KUBE-FIREWALL chain (it drops traffic to 127.0.0.0/8 from other addresses): nothing needs it.
makeIPTablesUtilChains: false
resolvConf: ""
registerWithTaints:
- {key: ` + RealNodeTaint + `, value: "true", effect: NoSchedule}
podLogsDir: ` + filepath.Join(n.Dir, "pod-logs") + `
volumePluginDir: ` + filepath.Join(n.Dir, "volume-plugins") + `
# Images are imported, never pulled: never collect them, never evict for disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# An imported image is any pod's, even once the kubelet has pulled the same image (same digest)
# under another name from a registry: by default (NeverVerifyPreloadedImages) that pull's record
# would make the kubelet pull the imported name for the next pod, which resolves nowhere.
imagePullCredentialsVerificationPolicy: NeverVerify
evictionHard:
  memory.available: 1Mi
  nodefs.available: 0%
  nodefs.inodesFree: 0%
  imagefs.available: 0%
  imagefs.inodesFree: 0%
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
serializeImagePulls: false
`
	path := filepath.Join(n.Dir, "kubelet.yaml")
	return path, os.WriteFile(path, []byte(config), 0o644)
}

func freeTCPPort() (int, error) { return freeTCPPortOn(net.IPv4(127, 0, 0, 1)) }

func freeTCPPortOn(ip net.IP) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// cri is a client of containerd's CRI service.
func (n *RealNode) cri() (runtimeapi.RuntimeServiceClient, func(), error) {
	conn, err := grpc.NewClient("unix://"+n.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return runtimeapi.NewRuntimeServiceClient(conn), func() { _ = conn.Close() }, nil
}

func (n *RealNode) waitContainerd(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rt, closeConn, err := n.cri()
	if err != nil {
		return err
	}
	defer closeConn()
	for {
		st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
		if err == nil && st.Status != nil {
			return nil
		}
		if exited, perr := n.containerd.exited(); exited {
			return fmt.Errorf("containerd exited (see %s): %w", filepath.Join(n.logDir, "containerd.log"), perr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for containerd's CRI service: %w", errors.Join(ctx.Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ImportImages imports images (one per platform, as internal/ociimage builds them) into the node's
// containerd as ref, where pods with imagePullPolicy Never or IfNotPresent find them.
func (n *RealNode) ImportImages(ctx context.Context, ref string, images []v1.Image) error {
	layout, err := os.MkdirTemp(n.Dir, "layout-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(layout) }()
	if _, err := ociimage.WriteLayout(layout, ref, images); err != nil {
		return fmt.Errorf("writing %s as an OCI layout: %w", ref, err)
	}
	// ctr names an imported image after io.containerd.image.name; the layout names it in
	// org.opencontainers.image.ref.name only.
	index, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil {
		return err
	}
	var idx map[string]any
	if err := json.Unmarshal(index, &idx); err != nil {
		return err
	}
	manifests, _ := idx["manifests"].([]any)
	for _, m := range manifests {
		if desc, ok := m.(map[string]any); ok {
			ann, _ := desc["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
			}
			ann["io.containerd.image.name"] = ref
			desc["annotations"] = ann
		}
	}
	if index, err = json.Marshal(idx); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(layout, "index.json"), index, 0o644); err != nil {
		return err
	}
	archive := layout + ".tar"
	defer func() { _ = os.Remove(archive) }()
	if out, err := exec.CommandContext(ctx, "tar", "-C", layout, "-cf", archive, ".").CombinedOutput(); err != nil {
		return fmt.Errorf("archiving the layout of %s: %w: %s", ref, err, out)
	}
	return n.importArchive(ctx, ref, archive)
}

func (n *RealNode) importArchive(ctx context.Context, ref, archive string) error {
	out, err := exec.CommandContext(ctx, "/usr/bin/ctr", "--address", n.socket, "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing %s: %w: %s", ref, err, out)
	}
	return nil
}

// importImages builds the node's images and imports them into containerd's k8s.io namespace.
func (n *RealNode) importImages(ctx context.Context) error {
	images, err := realNodeImages()
	if err != nil {
		return err
	}
	for i, img := range images {
		file := filepath.Join(n.Dir, fmt.Sprintf("image-%d.tar", i))
		if err := img.WriteArchive(file); err != nil {
			return fmt.Errorf("building %s: %w", img.Ref, err)
		}
		if err := n.importArchive(ctx, img.Ref, file); err != nil {
			return err
		}
		_ = os.Remove(file)
	}
	return nil
}

func (n *RealNode) waitReady(ctx context.Context, c client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		var node corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: n.Name}, &node); err == nil && countReady([]corev1.Node{node}) == 1 {
			return nil
		}
		for _, p := range []*process{n.containerd, n.kubelet} {
			if exited, err := p.exited(); exited {
				return fmt.Errorf("%s exited while waiting for node %s (see %s): %w", p.name, n.Name, n.logDir, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for real node %s to be Ready: %w (logs in %s)", n.Name, ctx.Err(), n.logDir)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops the kubelet, removes every pod sandbox through the CRI (containerd then stops the
// containers, calls CNI DEL and removes the network namespaces), stops containerd, and cleans up:
// leftover shims and container processes killed, mounts under Dir unmounted, the bridge deleted,
// the node's cgroups and Dir removed. The last real node to stop also puts the machine back as it
// was before the first started: the iptables rules and chains added since removed, ip_forward and
// the kernel settings the kubelet changes restored, the directories made outside removed. Safe to
// call twice.
func (n *RealNode) Stop() error {
	return errors.Join(n.stopProcesses(), n.cleanup())
}

// stopProcesses stops the kubelet, the pods and containerd; cleanup then removes the rest. The
// control plane's Stop runs cleanup after its own processes ended, as they may talk to the API
// server on the bridge's gateway address, which goes with the bridge.
func (n *RealNode) stopProcesses() error {
	if n == nil || n.processesStopped {
		return nil
	}
	n.processesStopped = true
	var errs []error
	if n.kubelet != nil {
		errs = append(errs, n.kubelet.stop(10*time.Second))
	}
	if n.netpol != nil {
		// On SIGTERM it removes its nftables table.
		errs = append(errs, n.netpol.stop(10*time.Second))
	}
	if n.containerd != nil {
		if exited, _ := n.containerd.exited(); !exited {
			errs = append(errs, n.removeSandboxes())
		}
		errs = append(errs, n.containerd.stop(10*time.Second))
	}
	return errors.Join(errs...)
}

func (n *RealNode) cleanup() error {
	if n == nil || n.stopped {
		return nil
	}
	n.stopped = true
	var errs []error
	for _, f := range n.files {
		_ = f.Close()
	}
	n.files = nil
	if n.Dir != "" {
		unlock, err := lockMachine()
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		defer unlock()
		errs = append(errs, cleanupNode(n.record), restoreIfLast())
	}
	return errors.Join(errs...)
}

// removeSandboxes stops and removes every pod sandbox (and so its containers) through the CRI.
func (n *RealNode) removeSandboxes() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, closeConn, err := n.cri()
	if err != nil {
		return err
	}
	defer closeConn()
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing pod sandboxes: %w", err)
	}
	var errs []error
	for _, s := range list.Items {
		errs = append(errs, removeSandbox(ctx, rt, s))
	}
	return errors.Join(errs...)
}

// removeSandbox stops and removes one pod sandbox, again every 200 ms until ctx ends while
// containerd refuses: a container the kubelet was starting when it stopped is "in starting state"
// for a moment, and containerd removes no sandbox holding one (make dev's down met it while the
// manager's deployment rolled the operator's pod).
func removeSandbox(ctx context.Context, rt runtimeapi.RuntimeServiceClient, s *runtimeapi.PodSandbox) error {
	for {
		_, stopErr := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id})
		_, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("removing pod sandbox %s: %w", s.Metadata.GetName(), errors.Join(stopErr, err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// RSS is the resident memory of containerd and the kubelet, in bytes.
func (n *RealNode) RSS() (int64, error) {
	var pids []int
	for _, p := range []*process{n.containerd, n.kubelet} {
		if p != nil {
			pids = append(pids, p.pid())
		}
	}
	return rssOf(pids)
}

func (n *RealNode) logFile(name string) *os.File {
	f, err := os.OpenFile(filepath.Join(n.logDir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		f, _ = os.Open(os.DevNull)
	}
	n.files = append(n.files, f)
	return f
}

// logf notes a step in realnode.log.
func (n *RealNode) logf(format string, args ...any) {
	f := n.logFile("realnode.log")
	_, _ = fmt.Fprintf(f, time.Now().UTC().Format(time.RFC3339Nano)+" "+format+"\n", args...)
}

// RealNodes are the control plane's running real nodes.
func (cp *ControlPlane) RealNodes() []*RealNode { return cp.realNodes }
