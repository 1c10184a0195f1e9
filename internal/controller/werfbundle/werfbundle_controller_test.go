//go:build e2e

package werfbundle_test

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// TestWerfBundle_NewTagCreatesOneJobAndSyncs: the highest stable tag matching the constraint is
// deployed by exactly one Job that kwok completes; the bundle ends Synced and kstatus Current.
func TestWerfBundle_NewTagCreatesOneJobAndSyncs(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0", "1.1.0", "2.0.0-rc.1", "latest")
	b := f.bundle("app", reg.Repository("demo/app"), withConstraint(">=1.0.0"))
	f.create(b)
	f.start()

	got := f.waitPhase(b, werfv1.PhaseSynced, "1.1.0")
	if s := kstatus(t, got); s != status.CurrentStatus {
		t.Errorf("kstatus = %s, want Current", s)
	}
	if !conditions.IsTrue(got.Status.Conditions, conditions.Ready) {
		t.Errorf("Ready is not True: %+v", got.Status.Conditions)
	}
	if got.Status.LastSyncTime == nil || got.Status.LastAppliedRevision == "" || got.Status.ConsecutiveFailures != 0 {
		t.Errorf("status incomplete: %+v", got.Status)
	}
	jobs := f.jobs(b)
	if len(jobs) != 1 {
		t.Fatalf("want exactly one Job, got %d", len(jobs))
	}
	j := jobs[0]
	args := argsOf(&j)
	for _, want := range []string{"bundle apply", "--repo=" + reg.Repository("demo/app"), "--tag=1.1.0",
		"--release=app", "--namespace=" + f.target, "--insecure-registry"} {
		if !strings.Contains(args, want) {
			t.Errorf("Job args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "--values") || len(j.Spec.Template.Spec.Volumes) != 1 {
		t.Errorf("a bundle without values got a values file: %q %+v", args, j.Spec.Template.Spec.Volumes)
	}
	spec := j.Spec.Template.Spec
	if spec.ServiceAccountName != "werf-converge" || j.Namespace != f.target {
		t.Errorf("Job runs as %s in %s", spec.ServiceAccountName, j.Namespace)
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("pod may run as root")
	}
	c := spec.Containers[0]
	if c.SecurityContext == nil || *c.SecurityContext.AllowPrivilegeEscalation || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("container security context is not restricted")
	}
	if c.Resources.Limits.Cpu().String() != "1" || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("limits = %v, want the defaults 1 CPU / 1Gi", c.Resources.Limits)
	}
	if got.Status.LastJobLog == "" {
		t.Error("no log stored for the finished Job")
	} else {
		var cm corev1.ConfigMap
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.opNS, Name: got.Status.LastJobLog}, &cm); err != nil {
			t.Errorf("log ConfigMap: %v", err)
		} else if !strings.Contains(cm.Data["log"], "release applied") {
			t.Errorf("stored log = %q", cm.Data["log"])
		}
	}
}

// TestWerfBundle_FailsFastWithoutNamespaceOrServiceAccount: no Job, Failed, Stalled, and a message
// saying what to create.
func TestWerfBundle_FailsFastWithoutNamespaceOrServiceAccount(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	noNS := f.bundle("no-ns", reg.Repository("demo/app"), withTarget("does-not-exist"))
	noSA := f.bundle("no-sa", reg.Repository("demo/app"))
	noSA.Spec.Converge.ServiceAccountName = "missing"
	f.create(noNS)
	f.create(noSA)
	f.start()

	for _, tc := range []struct {
		b      *werfv1.WerfBundle
		reason string
		text   string
	}{
		{noNS, werfbundle.ReasonTargetNamespaceAbsent, `target namespace "does-not-exist" does not exist`},
		{noSA, werfbundle.ReasonServiceAccountAbsent, "ServiceAccount " + f.target + "/missing does not exist"},
	} {
		got := f.waitPhase(tc.b, werfv1.PhaseFailed, "")
		ready := condition(got, conditions.Ready)
		if ready == nil || ready.Reason != tc.reason || !strings.Contains(ready.Message, tc.text) {
			t.Errorf("%s: Ready = %+v, want reason %s and %q", tc.b.Name, ready, tc.reason, tc.text)
		}
		if !conditions.IsTrue(got.Status.Conditions, conditions.Stalled) {
			t.Errorf("%s: not Stalled", tc.b.Name)
		}
		if s := kstatus(t, got); s != status.FailedStatus {
			t.Errorf("%s: kstatus = %s, want Failed", tc.b.Name, s)
		}
		if n := len(f.jobs(tc.b)); n != 0 {
			t.Errorf("%s: %d Jobs created, want none", tc.b.Name, n)
		}
	}
}

