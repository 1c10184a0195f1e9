package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// FleetOptions configures a Fleet.
type FleetOptions struct {
	// Servers is how many kube-apiservers to start (at least 1).
	Servers int
	// AssetsDir holds the binaries; defaults to $KUBEBUILDER_ASSETS.
	AssetsDir string
	// LogDir receives etcd.log and one kube-apiserver-<i>.log per server; created when missing.
	// With Workloads, also kube-controller-manager-<i>.log, kube-scheduler-<i>.log, kwok-<i>.log,
	// each server's admin kubeconfig-<i> and kwok-stages.yaml.
	LogDir string
	// Workloads runs kube-controller-manager (the few controllers of fleetControllers),
	// kube-scheduler and kwok against every server, with one fake node each: a Deployment becomes
	// Available and its pods Ready, as in a real cluster. About 200 MiB more per server.
	Workloads bool
}

// Fleet is one etcd with several kube-apiservers over it, each under its own --etcd-prefix: as
// many independent "clusters" as servers, for the memory of one etcd. Each server has its own
// serving certificate, client CA and service-account signing key, so a credential of one is
// refused by the others, as between real clusters. No CRDs are installed; controllers run only
// with FleetOptions.Workloads.
type Fleet struct {
	Etcd    *envtest.Etcd
	Servers []*FleetServer

	mu       sync.Mutex
	etcdPIDs []int
	files    []*os.File
	// binDir holds the wrappers that start etcd and the kube-apiservers with a parent-death signal
	// (dieWithParent).
	binDir string
	// dataDir is etcd's data directory (etcdDataDir).
	dataDir string
}

// FleetServer is one kube-apiserver of a Fleet.
type FleetServer struct {
	// Name is "cluster-<i>"; Prefix its --etcd-prefix.
	Name, Prefix string
	// Config is an admin (system:masters) rest.Config.
	Config *rest.Config
	// Kubeconfig is an admin (system:masters) kubeconfig with inline credentials.
	Kubeconfig []byte
	// NodeName is the name of the server's kwok node ("cluster-<i>-node"), with Workloads.
	NodeName string

	fleet   *Fleet
	plane   *envtest.ControlPlane // AddUser only; never started or stopped as a whole
	certDir string
	pids    []int
	stopped bool
	// workloads are kube-controller-manager, kube-scheduler and kwok, with Workloads.
	workloads []*process
}

