//go:build e2e

package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestInCluster runs slipway's in-cluster verbs (get, reconcile, suspend, resume, logs, preview)
// as a user would, on one full control plane shared by its steps, in order: each step starts
// from the state the one before left.
func TestInCluster(t *testing.T) {
	w := startWorld(t)
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"Get", w.testGet},
		{"GetErrors", w.testGetErrors},
		{"Reconcile", w.testReconcile},
		{"ReconcileTimeout", w.testReconcileTimeout},
		{"SuspendResume", w.testSuspendResume},
		{"ReconcileFailure", w.testReconcileFailure},
		{"Logs", w.testLogs},
		{"PreviewOpen", w.testPreviewOpen},
		{"PreviewDelete", w.testPreviewDelete},
		{"Binary", w.testBinary},
		{"LogsFollow", w.testLogsFollow},
		{"CompleteAndNotServed", w.testCompleteAndNotServed},
	} {
		if !t.Run(step.name, step.run) {
			t.Fatalf("step %s failed: the later steps start from its state", step.name)
		}
	}
}

// testGet: the tables on a terminal and piped, one object and a list in YAML and JSON.
func (w *world) testGet(t *testing.T) {
	tty := runOpts{tty: true}
	for _, c := range []struct {
		golden string
		o      runOpts
		args   []string
	}{
		{"get-werfbundles", tty, []string{"get", "werfbundles", "-n", nsA}},
		{"get-werfbundles-all-piped", runOpts{}, []string{"get", "werfbundles", "-A"}},
		{"get-werfbundle-app-yaml", runOpts{}, []string{"get", "wb", "app", "-n", nsA, "-o", "yaml"}},
		{"get-webapps-all", tty, []string{"get", "webapps", "-A"}},
		{"get-previews", tty, []string{"get", "previews", "-n", nsShop}},
		{"get-previews-all-json", runOpts{}, []string{"get", "previews", "-A", "-o", "json"}},
	} {
		r := w.run(c.o, c.args...)
		expect(t, r, 0, c.args...)
		if r.err != "" {
			t.Errorf("slipway %s wrote on standard error: %s", strings.Join(c.args, " "), r.err)
		}
		golden(t, c.golden, normalise(r.out))
	}
	var list struct {
		Kind  string
		Items []catalystv1.Environment
	}
	r := w.run(runOpts{}, "get", "previews", "-A", "-o", "json")
	if err := json.Unmarshal([]byte(r.out), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" || len(list.Items) != 3 || list.Items[0].Kind != "Environment" || list.Items[0].Status.URL == "" {
		t.Errorf("get previews -o json: a List of the 3 previews with kind and status, got %+v", list)
	}
}

