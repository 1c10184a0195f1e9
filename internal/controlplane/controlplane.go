// Package controlplane starts a real local Kubernetes control plane as processes: etcd and
// kube-apiserver through envtest, and for the full mode kube-controller-manager, kube-scheduler and
// kwok with fake nodes, so Deployments become available, Jobs complete, garbage collection and
// namespace deletion work. The binaries come from hack/controlplane.sh (built from Go modules).
//
// Tests use it through the testenv package; `make dev` uses it through cmd/devenv.
package controlplane

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// Mode selects which components run.
type Mode int

const (
	// Light runs etcd and kube-apiserver only: enough for controller tests.
	Light Mode = iota
	// Full adds kube-controller-manager, kube-scheduler and kwok with fake nodes.
	Full
)

func (m Mode) String() string {
	if m == Full {
		return "full"
	}
	return "light"
}

// FakeNodeAnnotation marks the Nodes kwok manages.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// Job pod outcome controls understood by the kwok stages (see kwok-stages.yaml).
const (
	// FailLabel on a Job's pod template makes its pods fail with exit code 1.
	FailLabel = "slipway.dev/kwok-fail"
	// DurationAnnotation on a Job's pod template sets how long its pods run ("5s"); default 0.
	DurationAnnotation = "slipway.dev/kwok-duration"
	// ExitCodeAnnotation on a failing Job's pod template sets the container's exit code (default 1).
	ExitCodeAnnotation = "slipway.dev/kwok-exit-code"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

// Options configures a control plane.
type Options struct {
	Mode Mode
	// AssetsDir holds the binaries; defaults to $KUBEBUILDER_ASSETS.
	AssetsDir string
	// LogDir receives one log file per component; created when missing.
	LogDir string
	// CRDs are installed and waited for before Start returns.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Scheme for the client handed back; defaults to client-go's scheme.
	Scheme *runtime.Scheme
	// Nodes is the number of kwok nodes in full mode (default 1).
	Nodes int
	// WebhookInstallOptions are passed to envtest (webhook configurations and serving certs).
	WebhookInstallOptions envtest.WebhookInstallOptions
	// RealNode, in full mode, adds a real node (containerd and a kubelet, see realnode.go) beside
	// the kwok nodes; nil for none.
	RealNode *RealNodeOptions
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	Mode Mode
	// Config is an admin rest.Config.
	Config *rest.Config
	// Client is a client for Config.
	Client client.Client
	// Kubeconfig is the path of an admin kubeconfig file (system:masters) in LogDir.
	Kubeconfig string
	// LogDir holds the component logs.
	LogDir string
	// Env is the underlying envtest environment.
	Env *envtest.Environment

	assets string
	procs  []*process
	files  []*os.File
	// certDir holds kube-apiserver's serving certificate, client CA and service-account key. It is
	// ours, not envtest's, so a restart of the apiserver finds the same ones (see RestartAPIServer).
	certDir string
	// kubeletClientCA is the certificate kube-apiserver presents to the real nodes' kubelets
	// (pods/log, exec, port-forward), which they trust as their only client CA; empty without a
	// real node at the start, when the kubelets serve on 127.0.0.1 alone.
	kubeletClientCA string
	// binDir holds the wrappers that start etcd and kube-apiserver with a parent-death signal
	// (dieWithParent).
	binDir string
	// dataDir is etcd's data directory when the control plane made it (etcdDataDir).
	dataDir string
	// etcdPIDs and apiserverPIDs are etcd's and kube-apiserver's processes, for reading only.
	etcdPIDs, apiserverPIDs []int
	// realNodes are stopped first by Stop.
	realNodes []*RealNode
}

// Start brings the control plane up and returns once it is usable: the apiserver serves, the CRDs
// are established and, in full mode, the fake nodes are Ready and kube-controller-manager runs its
// controllers.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	assets := opts.AssetsDir
	if assets == "" {
		assets = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if assets == "" {
		return nil, errors.New("no control-plane binaries: set KUBEBUILDER_ASSETS to the directory " +
			"printed by hack/controlplane.sh (make test and make dev do this)")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no kube-apiserver in KUBEBUILDER_ASSETS=%s: run hack/controlplane.sh: %w", assets, err)
	}
	if opts.LogDir == "" {
		return nil, errors.New("controlplane: LogDir is required")
	}
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	if opts.Nodes == 0 {
		opts.Nodes = 1
	}
	cp = &ControlPlane{Mode: opts.Mode, LogDir: opts.LogDir, assets: assets}
	defer func() {
		if err != nil {
			err = errors.Join(err, cp.Stop())
			cp = nil
		}
	}()

	// A real node's network comes first: its gateway is where kube-apiserver serves, so that pods
	// reach it (and its serving certificate names that address).
	var realNode *RealNode
	if opts.Mode == Full && opts.RealNode != nil {
		if realNode, err = cp.prepareRealNode(*opts.RealNode); err != nil {
			return cp, fmt.Errorf("preparing the real node: %w", err)
		}
	}

	// etcd and kube-apiserver through wrappers that give them a parent-death signal: envtest starts
	// them with a SysProcAttr of its own.
	if cp.binDir, err = os.MkdirTemp("", "slipway-controlplane-bin-"); err != nil {
		return cp, err
	}
	etcdPath, err := dieWithParent(cp.binDir, filepath.Join(assets, "etcd"))
	if err != nil {
		return cp, err
	}
	apiserverPath, err := dieWithParent(cp.binDir, filepath.Join(assets, "kube-apiserver"))
	if err != nil {
		return cp, err
	}

	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDs:                     opts.CRDs,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   opts.Scheme,
		WebhookInstallOptions:    opts.WebhookInstallOptions,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if env.Scheme == nil {
		env.Scheme = defaultScheme()
	}
	apiserver := env.ControlPlane.GetAPIServer()
	apiserver.Path = apiserverPath
	apiserver.Out, apiserver.Err = cp.logFile("kube-apiserver.log"), cp.logFile("kube-apiserver.log")
	// A directory envtest did not make: envtest deletes its own on Stop, and a restarted apiserver
	// would then serve a new certificate that no kubeconfig written before trusts.
	if cp.certDir, err = os.MkdirTemp("", "slipway-apiserver-"); err != nil {
		return cp, err
	}
	apiserver.CertDir = cp.certDir
	// On SIGTERM, end the open watches within seconds (clients reconnect, as they do when a
	// cluster's apiserver restarts); without it the shutdown waits a minute for them.
	apiserver.Configure().Set("shutdown-watch-termination-grace-period", "5s")
	if realNode != nil {
		// Served on the real node's gateway (a local address like 127.0.0.1 for this machine's
		// clients), and with the ServiceAccount admission plugin that envtest disables: pods on
		// the real node get their token and reach the API server in-cluster (with
		// KUBERNETES_SERVICE_HOST/PORT set to the gateway: no kube-proxy makes the kubernetes
		// Service's ClusterIP reachable).
		port, err := freeTCPPortOn(realNode.Gateway)
		if err != nil {
			return cp, err
		}
		apiserver.Address, apiserver.Port = realNode.Gateway.String(), strconv.Itoa(port)
		apiserver.Configure().Disable("disable-admission-plugins")
		// Webhooks (and aggregated APIs) are called at their Service's endpoints, pod IPs on the
		// node's bridge, not at the ClusterIP that nothing routes.
		apiserver.Configure().Set("enable-aggregator-routing", "true")
		// A namespace annotated with RealNodeNamespaceAnnotations sends all its pods to the real
		// node (the workloads of make dev that run real containers), with no change to them.
		apiserver.Configure().Set("enable-admission-plugins", "PodNodeSelector,PodTolerationRestriction")
		// pods/log, exec and port-forward dial a node's kubelet at its first address of these
		// types. The default puts Hostname first, and "real-node" would be looked up in the
		// machine's DNS (a query leaving the machine, for nothing: the name resolves nowhere);
		// the InternalIP is this machine's own address.
		apiserver.Configure().Set("kubelet-preferred-address-types", "InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP")
		if err := cp.kubeletClient(apiserver.Configure()); err != nil {
			return cp, err
		}
	}
	etcd := env.ControlPlane.Etcd
	if etcd == nil {
		etcd = &envtest.Etcd{}
		env.ControlPlane.Etcd = etcd
	}
	etcd.Path = etcdPath
	etcd.Out, etcd.Err = cp.logFile("etcd.log"), cp.logFile("etcd.log")
	if etcd.DataDir == "" {
		if etcd.DataDir, err = etcdDataDir(); err != nil {
			return cp, err
		}
		cp.dataDir = etcd.DataDir
	}
	// Objects the test suites and benchmarks create add up; give etcd room.
	etcd.Configure().Set("quota-backend-bytes", "8589934592")
	// The data dir is thrown away with the process, so durability buys nothing; skipping fsync
	// makes every write cheaper on slow disks.
	etcd.Configure().Set("unsafe-no-fsync", "true")
	cp.Env = env

	var cfg *rest.Config
	spawnThread(func() {
		etcdBefore, apiserverBefore := children("etcd"), children("kube-apiserver")
		cfg, err = env.Start()
		cp.etcdPIDs, cp.apiserverPIDs = newChildren(etcdBefore, "etcd"), newChildren(apiserverBefore, "kube-apiserver")
	})
	if err != nil {
		return cp, fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cp.Config = cfg
	if cp.Client, err = client.New(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		return cp, err
	}
	if cp.Kubeconfig, err = cp.WriteKubeconfig(filepath.Join(opts.LogDir, "kubeconfig"), "slipway-admin"); err != nil {
		return cp, err
	}
	if opts.Mode == Full {
		if err := cp.startFull(ctx, opts.Nodes); err != nil {
			return cp, err
		}
		if realNode != nil {
			if err := realNode.start(ctx, cp); err != nil {
				return cp, fmt.Errorf("starting the real node: %w", err)
			}
		}
	}
	return cp, nil
}

// WriteKubeconfig writes a kubeconfig for a new system:masters user to path and returns the path.
func (cp *ControlPlane) WriteKubeconfig(path, user string) (string, error) {
	return cp.writeUserKubeconfig(path, envtest.User{Name: user, Groups: []string{"system:masters"}})
}

// WriteUserKubeconfig writes a kubeconfig for the given user and groups (client-certificate auth).
func (cp *ControlPlane) writeUserKubeconfig(path string, u envtest.User) (string, error) {
	au, err := cp.Env.AddUser(u, nil)
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", u.Name, err)
	}
	data, err := au.KubeConfig()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// UserKubeconfig writes a kubeconfig for a user with the given groups (RBAC applies to it).
func (cp *ControlPlane) UserKubeconfig(path, user string, groups ...string) (string, error) {
	return cp.writeUserKubeconfig(path, envtest.User{Name: user, Groups: groups})
}

func (cp *ControlPlane) startFull(ctx context.Context, nodes int) error {
	stages := filepath.Join(cp.LogDir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
		return err
	}
	// The key envtest's apiserver signs ServiceAccount tokens with (its sa-signer.key).
	saKey := filepath.Join(cp.certDir, "sa-signer.key")
	for _, p := range workloadProcesses(cp.assets, cp.Kubeconfig, stages, fullTuning, saKey) {
		if err := p.start(cp.logFile(p.name + ".log")); err != nil {
			return err
		}
		cp.procs = append(cp.procs, p)
	}
	for i := range nodes {
		if err := cp.Client.Create(ctx, FakeNode(fmt.Sprintf("kwok-node-%d", i))); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating fake node: %w", err)
		}
	}
	if err := cp.waitNodesReady(ctx, nodes); err != nil {
		return err
	}
	return cp.waitControllersRunning(ctx)
}

// waitControllersRunning waits until kube-controller-manager runs its controllers: it builds them
// all first (the resource-quota controller's discovery among them) and exits if the API server
// goes away meanwhile, which an API server restart right after Start would otherwise hit. The
// ServiceAccount "default" of namespace "default", made by its serviceaccount controller, shows
// that building is over.
func (cp *ControlPlane) waitControllersRunning(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		var sa corev1.ServiceAccount
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "default"}, &sa)
		if err == nil {
			return nil
		}
		for _, p := range cp.procs {
			if exited, perr := p.exited(); exited {
				return fmt.Errorf("%s exited while waiting for kube-controller-manager's controllers (see %s): %w", p.name, cp.LogDir, perr)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-controller-manager's controllers (the default ServiceAccount): %w (logs in %s)",
				errors.Join(ctx.Err(), err), cp.LogDir)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// FakeNode returns a Node that kwok manages, with room for many pods.
func FakeNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{FakeNodeAnnotation: "fake"},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resourceQuantity("1000"),
				corev1.ResourceMemory: resourceQuantity("4Ti"),
				corev1.ResourcePods:   resourceQuantity("20000"),
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resourceQuantity("1000"),
				corev1.ResourceMemory: resourceQuantity("4Ti"),
				corev1.ResourcePods:   resourceQuantity("20000"),
			},
		},
	}
}

