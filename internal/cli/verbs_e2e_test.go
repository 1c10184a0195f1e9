//go:build e2e

package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The verbs that change the manager, each run as a user would: slipway as a process (this test
// binary under the name slipway, which TestMain put first in PATH, as the scripts run it), its
// stdout, stderr and exit code read, and the manager's state read back through the API or a get.

// proc runs slipway as a process as user (a context of cfgPath), in an empty working directory,
// its streams not terminals, and fails the test unless it exits with want.
func proc(tb testing.TB, cfgPath, user string, want int, args ...string) cliRun {
	tb.Helper()
	bin, err := exec.LookPath("slipway")
	if err != nil {
		tb.Fatalf("no slipway in PATH (TestMain's testscript.Main puts this test binary there): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = tb.TempDir() // relative paths are not the working directory's
	cmd.Env = append(envWithout("SLIPWAY_", "NO_COLOR", "CLICOLOR"), config.EnvConfig+"="+cfgPath, EnvContext+"="+user, "NO_COLOR=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	r := cliRun{Stdout: out.String(), Stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		tb.Fatalf("running slipway %s: %v", strings.Join(args, " "), err)
	}
	if r.Code != want {
		tb.Fatalf("slipway %s (as %s): exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), user, r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

// decode reads a run's stdout as JSON into v.
func decode(tb testing.TB, r cliRun, v any) {
	tb.Helper()
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		tb.Fatalf("stdout is not the JSON of a %T: %v\n%s", v, err, r.Stdout)
	}
}

// randomName is prefix and five random lowercase letters or digits: names of the shared
// manager's objects that another run of the test (-count=2) does not meet.
func randomName(prefix string) string {
	return prefix + strings.ToLower(rand.Text()[:5])
}

// TestClusterAddRemove registers a cluster from a kubeconfig file of a kube-apiserver of the
// test's own (removing a cluster deletes the manager's identity from it, which the fleet's
// registered clusters need), reads it back, and removes it: the manager forgets it and deletes
// its identity from the cluster.
func TestClusterAddRemove(t *testing.T) {
	m, cfg := shared(t)
	env := testenv.New(t, testenv.Light)
	kubeconfig := userKubeconfig(t, env)
	disc, err := kdiscovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	version, err := disc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	name := randomName("dev-")
	t.Cleanup(func() { _, _ = m.Do(http.MethodDelete, "/api/v1/clusters/"+name, m.Token(managertest.Alice), nil) })

	add := proc(t, cfg, managertest.Alice, 0, "cluster", "add", name, "--kubeconfig", kubeconfig, "--context", "test", "--environment", "Dev")
	if add.Stderr != fmt.Sprintf("Registered cluster %s (Dev, Kubernetes %s).\n", name, version.GitVersion) {
		t.Errorf("cluster add's message: %q", add.Stderr)
	}
	matchLines(t, "cluster add", add.Stdout, `^Name: +`+name+`$`, `^Environment: +Dev$`, `^Kubernetes: +`+regexp.QuoteMeta(version.GitVersion)+`$`)
	var cl api.Cluster
	decode(t, proc(t, cfg, managertest.Vera, 0, "cluster", "get", name, "-o", "json"), &cl)
	if cl.Name != name || cl.Environment != "Dev" || cl.KubernetesVersion != version.GitVersion {
		t.Errorf("cluster get -o json after the add: %+v (want Kubernetes %s)", cl, version.GitVersion)
	}
	var list []api.Cluster
	decode(t, proc(t, cfg, managertest.Vera, 0, "cluster", "list", "--environment", "Dev", "-o", "json"), &list)
	if !slices.ContainsFunc(list, func(c api.Cluster) bool { return c.Name == name }) {
		t.Errorf("cluster list --environment Dev does not list %s: %+v", name, list)
	}
	var ns corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: clusters.IdentityNamespace}, &ns); err != nil {
		t.Fatalf("the manager's identity in the registered cluster: %v", err)
	}

	rm := proc(t, cfg, managertest.Alice, 0, "cluster", "remove", name, "--yes")
	if rm.Stdout != "" || rm.Stderr != "Removed cluster "+name+".\n" {
		t.Errorf("cluster remove: stdout %q, stderr %q", rm.Stdout, rm.Stderr)
	}
	gone := proc(t, cfg, managertest.Vera, 1, "cluster", "get", name)
	if !strings.Contains(gone.Stderr, "not found") {
		t.Errorf("cluster get after the removal: %q", gone.Stderr)
	}
	var audit []api.AuditEvent
	decode(t, proc(t, cfg, managertest.Alice, 0, "audit", "--action", "cluster.delete", "--target-name", name, "-o", "json"), &audit)
	if len(audit) != 1 || audit[0].Actor != managertest.Alice || audit[0].Result != "success" || audit[0].Details["cleanedUp"] != true {
		t.Errorf("the removal's audit record: %+v", audit)
	}
	// The identity is gone from the cluster: the ClusterRole at once, the namespace terminating
	// (a light control plane has no namespace controller to finish it).
	err = env.Client.Get(t.Context(), client.ObjectKey{Name: clusters.ClusterRoleName}, &rbacv1.ClusterRole{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the manager's ClusterRole after the removal: %v, want not found", err)
	}
	err = env.Client.Get(t.Context(), client.ObjectKey{Name: clusters.IdentityNamespace}, &ns)
	if !apierrors.IsNotFound(err) && (err != nil || ns.DeletionTimestamp == nil) {
		t.Errorf("the manager's namespace after the removal: %v, deletion %v", err, ns.DeletionTimestamp)
	}
}

// userKubeconfig writes a kubeconfig for env as people have them: the certificates in files
// beside it named by relative paths, and two contexts, the current one elsewhere; the context
// "test" reaches env as a cluster admin. It returns the file's path.
func userKubeconfig(t *testing.T, env *testenv.Env) string {
	t.Helper()
	dir := t.TempDir()
	admin, err := env.WriteKubeconfig(filepath.Join(dir, "admin.yaml"), "registrar")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	cur := raw.Contexts[raw.CurrentContext]
	cl, user := raw.Clusters[cur.Cluster], raw.AuthInfos[cur.AuthInfo]
	if err := os.Mkdir(filepath.Join(dir, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"ca.crt": cl.CertificateAuthorityData, "registrar.crt": user.ClientCertificateData,
		"registrar.key": user.ClientKeyData} {
		if len(data) == 0 {
			t.Fatalf("envtest's kubeconfig has no inline %s", name)
		}
		if err := os.WriteFile(filepath.Join(dir, "pki", name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cl.Server, CertificateAuthority: "pki/ca.crt"}
	kc.AuthInfos["registrar"] = &clientcmdapi.AuthInfo{ClientCertificate: "pki/registrar.crt", ClientKey: "pki/registrar.key"}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "registrar", Namespace: "team-a"}
	kc.Clusters["elsewhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.AuthInfos["someone"] = &clientcmdapi.AuthInfo{Token: "not-for-the-manager"}
	kc.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "elsewhere", AuthInfo: "someone"}
	kc.CurrentContext = "elsewhere"
	path := filepath.Join(dir, "config")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// verbsWorld is an operator of the test's own on the shared manager (a chart of its own in the
// harness's chart repository, shipping a CRD of its own), so that what the test deploys,
// approves and deletes changes nothing the other tests read.
type verbsWorld struct {
	m   *managertest.Manager
	cfg string
	// op is the operator's name, its namespace and its chart's name; crd its CRD.
	op, crd string
}

// TestOperatorCRDAndDeploymentVerbs runs the verbs of an operator's life on the shared manager:
// operator add (from the harness's chart repository), crd list and crd approve (its CRD's
// breaking version), a Direct deployment that installs it on dev-1, a BlueGreen one that waits
// for its switch and is paused, switched and resumed by an Operator, a Direct one cancelled
// while it waits for an approval, and operator remove.
func TestOperatorCRDAndDeploymentVerbs(t *testing.T) {
	m, cfg := shared(t)
	w := &verbsWorld{m: m, cfg: cfg, op: randomName("gizmo-")}
	suffix := strings.TrimPrefix(w.op, "gizmo-")
	plural, kind := "gizmo"+suffix+"s", "Gizmo"+strings.ToUpper(suffix)
	w.crd = plural + "." + charttest.Group
	for _, v := range charttest.Versions {
		files := charttest.OperatorChart(w.op, v.Version, v.Level)
		delete(files, "crds/widgets.yaml")
		files["crds/"+plural+".yaml"] = charttest.YAML(charttest.NewCRD(plural, kind, v.Level))
		m.Repo.Add(t, files)
	}
	t.Cleanup(w.cleanUp)
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{{"OperatorAdd", w.operatorAdd}, {"CRDListAndApprove", w.crdListAndApprove}, {"BlueGreen", w.blueGreen},
		{"Cancel", w.cancel}, {"OperatorRemove", w.operatorRemove}} {
		if !t.Run(step.name, step.run) {
			return
		}
	}
}

// cleanUp cancels the operator's active deployments and deletes it, when the test stopped
// before doing so itself.
func (w *verbsWorld) cleanUp() {
	tok := w.m.Token(managertest.Alice)
	r, err := w.m.Do(http.MethodGet, "/api/v1/deployments?active=true&operator="+w.op, tok, nil)
	if err == nil && r.Status == http.StatusOK {
		var list api.DeploymentList
		if json.Unmarshal(r.Body, &list) == nil {
			for _, d := range list.Items {
				_, _ = w.m.Do(http.MethodDelete, "/api/v1/deployments/"+d.ID, tok, nil)
			}
		}
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r, err := w.m.Do(http.MethodDelete, "/api/v1/operators/"+w.op, tok, nil)
		if err != nil || r.Status != http.StatusConflict {
			return
		}
		time.Sleep(time.Second)
	}
}

func (w *verbsWorld) operatorAdd(t *testing.T) {
	add := proc(t, w.cfg, managertest.Otto, 0, "operator", "add", w.op, "--namespace", w.op,
		"--repository", w.m.Repo.URL, "--chart", w.op)
	if add.Stderr != "Registered operator "+w.op+" with 3 versions.\n" {
		t.Errorf("operator add's message: %q", add.Stderr)
	}
	matchLines(t, "operator add", add.Stdout, `^Name: +`+w.op+`$`, `^Repository: +`+regexp.QuoteMeta(w.m.Repo.URL)+`$`,
		`^Versions: +2\.0\.0, 1\.1\.0, 1\.0\.0$`)
	var op api.Operator
	decode(t, proc(t, w.cfg, managertest.Vera, 0, "operator", "get", w.op, "-o", "json"), &op)
	if op.Namespace != w.op || op.Chart.Name != w.op || !slices.Equal(op.Versions, []string{"2.0.0", "1.1.0", "1.0.0"}) || op.DeletedAt != nil {
		t.Errorf("operator get -o json after the add: %+v", op)
	}
}

func (w *verbsWorld) crdListAndApprove(t *testing.T) {
	var list []api.CRDSummary
	decode(t, proc(t, w.cfg, managertest.Vera, 0, "crd", "list", "--group", charttest.Group, "-o", "json"), &list)
	i := slices.IndexFunc(list, func(c api.CRDSummary) bool { return c.Name == w.crd })
	if i < 0 || list[i].Revisions != 3 || list[i].Latest.Version != "2.0.0" || list[i].Latest.Operator != w.op {
		t.Fatalf("crd list -o json has no %s with 3 revisions, the latest 2.0.0 of %s: %+v", w.crd, w.op, list)
	}
	table := proc(t, w.cfg, managertest.Vera, 0, "crd", "list")
	matchLines(t, "crd list", table.Stdout, `^`+regexp.QuoteMeta(w.crd)+`\tGizmo\w+\t3\t2\.0\.0\t`+w.op+`\t`,
		`^`+regexp.QuoteMeta(managertest.WidgetCRD)+`\tWidget\t`)

	approve := []string{"crd", "approve", w.crd, "--operator", w.op, "--version", "2.0.0", "--reason", "no Gizmo sets spec.legacy yet"}
	refused := proc(t, w.cfg, managertest.Otto, ExitAuth, approve...)
	if !strings.Contains(refused.Stderr, "needs one of the roles [Admin]; otto has [Operator]") {
		t.Errorf("crd approve as an Operator: %q", refused.Stderr)
	}
	var a api.Approval
	decode(t, proc(t, w.cfg, managertest.Alice, 0, append(approve, "-o", "json")...), &a)
	if a.CRD != w.crd || a.ToVersion != "2.0.0" || a.ApprovedBy != managertest.Alice || a.Reason != "no Gizmo sets spec.legacy yet" {
		t.Errorf("crd approve -o json: %+v", a)
	}
	var crd api.CRD
	decode(t, proc(t, w.cfg, managertest.Vera, 0, "crd", "get", w.crd, "-o", "json"), &crd)
	if len(crd.Approvals) != 1 || crd.Approvals[0].ToDigest != a.ToDigest || crd.Approvals[0].ApprovedBy != managertest.Alice {
		t.Errorf("crd get -o json after the approval: approvals %+v", crd.Approvals)
	}
	rep := proc(t, w.cfg, managertest.Vera, 0, "crd", "validate", w.crd, "--operator", w.op, "--version", "2.0.0")
	matchLines(t, "crd validate after the approval", rep.Stdout, `^Verdict: +BREAKING \(approved\)$`)
}

// blueGreen: Direct installs 1.0.0 on dev-1 (BlueGreen switches from a running release);
// BlueGreen 1.1.0, approved by bob, validates green and waits for its switch; otto pauses it,
// asks for the switch while it is paused (remembered, not done), and resumes it: the switch
// follows, and the deployment completes after the manager's switch monitor.
func (w *verbsWorld) blueGreen(t *testing.T) {
	var direct api.Deployment
	decode(t, proc(t, w.cfg, managertest.Otto, 0, "deploy", w.op, "1.0.0", "--clusters", "dev-1", "--strategy", "direct", "-o", "json"), &direct)
	w.m.WaitStatus(t, direct.ID, "Completed", 3*time.Minute)
	var bg api.Deployment
	decode(t, proc(t, w.cfg, managertest.Otto, 0, "deploy", w.op, "1.1.0", "--clusters", "dev-1", "--strategy", "bluegreen",
		"--validation-period", "PT1S", "--auto-switch=false", "-o", "json"), &bg)
	w.m.ApproveAll(t, bg.ID, managertest.Bob)
	w.m.WaitFor(t, bg.ID, "the wait for the switch", 3*time.Minute, func(d api.Deployment) bool {
		return d.Waiting != nil && d.Waiting.Reason == "switch"
	})

	pause := proc(t, w.cfg, managertest.Otto, 0, "deployment", "pause", bg.ID, "--reason", "checking green by hand")
	if pause.Stdout != "" || !strings.HasPrefix(pause.Stderr, "Paused deployment "+bg.ID+". Status: ") || !strings.Contains(pause.Stderr, "(paused)") {
		t.Errorf("deployment pause: stdout %q, stderr %q", pause.Stdout, pause.Stderr)
	}
	got := proc(t, w.cfg, managertest.Vera, 0, "deployment", "get", bg.ID)
	matchLines(t, "deployment get of the paused deployment", got.Stdout, `^Paused: +by otto .*: checking green by hand$`,
		`^Waiting: +paused by otto`)

	var sw api.Deployment
	decode(t, proc(t, w.cfg, managertest.Otto, 0, "deployment", "switch", bg.ID, "--yes", "-o", "json"), &sw)
	if sw.ID != bg.ID || !sw.SwitchRequested || sw.SwitchedAt != nil || !sw.Paused {
		t.Errorf("deployment switch -o json while paused: switch requested %v, switched at %v, paused %v", sw.SwitchRequested, sw.SwitchedAt, sw.Paused)
	}
	if d := w.m.Deployment(t, bg.ID); !d.SwitchRequested || d.SwitchedAt != nil {
		t.Errorf("a switch asked for while paused was done, or forgotten: requested %v, switched at %v", d.SwitchRequested, d.SwitchedAt)
	}

	resume := proc(t, w.cfg, managertest.Otto, 0, "deployment", "resume", bg.ID)
	if resume.Stdout != "" || !strings.HasPrefix(resume.Stderr, "Resumed deployment "+bg.ID+". Status: ") || strings.Contains(resume.Stderr, "paused") {
		t.Errorf("deployment resume: stdout %q, stderr %q", resume.Stdout, resume.Stderr)
	}
	switched := w.m.WaitFor(t, bg.ID, "the switch after the resume", time.Minute, func(d api.Deployment) bool { return d.SwitchedAt != nil })
	if c := switched.Clusters[0]; switched.Paused || c.Name != "dev-1" || c.BlueRelease == "" || c.Release == c.BlueRelease {
		t.Errorf("after the resume: paused %v; dev-1 runs release %q, blue %q", switched.Paused, c.Release, c.BlueRelease)
	}
	w.m.WaitStatus(t, bg.ID, "Completed", 6*time.Minute)
	got = proc(t, w.cfg, managertest.Vera, 0, "deployment", "get", bg.ID)
	matchLines(t, "deployment get of the switched deployment", got.Stdout, `^Status: +Completed$`, `^Switched: +\S+`)
}

// cancel: a Direct deployment of 2.0.0 asks an Admin for the version upgrade only (the CRD's
// breaking change was approved with crd approve); otto cancels it while it waits.
func (w *verbsWorld) cancel(t *testing.T) {
	var dep api.Deployment
	decode(t, proc(t, w.cfg, managertest.Otto, 0, "deploy", w.op, "2.0.0", "--clusters", "dev-1", "--strategy", "direct", "-o", "json"), &dep)
	w.m.WaitStatus(t, dep.ID, "WaitingApproval", 2*time.Minute)
	var kinds []string
	for _, a := range w.m.Approvals(t, dep.ID, "pending") {
		kinds = append(kinds, a.Kind)
	}
	if !slices.Equal(kinds, []string{"versionUpgrade"}) {
		t.Errorf("the upgrade to 2.0.0 asks for %v, want versionUpgrade alone (breakingCRD was approved)", kinds)
	}
	var c api.Deployment
	decode(t, proc(t, w.cfg, managertest.Otto, 0, "deployment", "cancel", dep.ID, "--yes", "-o", "json"), &c)
	if c.ID != dep.ID || !c.CancelRequested {
		t.Errorf("deployment cancel -o json: %s, cancelRequested %v", c.ID, c.CancelRequested)
	}
	w.m.WaitStatus(t, dep.ID, "Cancelled", time.Minute)
	got := proc(t, w.cfg, managertest.Vera, 0, "deployment", "get", dep.ID)
	matchLines(t, "deployment get of the cancelled deployment", got.Stdout, `^Status: +Cancelled$`,
		`^Reason: +cancelled before anything was installed$`, `^dev-1\tDev\t1\tskipped\t`)
}

func (w *verbsWorld) operatorRemove(t *testing.T) {
	rm := proc(t, w.cfg, managertest.Alice, 0, "operator", "remove", w.op, "--yes")
	if rm.Stdout != "" || rm.Stderr != "Deleted operator "+w.op+".\n" {
		t.Errorf("operator remove: stdout %q, stderr %q", rm.Stdout, rm.Stderr)
	}
	// A deleted operator stays readable by name, with when it was deleted; lists leave it out.
	gone := proc(t, w.cfg, managertest.Vera, 0, "operator", "get", w.op)
	matchLines(t, "operator get after the removal", gone.Stdout, `^Name: +`+w.op+`$`, `^Deleted: +\S+`)
	var op api.Operator
	decode(t, proc(t, w.cfg, managertest.Vera, 0, "operator", "get", w.op, "-o", "json"), &op)
	if op.DeletedAt == nil {
		t.Errorf("operator get -o json after the removal: no deletedAt")
	}
	var list []api.Operator
	decode(t, proc(t, w.cfg, managertest.Vera, 0, "operator", "list", "-o", "json"), &list)
	if slices.ContainsFunc(list, func(o api.Operator) bool { return o.Name == w.op }) {
		t.Errorf("operator list after the removal still lists %s", w.op)
	}
	var deps []api.Deployment
	decode(t, proc(t, w.cfg, managertest.Vera, 0, "deployment", "list", "--operator", w.op, "-o", "json"), &deps)
	if len(deps) != 3 {
		t.Errorf("the deleted operator's deployments stay readable: %d listed, want 3", len(deps))
	}
}