// testGetErrors: nothing there, a name that is not there, a deployment environment, a missing
// kubeconfig, a user without rights (exit 4), a kind that does not exist.
func (w *world) testGetErrors(t *testing.T) {
	r := w.run(runOpts{}, "get", "werfbundles", "-n", nsEmpty)
	expect(t, r, 0)
	if r.out != "" || r.err != "No werfbundles in namespace empty.\n" {
		t.Errorf("empty namespace: stdout %q, stderr %q", r.out, r.err)
	}
	r = w.run(runOpts{}, "get", "werfbundles", "-n", nsEmpty, "-o", "json")
	expect(t, r, 0)
	contains(t, "empty list in JSON", r.out, `"kind": "List"`, `"items": []`)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"get", "wb", "nope", "-n", nsA}, 1, "error: werfbundle nope not found in namespace team-a\n"},
		{[]string{"get", "previews", "staging", "-n", nsShop}, 1, "error: Environment staging in namespace shop-web is not a preview\n"},
		{[]string{"get", "wb", "app", "-A"}, 1, "error: a NAME and -A do not go together"},
		{[]string{"get", "gadgets"}, 1, "error: unknown kind \"gadgets\": werfbundles, webapps or previews\nRun 'slipway get --help' for usage.\n"},
	} {
		r := w.run(runOpts{}, c.args...)
		expect(t, r, c.code, c.args...)
		contains(t, "stderr of slipway "+strings.Join(c.args, " "), r.err, c.want)
	}
	r = w.run(runOpts{noKubeconfig: true}, "get", "wb", "-n", nsA, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	expect(t, r, 1)
	contains(t, "missing kubeconfig", r.err, "error: reading the kubeconfig:", "missing")

	t.Run("NoKubeconfig", func(t *testing.T) {
		t.Setenv("KUBECONFIG", "")
		home := clientcmd.RecommendedHomeFile // ~/.kube/config, read when KUBECONFIG is empty
		clientcmd.RecommendedHomeFile = filepath.Join(t.TempDir(), "config")
		t.Cleanup(func() { clientcmd.RecommendedHomeFile = home })
		r := w.run(runOpts{noKubeconfig: true}, "get", "wb")
		expect(t, r, 1)
		if r.err != "error: no kubeconfig: set KUBECONFIG or pass --kubeconfig, as for kubectl\n" {
			t.Errorf("without a kubeconfig: %q", r.err)
		}
	})
	kc, err := clientcmd.LoadFromFile(w.env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	r = w.run(runOpts{}, "get", "wb", "-n", nsA, "--context", kc.CurrentContext)
	expect(t, r, 0)
	contains(t, "--context naming the kubeconfig's context", r.out, "app\t")
	r = w.run(runOpts{}, "get", "wb", "-n", nsA, "--context", "nope")
	expect(t, r, 1)
	contains(t, "--context naming no kubeconfig context", r.err, `"nope"`)

	viewer, err := w.env.UserKubeconfig(filepath.Join(t.TempDir(), "nobody.kubeconfig"), "nobody")
	if err != nil {
		t.Fatal(err)
	}
	r = w.run(runOpts{noKubeconfig: true}, "get", "wb", "-n", nsA, "--kubeconfig", viewer)
	expect(t, r, 4)
	contains(t, "refused user", r.err, `werfbundles.werf.io is forbidden: User "nobody" cannot list resource "werfbundles"`)
}

// testReconcile: a new tag in the registry, reconcile: the operator polls at once, deploys it,
// and slipway reports it with exit 0.
func (w *world) testReconcile(t *testing.T) {
	registrytest.PushBundle(t, w.reg.Host, "demo/app", "1.1.0")
	r := w.run(runOpts{tty: true}, "reconcile", "werfbundle", "app", "-n", nsA)
	expect(t, r, 0)
	golden(t, "reconcile-success", r.out)
	lines := strings.Split(strings.TrimSpace(r.err), "\n")
	if lines[0] != "► Asking the operator to reconcile WerfBundle team-a/app" || lines[len(lines)-1] != "✔ Deployed tag 1.1.0" {
		t.Errorf("progress on stderr starts with the request and ends with the result:\n%s", r.err)
	}
	contains(t, "progress", r.err, "◎ Running apply Job team-a/app-apply-")
	if b := w.getBundle(t, nsA, "app"); b.Status.LastAppliedTag != "1.1.0" || b.Annotations[werfv1.ReconcileNowAnnotation] != b.Status.LastHandledReconcileNow {
		t.Errorf("after reconcile: tag %q, reconcile-now %q handled %q", b.Status.LastAppliedTag,
			b.Annotations[werfv1.ReconcileNowAnnotation], b.Status.LastHandledReconcileNow)
	}
}

// testReconcileTimeout: a deploy that outlasts --timeout exits 8 with what is under way; the
// operator carries on.
func (w *world) testReconcileTimeout(t *testing.T) {
	w.outcomes.slowTag("1.2.0", 20*time.Second)
	registrytest.PushBundle(t, w.reg.Host, "demo/app", "1.2.0")
	r := w.run(runOpts{}, "reconcile", "werfbundle", "app", "-n", nsA, "--timeout", "4s")
	expect(t, r, 8)
	contains(t, "timeout", r.err, "error: werfbundle team-a/app: still under way after --timeout 4s: Running apply Job team-a/app-apply-")
	golden(t, "reconcile-timeout-piped", normalise(r.out))
	w.waitBundle(nsA, "app", "app deployed 1.2.0", func(b *werfv1.WerfBundle) bool {
		return b.Status.Phase == werfv1.PhaseSynced && b.Status.LastAppliedTag == "1.2.0"
	})
}

// testSuspendResume: suspend, what get and reconcile say then, a tag pushed meanwhile deployed on
// resume (which waits for it), and both verbs a second time.
func (w *world) testSuspendResume(t *testing.T) {
	r := w.run(runOpts{}, "suspend", "werfbundle", "app", "-n", nsA)
	expect(t, r, 0)
	if want := "► Suspending WerfBundle team-a/app\n✔ WerfBundle team-a/app suspended\n"; r.err != want || r.out != "" {
		t.Errorf("suspend: stderr %q (want %q), stdout %q", r.err, want, r.out)
	}
	w.waitBundle(nsA, "app", "app suspended", func(b *werfv1.WerfBundle) bool {
		c := conditions.Get(b.Status.Conditions, conditions.Ready)
		return b.Spec.Suspend && c != nil && c.Reason == "Suspended"
	})
	r = w.run(runOpts{}, "suspend", "wb", "app", "-n", nsA)
	expect(t, r, 0)
	contains(t, "second suspend", r.err, "✔ WerfBundle team-a/app is already suspended")
	r = w.run(runOpts{tty: true}, "get", "wb", "app", "-n", nsA)
	expect(t, r, 0)
	golden(t, "get-werfbundle-suspended", r.out)
	r = w.run(runOpts{}, "reconcile", "wb", "app", "-n", nsA)
	expect(t, r, 1)
	contains(t, "reconcile while suspended", r.err, "error: werfbundle team-a/app is suspended: resume it first (slipway resume werfbundle app -n team-a)")

	registrytest.PushBundle(t, w.reg.Host, "demo/app", "1.3.0")
	r = w.run(runOpts{tty: true}, "resume", "werfbundle", "app", "-n", nsA)
	expect(t, r, 0)
	golden(t, "resume", r.out)
	contains(t, "resume", r.err, "► Resuming WerfBundle team-a/app\n", "✔ Deployed tag 1.3.0\n")
	r = w.run(runOpts{}, "resume", "wb", "app", "-n", nsA)
	expect(t, r, 0)
	contains(t, "second resume", r.err, "✔ WerfBundle team-a/app is not suspended")
}

// failLog is the werf log of the failing deploy: its last line is the error.
const failLastLine = "Error: UPGRADE FAILED: resource Deployment/app: context deadline exceeded"

var failLog = strings.Repeat("│ app/deployment/web: waiting for 1 of 2 replicas\n", 40) + failLastLine + "\n"

// testReconcileFailure: a tag whose deploy fails: exit 1 with the Ready message, which holds the
// end of the Job's log.
func (w *world) testReconcileFailure(t *testing.T) {
	w.outcomes.failTag("1.4.0")
	w.node.WriteLog(t, nsA, failLog)
	registrytest.PushBundle(t, w.reg.Host, "demo/app", "1.4.0")
	r := w.run(runOpts{}, "reconcile", "wb", "app", "-n", nsA)
	expect(t, r, 1)
	contains(t, "failure", r.err, "error: werfbundle team-a/app: DeployFailed: deploy of tag 1.4.0 failed (Job team-a/app-apply-",
		failLastLine+"\nslipway logs werfbundle app -n team-a prints the last Job's log.\n")
	contains(t, "the bundle's row", r.out, "app\t1.3.0\t1.4.0\tfalse\t", "\tFalse\tdeploy of tag 1.4.0 failed")
}

// testLogs: the last Job's log through pods/log (whole, its tail, followed), and, once its pods
// are gone, the log the operator stored.
func (w *world) testLogs(t *testing.T) {
	r := w.run(runOpts{}, "logs", "werfbundle", "app", "-n", nsA)
	expect(t, r, 0)
	if r.out != failLog {
		t.Errorf("logs printed %q, want the pod's log", r.out)
	}
	contains(t, "logs", r.err, "► Log of Job team-a/app-apply-", " (finished), pod app-apply-")
	r = w.run(runOpts{}, "logs", "wb", "app", "-n", nsA, "--tail", "1")
	expect(t, r, 0)
	if r.out != failLastLine+"\n" {
		t.Errorf("logs --tail 1 printed %q", r.out)
	}
	r = w.run(runOpts{}, "logs", "wb", "app", "-n", nsA, "--follow")
	expect(t, r, 0)
	if r.out != failLog {
		t.Errorf("logs --follow of a finished Job printed %q", r.out)
	}

	b := w.getBundle(t, nsA, "app")
	w.expireJobs(t, nsA, "app")
	stored := &corev1.ConfigMap{}
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: opNS, Name: b.Status.LastJobLog}, stored); err != nil {
		t.Fatal(err)
	}
	r = w.run(runOpts{}, "logs", "wb", "app", "-n", nsA)
	expect(t, r, 0)
	if r.out != stored.Data["log"] || !strings.HasSuffix(r.out, failLastLine+"\n") {
		t.Errorf("logs of a Job whose pods are gone printed %q, want the stored log %q", r.out, stored.Data["log"])
	}
	contains(t, "stored log", r.err, "► The pods of Job "+b.Status.LastFinishedJob+" are gone: the log the operator stored (slipway-system/"+b.Status.LastJobLog)
	r = w.run(runOpts{}, "logs", "wb", "app", "-n", nsA, "--operator-namespace", "elsewhere")
	expect(t, r, 1)
	contains(t, "stored log elsewhere", r.err, "its stored log "+b.Status.LastJobLog+" is not in namespace elsewhere")
	r = w.run(runOpts{}, "logs", "wb", "paused", "-n", nsA)
	expect(t, r, 1)
	contains(t, "no Job", r.err, "error: werfbundle team-a/paused has run no Job yet (Ready Unknown: Suspended: no polling")
}