// StartFleet starts etcd and opts.Servers kube-apiservers over it, and returns once every server
// answers /readyz and, with opts.Workloads, has a Ready node. On error, whatever was started is
// stopped.
func StartFleet(ctx context.Context, opts FleetOptions) (f *Fleet, err error) {
	assets := opts.AssetsDir
	if assets == "" {
		assets = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if assets == "" {
		return nil, errors.New("no control-plane binaries: set KUBEBUILDER_ASSETS to the directory " +
			"printed by hack/controlplane.sh (make test and make dev do this)")
	}
	if opts.Servers < 1 {
		return nil, fmt.Errorf("controlplane: a fleet needs at least one server, not %d", opts.Servers)
	}
	if opts.LogDir == "" {
		return nil, errors.New("controlplane: LogDir is required")
	}
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	f = &Fleet{}
	defer func() {
		if err != nil {
			err = errors.Join(err, f.Stop())
			f = nil
		}
	}()

	if f.binDir, err = os.MkdirTemp("", "slipway-fleet-bin-"); err != nil {
		return f, err
	}
	etcdPath, err := dieWithParent(f.binDir, filepath.Join(assets, "etcd"))
	if err != nil {
		return f, err
	}
	apiserverPath, err := dieWithParent(f.binDir, filepath.Join(assets, "kube-apiserver"))
	if err != nil {
		return f, err
	}
	etcdLog := f.logFile(opts.LogDir, "etcd.log")
	if f.dataDir, err = etcdDataDir(); err != nil {
		return f, err
	}
	f.Etcd = &envtest.Etcd{Path: etcdPath, Out: etcdLog, Err: etcdLog, DataDir: f.dataDir, StartTimeout: 2 * time.Minute}
	f.Etcd.Configure().Set("quota-backend-bytes", "8589934592")
	f.Etcd.Configure().Set("unsafe-no-fsync", "true")
	spawnThread(func() {
		before := children("etcd")
		err = f.Etcd.Start()
		f.etcdPIDs = newChildren(before, "etcd")
	})
	if err != nil {
		return f, fmt.Errorf("starting etcd: %w", err)
	}

	for i := range opts.Servers {
		s := &FleetServer{Name: fmt.Sprintf("cluster-%d", i), Prefix: fmt.Sprintf("/fleet/cluster-%d", i), fleet: f}
		if opts.Workloads {
			s.NodeName = s.Name + "-node"
		}
		if s.certDir, err = os.MkdirTemp("", "slipway-fleet-apiserver-"); err != nil {
			return f, err
		}
		f.Servers = append(f.Servers, s)
		out := f.logFile(opts.LogDir, fmt.Sprintf("kube-apiserver-%d.log", i))
		api := &envtest.APIServer{
			Path: apiserverPath, CertDir: s.certDir, EtcdURL: f.Etcd.URL,
			Out: out, Err: out, StartTimeout: 2 * time.Minute, StopTimeout: time.Minute,
		}
		api.Configure().Set("etcd-prefix", s.Prefix)
		api.Configure().Set("shutdown-watch-termination-grace-period", "5s")
		s.plane = &envtest.ControlPlane{APIServer: api, Etcd: f.Etcd}
		spawnThread(func() {
			before := children("kube-apiserver")
			err = api.Start()
			s.pids = newChildren(before, "kube-apiserver")
		})
		if err != nil {
			return f, fmt.Errorf("starting kube-apiserver %d: %w", i, err)
		}
		admin, err := s.plane.AddUser(envtest.User{Name: "slipway-admin", Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return f, fmt.Errorf("adding the admin user of kube-apiserver %d: %w", i, err)
		}
		s.Config = admin.Config()
		if s.Kubeconfig, err = admin.KubeConfig(); err != nil {
			return f, err
		}
	}
	for _, s := range f.Servers {
		if err := waitReadyz(ctx, s.Config); err != nil {
			return f, fmt.Errorf("%s: %w (logs in %s)", s.Name, err, opts.LogDir)
		}
	}
	if opts.Workloads {
		if err := f.startWorkloads(ctx, assets, opts.LogDir); err != nil {
			return f, err
		}
	}
	return f, nil
}

// UserKubeconfig returns a kubeconfig (inline client certificate) for a user with the given
// groups; RBAC applies to it.
func (s *FleetServer) UserKubeconfig(user string, groups ...string) ([]byte, error) {
	u, err := s.plane.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return nil, err
	}
	return u.KubeConfig()
}

// Stop stops this server only (SIGTERM, then kill), its workload processes first; the others and
// etcd go on. Safe to call twice.
func (s *FleetServer) Stop() error {
	s.fleet.mu.Lock()
	defer s.fleet.mu.Unlock()
	return s.stopLocked()
}

func (s *FleetServer) stopLocked() error {
	if s.stopped || s.plane == nil {
		return nil
	}
	s.stopped = true
	werr := s.stopWorkloads()
	err := s.plane.APIServer.Stop()
	return errors.Join(werr, err, os.RemoveAll(s.certDir))
}

// Stop stops every server, then etcd. Safe to call twice and on a partly started fleet.
func (f *Fleet) Stop() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, s := range f.Servers {
		errs = append(errs, s.stopLocked())
	}
	if f.Etcd != nil {
		errs = append(errs, f.Etcd.Stop())
		f.Etcd = nil
	}
	for _, file := range f.files {
		_ = file.Close()
	}
	f.files = nil
	errs = append(errs, removeDirs(&f.binDir, &f.dataDir))
	return errors.Join(errs...)
}

func (f *Fleet) logFile(dir, name string) *os.File {
	file, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		file, _ = os.Open(os.DevNull)
	}
	f.files = append(f.files, file)
	return file
}

// waitReadyz polls /readyz with cfg until it answers ok.
func waitReadyz(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-apiserver /readyz: %w", errors.Join(ctx.Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RSS is the resident memory of this server's kube-apiserver and workload processes
// (WorkloadRSS), in bytes (Linux /proc).
func (s *FleetServer) RSS() (int64, error) {
	return rssOf(append(slices.Clone(s.pids), s.workloadPIDs()...))
}

// EtcdRSS is the resident memory of the fleet's etcd, in bytes (Linux /proc).
func (f *Fleet) EtcdRSS() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return rssOf(f.etcdPIDs)
}

func rssOf(pids []int) (int64, error) {
	var total int64
	for _, pid := range pids {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, err
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("pid %d: VmRSS %q: %w", pid, rest, err)
				}
				total += kb << 10
			}
		}
	}
	return total, nil
}