func (cp *ControlPlane) waitNodesReady(ctx context.Context, want int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		var nodes corev1.NodeList
		if err := cp.Client.List(ctx, &nodes); err == nil && countReady(nodes.Items) >= want {
			return nil
		}
		for _, p := range cp.procs {
			if exited, err := p.exited(); exited {
				return fmt.Errorf("%s exited while waiting for nodes (see %s): %w", p.name, cp.LogDir, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d Ready kwok node(s): %w (logs in %s)", want, ctx.Err(), cp.LogDir)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func countReady(nodes []corev1.Node) int {
	n := 0
	for _, node := range nodes {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// Stop stops every process in reverse start order, then the apiserver and etcd. It is safe to call
// more than once and on a partly started control plane.
func (cp *ControlPlane) Stop() error {
	var errs []error
	// Real nodes' processes first (their kubelets talk to the apiserver until they stop); the rest
	// of them (their bridges, whose gateway address the apiserver may serve on) last.
	for i := len(cp.realNodes) - 1; i >= 0; i-- {
		errs = append(errs, cp.realNodes[i].stopProcesses())
	}
	for i := len(cp.procs) - 1; i >= 0; i-- {
		errs = append(errs, cp.procs[i].stop(10*time.Second))
	}
	cp.procs = nil
	if cp.Env != nil && cp.Config != nil {
		errs = append(errs, cp.Env.Stop())
		cp.Config = nil
	}
	for _, f := range cp.files {
		_ = f.Close()
	}
	cp.files = nil
	for i := len(cp.realNodes) - 1; i >= 0; i-- {
		errs = append(errs, cp.realNodes[i].cleanup())
	}
	cp.realNodes = nil
	errs = append(errs, removeDirs(&cp.certDir, &cp.binDir, &cp.dataDir))
	return errors.Join(errs...)
}

// logFile opens (appending) a log file in LogDir; files are closed by Stop.
func (cp *ControlPlane) logFile(name string) *os.File {
	f, err := os.OpenFile(filepath.Join(cp.LogDir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		// LogDir was created by Start; failing here means the disk is gone. Discard output.
		f, _ = os.Open(os.DevNull)
	}
	cp.files = append(cp.files, f)
	return f
}

// kubeletClient gives kube-apiserver a client certificate for the kubelets (a self-signed one,
// the kubelets' only client CA): with it pods/log, exec and port-forward reach a real node's
// kubelet, which serves on this machine's address and refuses every other client.
func (cp *ControlPlane) kubeletClient(flags *envtest.Arguments) error {
	cert, key, err := selfsigned.GenerateClient(time.Now(), "kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return err
	}
	certPath, keyPath := filepath.Join(cp.certDir, "kubelet-client.crt"), filepath.Join(cp.certDir, "kubelet-client.key")
	if err := os.WriteFile(certPath, cert, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		return err
	}
	flags.Set("kubelet-client-certificate", certPath)
	flags.Set("kubelet-client-key", keyPath)
	cp.kubeletClientCA = certPath
	return nil
}