// TestWerfBundle_FailedJobIsFailedWithLogAndNotRetried: a Job whose pod fails makes the bundle
// Failed with the reason and the log tail; the same revision is not retried.
func TestWerfBundle_FailedJobIsFailedWithLogAndNotRetried(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	f.outcomes.failTag("1.0.0")
	b := f.bundle("app", reg.Repository("demo/app"))
	f.create(b)
	f.start()

	got := f.waitPhase(b, werfv1.PhaseFailed, "")
	if got.Status.ConsecutiveFailures != 1 {
		t.Errorf("consecutiveFailures = %d, want 1", got.Status.ConsecutiveFailures)
	}
	msg := got.Status.LastErrorMessage
	for _, want := range []string{"deploy of tag 1.0.0 failed", "BackoffLimitExceeded", "log tail", "last line of"} {
		if !strings.Contains(msg, want) {
			t.Errorf("lastErrorMessage %q lacks %q", msg, want)
		}
	}
	if r := condition(got, conditions.Ready); r == nil || r.Reason != werfbundle.ReasonDeployFailed {
		t.Errorf("Ready = %+v", r)
	}
	// A later reconcile (annotation change is an event) must not make a second Job.
	got.Annotations = map[string]string{"example.com/poke": "1"}
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if n := len(f.jobs(b)); n != 1 {
		t.Errorf("%d Jobs, want 1: a failed revision is not retried by itself", n)
	}

	// reconcile-now retries it; this time it succeeds.
	f.outcomes.mu.Lock()
	f.outcomes.failTags = nil
	f.outcomes.mu.Unlock()
	got = f.get(b)
	got.Annotations[werfv1.ReconcileNowAnnotation] = "retry-1"
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")
}

// TestWerfBundle_NewerTagWaitsForRunningJob: one Job at a time; a tag pushed during a deploy is
// deployed after it.
func TestWerfBundle_NewerTagWaitsForRunningJob(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	f.outcomes.setDuration(6 * time.Second)
	b := f.bundle("app", reg.Repository("demo/app"))
	b.Spec.Registry.PollInterval = &metav1.Duration{Duration: 10 * time.Second}
	f.create(b)
	f.start()

	f.waitFor(b, "a Job runs", func(got *werfv1.WerfBundle) bool { return got.Status.Phase == werfv1.PhaseSyncing })
	registrytest.PushBundle(t, reg.Host, "demo/app", "1.2.0")
	// Ask for the new tag at once, while the first Job still runs.
	got := f.get(b)
	got.Annotations = map[string]string{werfv1.ReconcileNowAnnotation: "now"}
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	running := 0
	f.eventually("1.2.0 is deployed", func() bool {
		n := 0
		for _, j := range f.jobs(b) {
			if !jobDone(&j) {
				n++
			}
		}
		running = max(running, n)
		got := f.get(b)
		return got.Status.Phase == werfv1.PhaseSynced && got.Status.LastAppliedTag == "1.2.0"
	})
	if running > 1 {
		t.Errorf("%d Jobs ran at once, want 1", running)
	}
	if n := len(f.jobs(b)); n != 2 {
		t.Errorf("%d Jobs, want 2 (1.0.0 then 1.2.0)", n)
	}
}

// TestWerfBundle_RestartMidDeployMakesNoDuplicate: the operator stops while a Job runs; a new one
// finds the Job, makes no second one and records the outcome.
func TestWerfBundle_RestartMidDeployMakesNoDuplicate(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	f.outcomes.setDuration(8 * time.Second)
	b := f.bundle("app", reg.Repository("demo/app"))
	f.create(b)
	stop := f.start()
	f.waitFor(b, "a Job runs", func(got *werfv1.WerfBundle) bool { return got.Status.ActiveJob != "" })
	stop()
	f.start()
	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")
	if n := len(f.jobs(b)); n != 1 {
		t.Errorf("%d Jobs after the restart, want 1", n)
	}
}