// expireJobs deletes the bundle's Jobs and their pods as their TTL does: every one, oldest first,
// each gone before the next (the operator records the newest finished Job it finds, so deleting
// the newest first would make it record an older one again), and waits until the pods are gone.
func (w *world) expireJobs(t *testing.T, ns, bundle string) {
	t.Helper()
	var jobs batchv1.JobList
	if err := w.c.List(w.ctx, &jobs, client.InNamespace(ns),
		client.MatchingLabels{werfbundle.LabelBundleName: bundle, werfbundle.LabelBundleNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	sort.Slice(jobs.Items, func(i, j int) bool {
		return jobs.Items[i].CreationTimestamp.Before(&jobs.Items[j].CreationTimestamp)
	})
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if err := w.c.Delete(w.ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(w.ctx, t, "Job "+j.Name+" gone", func() (bool, error) {
			err := w.c.Get(w.ctx, client.ObjectKeyFromObject(j), &batchv1.Job{})
			return apierrors.IsNotFound(err), err
		})
	}
	testenv.Eventually(w.ctx, t, "the pods of "+bundle+"'s Jobs gone", func() (bool, error) {
		var pods corev1.PodList
		if err := w.c.List(w.ctx, &pods, client.InNamespace(ns), client.HasLabels{batchv1.JobNameLabel}); err != nil {
			return false, err
		}
		for i := range pods.Items {
			_ = w.c.Delete(w.ctx, &pods.Items[i], client.GracePeriodSeconds(0))
		}
		return len(pods.Items) == 0, nil
	})
}

// testPreviewOpen: the URL, a preview without one, --browser on a terminal ($BROWSER, a script
// here) and not on one.
func (w *world) testPreviewOpen(t *testing.T) {
	r := w.run(runOpts{}, "preview", "open", "pr-123", "-n", nsShop)
	expect(t, r, 0)
	if r.out != "https://pr-123.preview.example.dev\n" || r.err != "" {
		t.Errorf("preview open: stdout %q, stderr %q", r.out, r.err)
	}
	r = w.run(runOpts{}, "preview", "open", "pr-124", "-n", nsShop)
	expect(t, r, 1)
	contains(t, "no URL", r.err, "error: preview pr-124 has no URL yet (phase Building; Ready False: Building registry.example.dev/shop/web:"+sha124)

	dir := t.TempDir()
	opened := filepath.Join(dir, "opened")
	script := filepath.Join(dir, "browser")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\" > "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BROWSER": script}
	r = w.run(runOpts{env: env}, "preview", "open", "pr-123", "-n", nsShop, "--browser")
	expect(t, r, 0)
	contains(t, "--browser piped", r.err, "Not opening a browser: standard output is not a terminal.")
	if _, err := os.Stat(opened); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the browser ran with standard output piped (%v)", err)
	}
	r = w.run(runOpts{tty: true, env: env}, "preview", "open", "pr-123", "-n", nsShop, "--browser")
	expect(t, r, 0)
	if got, err := os.ReadFile(opened); err != nil || string(got) != "https://pr-123.preview.example.dev\n" {
		t.Errorf("the browser was given %q (%v)", got, err)
	}
}

// testPreviewDelete: a deployment environment refused; no --yes off a terminal refused; "no" on a
// terminal cancels (exit 2); "yes" deletes; --wait until gone, and exit 8 while the operator's
// finalizer holds it past --timeout.
func (w *world) testPreviewDelete(t *testing.T) {
	r := w.run(runOpts{}, "preview", "delete", "staging", "-n", nsShop, "--yes")
	expect(t, r, 1)
	contains(t, "staging", r.err, "error: environment shop-web/staging is of type deployment (a long-lived environment), not a preview")
	r = w.run(runOpts{}, "preview", "delete", "pr-124", "-n", nsShop)
	expect(t, r, 1)
	contains(t, "no --yes", r.err, "refusing without --yes when not on a terminal")
	r = w.run(runOpts{tty: true, stdin: "n\n"}, "preview", "delete", "pr-124", "-n", nsShop)
	expect(t, r, 2)
	contains(t, "no", r.err, "Delete preview pr-124 in namespace shop-web, with its namespace shop-web-pr-124 and everything deployed there? [y/N]: ", "cancelled")
	w.expectEnvironment(t, "pr-124", true)
	r = w.run(runOpts{tty: true, stdin: "y\n"}, "preview", "delete", "pr-124", "-n", nsShop, "--wait")
	expect(t, r, 0)
	contains(t, "yes", r.err, "► Deleting preview shop-web/pr-124\n", "✔ Preview shop-web/pr-124 deleted\n")
	w.expectEnvironment(t, "pr-124", false)

	r = w.run(runOpts{}, "preview", "delete", "pr-125", "-n", nsShop, "--yes", "--wait", "--timeout", "2s")
	expect(t, r, 8)
	contains(t, "held by the finalizer", r.err, "error: preview shop-web/pr-125: still being deleted after --timeout 2s: Serving https://pr-125.preview.example.dev")
	// The operator releases it once its namespace is gone.
	e := &catalystv1.Environment{}
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: nsShop, Name: "pr-125"}, e); err != nil || e.DeletionTimestamp.IsZero() {
		t.Fatalf("pr-125 is being deleted: %v, %v", err, e.DeletionTimestamp)
	}
	e.Finalizers = nil
	if err := w.c.Update(w.ctx, e); err != nil {
		t.Fatal(err)
	}
	w.expectEnvironment(t, "pr-125", false)
}

