//go:build e2e

package charts_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// TestMain stops the PostgreSQL server the manager's install test starts.
func TestMain(m *testing.M) { pgtest.Main(m) }

// TestManagerChart_InstallsIntoFullControlPlane installs the manager's chart with the Helm SDK into
// the full control plane, in both database modes, each into a namespace that enforces Pod
// Security "restricted", with the Secrets the docs have you create. It checks the objects in the
// cluster (replicas, strategy, the PodDisruptionBudget counting the pods, the claim bound, every
// Secret the pods read present with its key) and that the pods were admitted and became
// available; then it runs the manager binary with each Deployment's own container arguments and
// environment, the Secrets and volumes materialised where the pod mounts them: the init container
// migrates, serve answers the readiness probe's route over TLS with the installed certificate,
// takes a token signed with the installed secret, and serves metrics. Upgrades: PostgreSQL scales
// down with the same strategy; SQLite refuses a second replica and keeps its database on uninstall.
func TestManagerChart_InstallsIntoFullControlPlane(t *testing.T) {
	// The binary first: a cold build takes minutes, which must not count against the deadline.
	operatorproc.BinaryOf(t, "./cmd/manager", "")
	env := testenv.New(t, testenv.Full)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const secrets = "encryptionKeys: {secretName: manager-keys}\nauth: {jwtSecret: {name: manager-jwt}}\ntls: {secretName: manager-tls}\n"

	t.Run("PostgreSQL", func(t *testing.T) {
		const ns = "manager-pg"
		inst := newManagerInstall(ctx, t, env, ns)
		inst.secret(ctx, "manager-db", corev1.SecretTypeOpaque, map[string][]byte{"url": []byte(pgtest.NewDatabase(t))})
		const values = secrets + "database: {engine: postgres, postgres: {urlSecret: {name: manager-db}}}\n"
		inst.install(ctx, values)
		d := inst.available(ctx, 3)
		if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
			t.Errorf("strategy %+v: want rolling updates that keep every replica", d.Spec.Strategy)
		}
		// The budget counts the three pods and lets one go at a time.
		testenv.Eventually(ctx, t, "the PodDisruptionBudget counts the replicas", func() (bool, error) {
			var pdb policyv1.PodDisruptionBudget
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: managerRelease}, &pdb); err != nil {
				return false, err
			}
			return pdb.Status.CurrentHealthy == 3 && pdb.Status.DisruptionsAllowed == 1, nil
		})
		inst.checkSecretsPresent(ctx, d)
		// Two replicas on one database: each migrates first (the second finds nothing to do), then serves.
		for range 2 {
			inst.run(ctx, d, "postgres")
		}

		up := inst.upgrade(ctx, values+"replicas: 2\n")
		if up.Info.Status != "deployed" {
			t.Fatalf("upgrade: %s", up.Info.Status)
		}
		d = inst.available(ctx, 2)
		if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Labels["helm.sh/chart"] != "slipway-manager-0.2.0" {
			t.Errorf("after the upgrade: strategy %s, chart %s", d.Spec.Strategy.Type, d.Labels["helm.sh/chart"])
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: managerRelease}, &policyv1.PodDisruptionBudget{}); err != nil {
			t.Errorf("the PodDisruptionBudget after the upgrade to 2 replicas: %v", err)
		}
	})

	t.Run("SQLite", func(t *testing.T) {
		const ns = "manager-sqlite"
		inst := newManagerInstall(ctx, t, env, ns)
		// The claim binds to a volume made for it, as a cluster without a default StorageClass needs.
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "manager-sqlite-data"}, Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/manager-sqlite"}},
		}}
		if err := env.Client.Create(ctx, pv); err != nil {
			t.Fatal(err)
		}
		inst.install(ctx, secrets)
		d := inst.available(ctx, 1)
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("strategy %s, want Recreate", d.Spec.Strategy.Type)
		}
		claim := &corev1.PersistentVolumeClaim{}
		testenv.Eventually(ctx, t, "the claim is bound", func() (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slipway-manager-data"}, claim)
			return err == nil && claim.Status.Phase == corev1.ClaimBound && claim.Spec.VolumeName == pv.Name, err
		})
		inst.checkSecretsPresent(ctx, d)
		inst.run(ctx, d, "sqlite")

		// A second replica is refused before anything changes.
		if _, err := inst.upgradeErr(ctx, secrets+"replicas: 2\n"); err == nil || !strings.Contains(err.Error(), "SQLite is one process per file") {
			t.Errorf("upgrading SQLite to 2 replicas: %v, want it refused", err)
		}
		if d := inst.available(ctx, 1); d.Generation != 1 {
			t.Errorf("the refused upgrade changed the Deployment (generation %d)", d.Generation)
		}
		// Uninstalling keeps the database.
		un := action.NewUninstall(inst.config())
		un.WaitStrategy = kube.HookOnlyStrategy
		if _, err := un.Run(managerRelease); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slipway-manager-data"}, &corev1.PersistentVolumeClaim{}); err != nil {
			t.Errorf("the claim after helm uninstall: %v, want it kept", err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: managerRelease}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("the Deployment after helm uninstall: %v", err)
		}
	})
}