// TestWerfBundle_NoMatchingTagIsACondition: nothing matches; a clear condition, no Job, no
// failure count.
func TestWerfBundle_NoMatchingTagIsACondition(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0", "2.0.0-rc.1", "latest")
	b := f.bundle("app", reg.Repository("demo/app"), withConstraint(">=2.0.0"))
	f.create(b)
	f.start()
	got := f.waitPhase(b, werfv1.PhaseFailed, "")
	r := condition(got, conditions.Ready)
	if r == nil || r.Reason != werfbundle.ReasonNoMatchingTag || !strings.Contains(r.Message, `no tag matches ">=2.0.0"`) {
		t.Errorf("Ready = %+v", r)
	}
	if got.Status.ConsecutiveFailures != 0 || conditions.IsTrue(got.Status.Conditions, conditions.Stalled) {
		t.Errorf("no matching tag counted as a failure: %+v", got.Status)
	}
	if n := len(f.jobs(b)); n != 0 {
		t.Errorf("%d Jobs, want 0", n)
	}
}

// TestWerfBundle_DeletionCleansUpJobsAndLogs: Jobs in another namespace and stored logs go with
// the bundle.
func TestWerfBundle_DeletionCleansUpJobsAndLogs(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	b := f.bundle("app", reg.Repository("demo/app"))
	f.create(b)
	f.start()
	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")
	if err := f.c.Delete(f.ctx, b); err != nil {
		t.Fatal(err)
	}
	f.eventually("Jobs and logs are gone", func() bool {
		logs := f.logsOf(b)
		live := 0
		for _, j := range f.jobs(b) {
			if j.DeletionTimestamp.IsZero() {
				live++
			}
		}
		return live == 0 && len(logs) == 0
	})
}

// TestWerfBundle_DeletedNewestJobLeavesTheStatus: 1.0.0 fails, 1.1.0 succeeds; someone deletes
// the Job of 1.1.0. The failed Job of 1.0.0 is now the newest there, but its outcome is older
// than the one recorded: the bundle stays Synced on 1.1.0, nothing counted again.
func TestWerfBundle_DeletedNewestJobLeavesTheStatus(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	f.outcomes.failTag("1.0.0")
	b := f.bundle("app", reg.Repository("demo/app"))
	f.create(b)
	f.start()
	f.waitPhase(b, werfv1.PhaseFailed, "")

	registrytest.PushBundle(t, reg.Host, "demo/app", "1.1.0")
	got := f.get(b)
	got.Annotations = map[string]string{werfv1.ReconcileNowAnnotation: "now"}
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	synced := f.waitPhase(b, werfv1.PhaseSynced, "1.1.0")
	var newest batchv1.Job
	if err := f.c.Get(f.ctx, clientKeyIn(f.target, synced.Status.LastFinishedJob), &newest); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Delete(f.ctx, &newest, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	f.eventually("the Job of 1.1.0 is gone", func() bool {
		for _, j := range f.jobs(b) {
			if j.Name == newest.Name {
				return false
			}
		}
		return true
	})
	// A change to the bundle makes a reconcile that reads the Jobs as they are now.
	got = f.get(b)
	got.Annotations["example.com/poke"] = "1"
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	after := f.get(b)
	if after.Status.Phase != werfv1.PhaseSynced || after.Status.LastAppliedTag != "1.1.0" ||
		after.Status.LastFinishedJob != newest.Name || after.Status.ConsecutiveFailures != 0 ||
		after.Status.LastFailedRevision != "" {
		t.Errorf("the old Job's outcome came back: phase %s, tag %s, last Job %s (want %s), failures %d, failed revision %q",
			after.Status.Phase, after.Status.LastAppliedTag, after.Status.LastFinishedJob, newest.Name,
			after.Status.ConsecutiveFailures, after.Status.LastFailedRevision)
	}
	if n := len(f.jobs(b)); n != 1 {
		t.Errorf("%d Jobs, want the failed one alone (no new Job for a revision already applied)", n)
	}
}