func (w *world) expectEnvironment(t *testing.T, name string, exists bool) {
	t.Helper()
	err := w.c.Get(w.ctx, client.ObjectKey{Namespace: nsShop, Name: name}, &catalystv1.Environment{})
	if exists && err != nil || !exists && !apierrors.IsNotFound(err) {
		t.Errorf("environment %s: exists %v, got %v", name, exists, err)
	}
}

// testBinary runs the built slipway as a process with KUBECONFIG pointing at the control plane:
// the same table as in-process, an error's exit code, a failed reconcile's 1 and a timeout's 8.
func (w *world) testBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "slipway")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/slipway").CombinedOutput(); err != nil {
		t.Fatalf("building slipway: %v\n%s", err, out)
	}
	env := []string{"KUBECONFIG=" + w.env.Kubeconfig, "HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	run := func(args ...string) result {
		cmd := exec.CommandContext(w.ctx, bin, args...)
		cmd.Env = env
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("running slipway %s: %v", strings.Join(args, " "), err)
		}
		return result{out: out.String(), err: errOut.String(), code: cmd.ProcessState.ExitCode()}
	}

	r := run("get", "werfbundles", "-A")
	expect(t, r, 0, "get", "werfbundles", "-A")
	if in := w.run(runOpts{}, "get", "werfbundles", "-A"); r.out != in.out {
		t.Errorf("the binary printed\n%s\nin-process slipway printed\n%s", r.out, in.out)
	}
	contains(t, "the binary's table", r.out, "team-a\tapp\t1.3.0\t1.4.0\tfalse\t", "team-a\tpaused\t-\t-\ttrue\t", "team-b\tbroken\t-\t1.0.0\tfalse\t")
	r = run("preview", "open", "pr-123", "-n", nsShop)
	expect(t, r, 0)
	if r.out != "https://pr-123.preview.example.dev\n" {
		t.Errorf("preview open printed %q", r.out)
	}
	r = run("get", "wb", "nope", "-n", nsA)
	expect(t, r, 1)
	if r.err != "error: werfbundle nope not found in namespace team-a\n" {
		t.Errorf("stderr %q", r.err)
	}
	// The failed revision is retried, and fails again.
	r = run("reconcile", "wb", "app", "-n", nsA)
	expect(t, r, 1)
	contains(t, "retried failure", r.err, "DeployFailed: deploy of tag 1.4.0 failed", failLastLine)
	w.outcomes.slowTag("1.5.0", time.Minute)
	registrytest.PushBundle(t, w.reg.Host, "demo/app", "1.5.0")
	r = run("reconcile", "wb", "app", "-n", nsA, "--timeout", "3s")
	expect(t, r, 8)
	contains(t, "timeout", r.err, "still under way after --timeout 3s: Running apply Job team-a/app-apply-", "for tag 1.5.0")
}