// managerInstall is one release of the manager's chart in its own namespace.
type managerInstall struct {
	t   *testing.T
	env *testenv.Env
	ns  string
	// jwtSecret is the HS256 secret in the Secret manager-jwt; roots trust manager-tls's certificate.
	jwtSecret []byte
	roots     *x509.CertPool
}

// newManagerInstall creates the namespace, enforcing Pod Security "restricted" (a pod without a
// security context is refused, showing the level is enforced), and the Secrets every install
// needs, made as docs/manager.md says: the key file from gen-key's format, an HS256 secret, a
// kubernetes.io/tls certificate.
func newManagerInstall(ctx context.Context, t *testing.T, env *testenv.Env, ns string) *managerInstall {
	t.Helper()
	m := &managerInstall{t: t, env: env, ns: ns}
	level := map[string]string{}
	for _, mode := range []string{"enforce", "warn", "audit"} {
		level["pod-security.kubernetes.io/"+mode] = "restricted"
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: level}}); err != nil {
		t.Fatal(err)
	}
	loose := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "loose", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := env.Client.Create(ctx, loose, client.DryRunAll); err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
		t.Fatalf("namespace %s admits a pod without security context (%v): Pod Security is not enforced", ns, err)
	}
	key, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	m.secret(ctx, "manager-keys", corev1.SecretTypeOpaque, map[string][]byte{"keys": []byte(key + "\n")})
	raw := make([]byte, 36)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	m.jwtSecret = []byte(base64.StdEncoding.EncodeToString(raw))
	m.secret(ctx, "manager-jwt", corev1.SecretTypeOpaque, map[string][]byte{"secret": m.jwtSecret})
	certPEM, keyPEM := m.serverCertificate()
	m.secret(ctx, "manager-tls", corev1.SecretTypeTLS, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})
	return m
}

func (m *managerInstall) secret(ctx context.Context, name string, typ corev1.SecretType, data map[string][]byte) {
	m.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.ns}, Type: typ, Data: data}
	if err := m.env.Client.Create(ctx, s); err != nil {
		m.t.Fatal(err)
	}
}

// serverCertificate is a self-signed certificate for the Service's names and 127.0.0.1, which
// m.roots then trusts.
func (m *managerInstall) serverCertificate() (certPEM, keyPEM []byte) {
	m.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		m.t.Fatal(err)
	}
	svc := managerRelease + "." + m.ns + ".svc"
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: svc},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{managerRelease, svc}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		m.t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		m.t.Fatal(err)
	}
	m.roots = x509.NewCertPool()
	m.roots.AddCert(cert)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		m.t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func (m *managerInstall) config() *action.Configuration {
	m.t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = ptr.To(m.env.Kubeconfig)
	flags.Namespace = ptr.To(m.ns)
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, m.ns, "secret"); err != nil {
		m.t.Fatal(err)
	}
	return cfg
}

func (m *managerInstall) install(ctx context.Context, values string) {
	m.t.Helper()
	ch, err := loader.Load(managerChartDir)
	if err != nil {
		m.t.Fatal(err)
	}
	in := action.NewInstall(m.config())
	in.ReleaseName, in.Namespace = managerRelease, m.ns
	in.ServerSideApply = true
	in.WaitStrategy = kube.HookOnlyStrategy
	r, err := in.RunWithContext(ctx, ch, parseValues(m.t, values))
	if err != nil {
		m.t.Fatal(err)
	}
	if rel := r.(*release.Release); rel.Info.Status != "deployed" {
		m.t.Fatalf("release status %s", rel.Info.Status)
	}
}

// upgrade upgrades to the chart bumped to 0.2.0 with values.
func (m *managerInstall) upgrade(ctx context.Context, values string) *release.Release {
	m.t.Helper()
	rel, err := m.upgradeErr(ctx, values)
	if err != nil {
		m.t.Fatal(err)
	}
	return rel
}

