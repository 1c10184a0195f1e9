//go:build e2e

package werfbundle_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

var errCrashed = errors.New("the operator died before this write")

// crashingClient is the operator's client that stops writing from the n-th write on, as a process
// killed after n-1 writes would; reads go on. calls counts the writes tried.
func crashingClient(t *testing.T, n int, calls *atomic.Int32) client.Client {
	t.Helper()
	c, err := client.NewWithWatch(operatorConfig(t), client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	write := func() error {
		if int(calls.Add(1)) >= n {
			return errCrashed
		}
		return nil
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if err := write(); err != nil {
				return err
			}
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			if err := write(); err != nil {
				return err
			}
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := write(); err != nil {
				return err
			}
			return c.Patch(ctx, o, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			if err := write(); err != nil {
				return err
			}
			return c.Delete(ctx, o, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := write(); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := write(); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
}

// crashWorld is a bundle with values (so its Job has a Secret) driven by hand.
type crashWorld struct {
	*direct
	values *corev1.ConfigMap
}

func newCrashWorld(t *testing.T, reg *registrytest.Registry, opts ...bundleOption) *crashWorld {
	t.Helper()
	values := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-values"},
		Data: map[string]string{"values.yaml": "replicas: 2\n"}}
	opts = append(opts, withValuesFrom(werfv1.ValuesReference{ConfigMapRef: &werfv1.ValuesSource{Name: "app-values"}}))
	d := newDirect(t, reg.Repository("demo/app"), opts...)
	values.Namespace = d.ns
	d.create(values)
	d.outcomes.setDuration(10 * time.Minute) // the Job runs while the test looks at it
	d.r.DecoratePod = d.outcomes.decorate
	return &crashWorld{direct: d, values: values}
}

// crashAt runs, as the operator does, a reconcile and the one its deferred status write asks for
// (werfbundle.DefaultStatusDelay), with a client that dies at the n-th write. It returns how many
// writes went through and whether the reconciles got to the n-th.
func (w *crashWorld) crashAt(n int) (written int, crashed bool) {
	w.t.Helper()
	var calls atomic.Int32
	r := &werfbundle.Reconciler{Client: crashingClient(w.t, n, &calls), APIReader: operatorClient(w.t), Clock: w.clock,
		Logs: w.logs, OperatorNamespace: w.opNS, Registry: w.r.Registry, DecoratePod: w.outcomes.decorate,
		StatusDelay: werfbundle.DefaultStatusDelay}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w.b)}
	if res, err := r.Reconcile(w.ctx, req); err == nil && res.Priority != nil {
		_, _ = r.Reconcile(w.ctx, req)
	}
	tried := int(calls.Load())
	return min(tried, n-1), tried >= n
}

// restart replaces the reconciler by a new one, as a restarted operator, and reconciles until the
// bundle names a running Job.
func (w *crashWorld) restart() *werfv1.WerfBundle {
	w.t.Helper()
	w.r = &werfbundle.Reconciler{Client: operatorClient(w.t), APIReader: operatorClient(w.t), Clock: w.clock, Logs: w.logs,
		OperatorNamespace: w.opNS, Registry: w.r.Registry, DecoratePod: w.outcomes.decorate, StatusDelay: werfbundle.DefaultStatusDelay}
	for range 3 {
		w.reconcile()
	}
	return w.get(w.b)
}

// checkComplete asserts the state a crash-free reconcile leaves: one Job, named in the status, and
// its Secret holding the values and owned by it; no other Secret of the bundle.
func (w *crashWorld) checkComplete(what string, got *werfv1.WerfBundle, wantValues string) {
	w.t.Helper()
	jobs := w.jobs(w.b)
	if len(jobs) != 1 {
		w.t.Fatalf("%s: %d Jobs, want 1", what, len(jobs))
	}
	j := jobs[0]
	if got.Status.ActiveJob != j.Name {
		w.t.Errorf("%s: status.activeJob = %q, want %q", what, got.Status.ActiveJob, j.Name)
	}
	var secrets corev1.SecretList
	if err := w.c.List(w.ctx, &secrets, client.InNamespace(w.target),
		client.MatchingLabels{werfbundle.LabelBundleName: w.b.Name, werfbundle.LabelBundleNamespace: w.b.Namespace}); err != nil {
		w.t.Fatal(err)
	}
	if len(secrets.Items) != 1 {
		names := []string{}
		for _, s := range secrets.Items {
			names = append(names, s.Name)
		}
		w.t.Fatalf("%s: the bundle's Secrets are %v, want only the Job's %s", what, names, j.Name)
	}
	s := secrets.Items[0]
	if s.Name != j.Name {
		w.t.Errorf("%s: Secret %s, want %s (the Job mounts its namesake)", what, s.Name, j.Name)
	}
	if got := string(s.Data["values.yaml"]); got != wantValues {
		w.t.Errorf("%s: Secret values %q, want %q", what, got, wantValues)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != j.UID {
		w.t.Errorf("%s: Secret owners %+v, want the Job %s (%s)", what, s.OwnerReferences, j.Name, j.UID)
	}
}

// jobWithoutSecret returns a Job of the bundle whose Secret does not exist.
func (w *crashWorld) jobWithoutSecret() *batchv1.Job {
	w.t.Helper()
	for _, j := range w.jobs(w.b) {
		var s corev1.Secret
		if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, &s); err != nil {
			return &j
		}
	}
	return nil
}

// TestWerfBundle_CrashAfterAnyWriteIsCompleted: the operator dies at each write of a first deploy
// in turn (the Secret and the Job, then, in the deferred status write, the Secret's owner and the
// status); at no point does a Job exist
// without its Secret, and a restarted operator completes the deploy: one Job, its Secret with the
// values, owned by it, and nothing left over.
func TestWerfBundle_CrashAfterAnyWriteIsCompleted(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	for n := 1; ; n++ {
		done := false
		t.Run(fmt.Sprintf("dies at write %d", n), func(t *testing.T) {
			w := newCrashWorld(t, reg)
			written, crashed := w.crashAt(n)
			if j := w.jobWithoutSecret(); j != nil {
				t.Errorf("after %d writes the Job %s exists without its Secret: its pod cannot start", written, j.Name)
			}
			done = !crashed // the reconcile ended before the n-th write: every point was tried
			w.checkComplete(fmt.Sprintf("restarted after %d writes", written), w.restart(), "replicas: 2\n")
		})
		if done || n == 8 || t.Failed() {
			return
		}
	}
}

// TestWerfBundle_CrashBetweenSecretAndJobThenNewRevision: the operator dies after writing the
// Secret of one revision; before it is back the values change. The restarted operator deploys the
// new revision and deletes the Secret nobody will mount.
func TestWerfBundle_CrashBetweenSecretAndJobThenNewRevision(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	w := newCrashWorld(t, reg)
	if written, _ := w.crashAt(2); written != 1 {
		t.Fatalf("%d writes before the crash, want 1 (the Secret)", written)
	}
	w.values.Data["values.yaml"] = "replicas: 3\n"
	if err := w.c.Update(w.ctx, w.values); err != nil {
		t.Fatal(err)
	}
	w.checkComplete("restarted after the values changed", w.restart(), "replicas: 3\n")
}

// TestWerfBundle_CrashBeforeSecretOwnedAndJobFinished: the operator dies after creating the Job,
// before making it the owner of its Secret, and the Job finishes while it is down. The restarted
// operator records the outcome and gives the Secret its owner, so it goes with the Job.
func TestWerfBundle_CrashBeforeSecretOwnedAndJobFinished(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	w := newCrashWorld(t, reg)
	w.outcomes.setDuration(0)
	if written, _ := w.crashAt(3); written != 2 {
		t.Fatalf("%d writes before the crash, want 2 (the Secret, the Job)", written)
	}
	w.eventually("the Job finishes", func() bool {
		jobs := w.jobs(w.b)
		return len(jobs) == 1 && jobDone(&jobs[0])
	})
	w.r = &werfbundle.Reconciler{Client: operatorClient(t), APIReader: operatorClient(t), Clock: w.clock, Logs: w.logs,
		OperatorNamespace: w.opNS, Registry: w.r.Registry}
	w.reconcile()
	got := w.get(w.b)
	if got.Status.Phase != werfv1.PhaseSynced {
		t.Fatalf("phase %s after the restart, want Synced (%s)", got.Status.Phase, got.Status.LastErrorMessage)
	}
	j := w.jobs(w.b)[0]
	var s corev1.Secret
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != j.UID {
		t.Errorf("Secret owners %+v, want the finished Job", s.OwnerReferences)
	}
}

// TestWerfBundle_CrashBeforeDriftCorrectionCounted: the operator dies after creating a drift
// correction's Job, before the status write that counts it; the restarted operator counts it from
// the Job, so maxRetries still bounds the corrections.
func TestWerfBundle_CrashBeforeDriftCorrectionCounted(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	w := newCrashWorld(t, reg, withDrift(3))
	w.outcomes.setDuration(0)
	w.reconcile()
	waitSynced(w.direct)
	w.outcomes.checkExit.Store(2)
	w.clock.Step(2 * time.Minute)
	w.reconcile() // the drift check
	w.eventually("the drift check finishes", func() bool {
		for _, j := range w.jobs(w.b) {
			if !jobDone(&j) {
				return false
			}
		}
		return true
	})
	w.outcomes.setDuration(10 * time.Minute)
	// The log of the check, the correction's Secret, its Job, the Secret's owner; not the status.
	if written, crashed := w.crashAt(5); written != 4 || !crashed {
		t.Fatalf("%d writes before the crash (crashed %t), want 4 and the status write refused", written, crashed)
	}
	if c := w.get(w.b).Status.Drift; c != nil && c.Corrections != 0 {
		t.Fatalf("corrections = %d before the restart, want the lost write's 0", c.Corrections)
	}
	w.r = &werfbundle.Reconciler{Client: operatorClient(t), APIReader: operatorClient(t), Clock: w.clock, Logs: w.logs,
		OperatorNamespace: w.opNS, Registry: w.r.Registry, DecoratePod: w.outcomes.decorate}
	w.reconcile()
	got := w.get(w.b)
	if got.Status.Drift == nil || got.Status.Drift.Corrections != 1 {
		t.Errorf("drift status after the restart = %+v, want 1 correction counted", got.Status.Drift)
	}
	running := 0
	for _, j := range w.jobs(w.b) {
		if !jobDone(&j) {
			running++
			if j.Name != got.Status.ActiveJob {
				t.Errorf("running Job %s, status names %q", j.Name, got.Status.ActiveJob)
			}
		}
	}
	if running != 1 {
		t.Errorf("%d running Jobs, want the one correction", running)
	}
}

// TestWerfBundle_LeftSecretGetsTheCurrentCredentials: the operator dies after writing a Job's
// Secret; the registry credentials change before it is back (the revision, and so the name, stay
// the same). The restarted operator brings the Secret's data up to date before creating the Job.
func TestWerfBundle_LeftSecretGetsTheCurrentCredentials(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		StringData: map[string]string{"username": "bot", "password": "old-password"}}
	w := newCrashWorld(t, reg, func(b *werfv1.WerfBundle) {
		b.Spec.Registry.SecretRef = &corev1.LocalObjectReference{Name: "creds"}
		creds.Namespace = b.Namespace
	})
	w.create(creds)
	if written, _ := w.crashAt(2); written != 1 {
		t.Fatalf("%d writes before the crash, want 1 (the Secret)", written)
	}
	creds.StringData = map[string]string{"password": "new-password"}
	if err := w.c.Update(w.ctx, creds); err != nil {
		t.Fatal(err)
	}
	w.checkComplete("restarted after the credentials changed", w.restart(), "replicas: 2\n")
	j := w.jobs(w.b)[0]
	var s corev1.Secret
	if err := w.c.Get(w.ctx, clientKeyIn(j.Namespace, j.Name), &s); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(s.Data["config.json"], &cfg); err != nil {
		t.Fatal(err)
	}
	auth, err := base64.StdEncoding.DecodeString(cfg.Auths[reg.Host].Auth)
	if err != nil || string(auth) != "bot:new-password" {
		t.Errorf("the Job's registry credentials are %q (%v), want bot:new-password", auth, err)
	}
}