// testLogsFollow: --follow streams the running Job's log (the Binary step left a deploy running
// for a minute) until --timeout, then exits 8.
func (w *world) testLogsFollow(t *testing.T) {
	b := w.getBundle(t, nsA, "app")
	if b.Status.ActiveJob == "" {
		t.Fatalf("no Job runs: %+v", b.Status)
	}
	r := w.run(runOpts{}, "logs", "wb", "app", "-n", nsA, "--follow", "--timeout", "4s")
	expect(t, r, 8)
	if r.out != failLog {
		t.Errorf("logs --follow printed %q, want the running pod's log", r.out)
	}
	contains(t, "follow", r.err, "► Log of Job team-a/"+b.Status.ActiveJob+" (running)",
		"error: Job team-a/"+b.Status.ActiveJob+" still runs after --timeout 4s")
}

// testCompleteAndNotServed: -n and a NAME complete from the cluster (namespaces, the kind's names);
// a kind the cluster does not serve says the CRDs are missing. Last step: it deletes the WebApp CRD.
func (w *world) testCompleteAndNotServed(t *testing.T) {
	t.Setenv("KUBECONFIG", w.env.Kubeconfig) // __complete completes its last argument: no --kubeconfig after it
	r := w.run(runOpts{noKubeconfig: true}, "__complete", "get", "wb", "-n", "")
	expect(t, r, 0)
	contains(t, "namespaces completed", r.out, "\n"+nsA+"\n", "\n"+nsB+"\n")
	r = w.run(runOpts{noKubeconfig: true}, "__complete", "get", "wb", "-n", nsA, "")
	expect(t, r, 0)
	contains(t, "bundle names completed", r.out, "app\n", "paused\n")

	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "webapps.webapp.slipway.dev"}}
	if err := w.c.Delete(w.ctx, crd); err != nil {
		t.Fatal(err)
	}
	// The API server stops serving the kind once the CRD is gone, a moment after the delete.
	const want = "error: the cluster does not serve WebApps (webapp.slipway.dev/v1): are slipway's CRDs installed? (kubectl get crd webapps.webapp.slipway.dev)\n"
	deadline := time.Now().Add(30 * time.Second)
	for r = w.run(runOpts{}, "get", "webapps", "-A"); r.err != want && time.Now().Before(deadline); r = w.run(runOpts{}, "get", "webapps", "-A") {
		time.Sleep(200 * time.Millisecond)
	}
	expect(t, r, 1)
	if r.err != want {
		t.Errorf("get webapps without the WebApp CRD: stderr %q, want %q", r.err, want)
	}
	// One WebApp by name: not "not found", the same answer (a list of the kind is NotFound too).
	r = w.run(runOpts{}, "get", "webapp", "web", "-n", nsA)
	expect(t, r, 1)
	if r.err != want {
		t.Errorf("get webapp web without the WebApp CRD: stderr %q, want %q", r.err, want)
	}
}