func (m *managerInstall) upgradeErr(ctx context.Context, values string) (*release.Release, error) {
	ch, err := loader.Load(managerChartDir)
	if err != nil {
		return nil, err
	}
	ch.Metadata.Version = "0.2.0"
	up := action.NewUpgrade(m.config())
	up.Namespace = m.ns
	up.ServerSideApply = "true"
	up.WaitStrategy = kube.HookOnlyStrategy
	r, err := up.RunWithContext(ctx, managerRelease, ch, parseValues(m.t, values))
	if err != nil {
		return nil, err
	}
	return r.(*release.Release), nil
}

// available waits until the Deployment has replicas available pods (admitted by the namespace's
// Pod Security, scheduled, their init container done) and returns it.
func (m *managerInstall) available(ctx context.Context, replicas int32) *appsv1.Deployment {
	m.t.Helper()
	d := &appsv1.Deployment{}
	testenv.Eventually(ctx, m.t, fmt.Sprintf("Deployment %s/%s has %d available replicas", m.ns, managerRelease, replicas), func() (bool, error) {
		if err := m.env.Client.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: managerRelease}, d); err != nil {
			return false, err
		}
		return *d.Spec.Replicas == replicas && d.Status.AvailableReplicas == replicas && d.Status.Replicas == replicas &&
			d.Status.ObservedGeneration == d.Generation, nil
	})
	var pods corev1.PodList
	if err := m.env.Client.List(ctx, &pods, client.InNamespace(m.ns), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		m.t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.SecurityContext == nil || !ptr.Deref(p.Spec.SecurityContext.RunAsNonRoot, false) || ptr.Deref(p.Spec.AutomountServiceAccountToken, true) {
			m.t.Errorf("pod %s: security context %+v", p.Name, p.Spec.SecurityContext)
		}
	}
	return d
}

// checkSecretsPresent: every Secret the pod template reads exists in the namespace with the keys it reads.
func (m *managerInstall) checkSecretsPresent(ctx context.Context, d *appsv1.Deployment) {
	m.t.Helper()
	want := map[string][]string{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			for _, it := range v.Secret.Items {
				want[v.Secret.SecretName] = append(want[v.Secret.SecretName], it.Key)
			}
		}
	}
	for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
		for _, e := range c.Env {
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
				want[r.SecretKeyRef.Name] = append(want[r.SecretKeyRef.Name], r.SecretKeyRef.Key)
			}
		}
	}
	if len(want) < 3 {
		m.t.Errorf("the pods read Secrets %v: want the keys, the HS256 secret and the certificate at least", want)
	}
	for name, keys := range want {
		var s corev1.Secret
		if err := m.env.Client.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: name}, &s); err != nil {
			m.t.Errorf("Secret %s the pods read: %v", name, err)
			continue
		}
		for _, k := range keys {
			if len(s.Data[k]) == 0 {
				m.t.Errorf("Secret %s has no key %s", name, k)
			}
		}
	}
}

// run runs one replica of the Deployment as a process: its volumes made into directories (Secret
// volumes hold the Secret's items), its init container's arguments first, then the manager
// container's, with their environment (Secret references read from the cluster); mounted paths in
// arguments and environment point at the directories. Only the listen addresses are added, on
// loopback. It checks that the migration succeeded and that serve answers the readiness probe's
// route in the probe's scheme, verified with the certificate installed, takes a token signed with
// the secret installed, and serves metrics.
func (m *managerInstall) run(ctx context.Context, d *appsv1.Deployment, engine string) {
	m.t.Helper()
	pod := d.Spec.Template.Spec
	volumes := m.volumeDirs(ctx, pod)
	if len(pod.InitContainers) != 1 {
		m.t.Fatalf("init containers %v, want the migration", pod.InitContainers)
	}
	args, env := m.processOf(ctx, pod.InitContainers[0], volumes)
	out, err := m.command(args, env).CombinedOutput()
	if err != nil || !strings.Contains(string(out), engine+" database is up to date") {
		m.t.Fatalf("the init container (manager %s): %v\n%s", strings.Join(args, " "), err, out)
	}

	c := pod.Containers[0]
	args, env = m.processOf(ctx, c, volumes)
	addr, metrics := testenv.FreeAddr(m.t), testenv.FreeAddr(m.t)
	exited, log := m.start(append(args, "--address="+addr, "--metrics-address="+metrics), env)

	probe := c.ReadinessProbe.HTTPGet
	base := strings.ToLower(string(probe.Scheme)) + "://" + addr
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: m.roots, MinVersion: tls.VersionTLS12}}}
	var health struct{ Status, Engine string }
	testenv.Eventually(ctx, m.t, "the manager answers its readiness probe", func() (bool, error) {
		select {
		case <-exited:
			m.t.Fatalf("manager serve exited before it was ready (%d bytes of log below)", len(log.Bytes()))
		default:
		}
		body, status, err := get(hc, base+probe.Path, "")
		if err != nil {
			return false, nil
		}
		return status == http.StatusOK && json.Unmarshal(body, &health) == nil, nil
	})
	if health.Status != "ok" || health.Engine != engine {
		m.t.Errorf("health %+v, want ok on %s", health, engine)
	}
	token, err := auth.Mint(m.jwtSecret, "alice", []auth.Role{auth.Admin}, time.Hour, time.Now())
	if err != nil {
		m.t.Fatal(err)
	}
	if body, status, err := get(hc, base+"/api/v1/clusters", token); err != nil || status != http.StatusOK {
		m.t.Errorf("GET /api/v1/clusters with a token signed by the installed secret: %d %v %s", status, err, body)
	}
	if body, status, err := get(hc, "http://"+metrics+"/metrics", ""); err != nil || status != http.StatusOK || !bytes.Contains(body, []byte("slipway_manager_")) {
		m.t.Errorf("GET /metrics: %d %v", status, err)
	}
}