// TestWerfBundle_FirstDeployWritesOnlyTheJob: with the operator's status delay, the reconcile that
// deploys a bundle's first tag writes the Job and nothing else, and comes back after the delay
// behind every other queued request; the next reconcile records the Job (activeJob, Syncing) in
// one status patch; the one after writes nothing. A clean stop writes a deferred status. (A restart between the two writes is
// TestWerfBundle_CrashAfterAnyWriteIsCompleted's.)
func TestWerfBundle_FirstDeployWritesOnlyTheJob(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	d := newDirect(t, reg.Repository("demo/app"))
	d.outcomes.setDuration(10 * time.Minute)
	writes := testenv.CountWrites(operatorClient(t))
	d.r.Client, d.r.DecoratePod, d.r.StatusDelay = writes, d.outcomes.decorate, werfbundle.DefaultStatusDelay
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(d.b)}
	step := func(what string, want map[string]int64) ctrl.Result {
		t.Helper()
		writes.Reset()
		res, err := d.r.Reconcile(d.ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := writes.ByVerb(); !maps.Equal(got, want) {
			t.Errorf("%s: writes %v, want %v", what, got, want)
		}
		return res
	}

	res := step("the first deploy", map[string]int64{"POST Job": 1})
	if res.RequeueAfter != werfbundle.DefaultStatusDelay || res.Priority == nil || *res.Priority >= handler.LowPriority {
		t.Errorf("after the Job: requeue %s with priority %v, want %s below the initial list's %d",
			res.RequeueAfter, res.Priority, werfbundle.DefaultStatusDelay, handler.LowPriority)
	}
	jobs := d.jobs(d.b)
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs, want 1", len(jobs))
	}
	if st := d.get(d.b).Status; st.ActiveJob != "" || st.Phase != "" {
		t.Errorf("status written with the Job: activeJob %q, phase %q", st.ActiveJob, st.Phase)
	}

	step("the deferred status write", map[string]int64{"PATCH WerfBundle/status": 1})
	st := d.get(d.b).Status
	if st.ActiveJob != jobs[0].Name || st.Phase != werfv1.PhaseSyncing {
		t.Errorf("status after the deferred write: activeJob %q, phase %q; want %q, Syncing", st.ActiveJob, st.Phase, jobs[0].Name)
	}
	step("the next reconcile", map[string]int64{})
	if n := len(d.jobs(d.b)); n != 1 {
		t.Errorf("%d Jobs, want 1", n)
	}

	// A clean stop (SIGTERM) writes what is deferred.
	d2 := newDirect(t, reg.Repository("demo/app"))
	d2.r.Client, d2.r.DecoratePod, d2.r.StatusDelay = writes, d.outcomes.decorate, werfbundle.DefaultStatusDelay
	d2.reconcile()
	writes.Reset()
	werfbundle.StopForTest(d2.r)
	if got, want := writes.ByVerb(), map[string]int64{"PATCH WerfBundle/status": 1}; !maps.Equal(got, want) {
		t.Errorf("the stop: writes %v, want %v", got, want)
	}
	if st := d2.get(d2.b).Status; st.ActiveJob == "" || st.Phase != werfv1.PhaseSyncing {
		t.Errorf("status after the stop: activeJob %q, phase %q; want the Job, Syncing", st.ActiveJob, st.Phase)
	}
}