// volumeDirs makes a directory per pod volume: Secret volumes hold their items (read from the
// cluster), emptyDir and claims start empty.
func (m *managerInstall) volumeDirs(ctx context.Context, pod corev1.PodSpec) map[string]string {
	m.t.Helper()
	dirs := map[string]string{}
	for _, v := range pod.Volumes {
		dir := m.t.TempDir()
		dirs[v.Name] = dir
		switch {
		case v.Secret != nil:
			var s corev1.Secret
			if err := m.env.Client.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: v.Secret.SecretName}, &s); err != nil {
				m.t.Fatal(err)
			}
			for _, it := range v.Secret.Items {
				if err := os.WriteFile(filepath.Join(dir, it.Path), s.Data[it.Key], 0o400); err != nil {
					m.t.Fatal(err)
				}
			}
		case v.EmptyDir != nil, v.PersistentVolumeClaim != nil:
		default:
			m.t.Fatalf("volume %s: a kind the test does not materialise", v.Name)
		}
	}
	return dirs
}

// processOf is a container's arguments and environment as a process here: mounted paths become the
// volumes' directories, Secret references their values.
func (m *managerInstall) processOf(ctx context.Context, c corev1.Container, volumes map[string]string) ([]string, []string) {
	m.t.Helper()
	mounts := map[string]string{}
	var paths []string
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = volumes[vm.Name]
		paths = append(paths, vm.MountPath)
	}
	// Longest first, so /var/lib/x/y is not rewritten as /var/lib/x.
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	local := func(s string) string {
		for _, p := range paths {
			if s == p || strings.HasPrefix(s, p+"/") {
				return mounts[p] + strings.TrimPrefix(s, p)
			}
		}
		return s
	}
	var args []string
	for _, a := range c.Args {
		if name, value, ok := strings.Cut(a, "="); ok {
			a = name + "=" + local(value)
		}
		args = append(args, a)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLIPWAY_MANAGER_") && !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	for _, e := range c.Env {
		switch r := e.ValueFrom; {
		case r == nil:
			env = append(env, e.Name+"="+local(e.Value))
		case r.SecretKeyRef != nil:
			var s corev1.Secret
			if err := m.env.Client.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: r.SecretKeyRef.Name}, &s); err != nil {
				m.t.Fatal(err)
			}
			env = append(env, e.Name+"="+string(s.Data[r.SecretKeyRef.Key]))
		default:
			m.t.Fatalf("%s: $%s comes from %+v, which the test does not resolve", c.Name, e.Name, r)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool {
		return strings.Contains(a, "/etc/slipway-manager") || strings.Contains(a, "/var/lib/slipway-manager")
	}) {
		m.t.Fatalf("args %q name a path no volume mounts", args)
	}
	return args, env
}

func (m *managerInstall) command(args, env []string) *exec.Cmd {
	cmd := exec.Command(operatorproc.BinaryOf(m.t, "./cmd/manager", ""), args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// start runs `manager serve` until the test ends (SIGTERM, then a kill); its log is shown when
// the test fails. exited is closed when the process ends.
func (m *managerInstall) start(args, env []string) (exited <-chan struct{}, log *testenv.SyncBuffer) {
	m.t.Helper()
	log = &testenv.SyncBuffer{}
	cmd := m.command(args, env)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if m.t.Failed() {
			m.t.Logf("manager %s log:\n%s", strings.Join(args, " "), log.Bytes())
		}
	})
	return done, log
}

func get(hc *http.Client, url, token string) ([]byte, int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return body, resp.StatusCode, err
}
