//go:build e2e

package werfbundle_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// TestWerfBundle_ValuesMergedIntoMountedFile: ConfigMap then Secret values are merged in order
// into the Job's Secret and mounted as a file; no value reaches the Job's arguments; a change to
// a source redeploys; a missing optional source is skipped and a missing required one fails.
func TestWerfBundle_ValuesMergedIntoMountedFile(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	f.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-values", Namespace: f.ns},
		Data: map[string]string{"values.yaml": "replicas: 2\ndb:\n  host: db.local\n  password: placeholder\n"}})
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-secrets", Namespace: f.target},
		Data: map[string][]byte{"values.yaml": []byte("db:\n  password: s3cr3t-value\n")}})
	b := f.bundle("app", reg.Repository("demo/app"), withValuesFrom(
		werfv1.ValuesReference{ConfigMapRef: &werfv1.ValuesSource{Name: "app-values"}},
		werfv1.ValuesReference{SecretRef: &werfv1.ValuesSource{Name: "app-secrets"}},
		werfv1.ValuesReference{SecretRef: &werfv1.ValuesSource{Name: "not-there", Optional: true}},
	))
	f.create(b)
	f.start()
	first := f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")

	jobs := f.jobs(b)
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs, want 1", len(jobs))
	}
	j := jobs[0]
	if a := argsOf(&j); strings.Contains(a, "s3cr3t") || strings.Contains(a, "--set") || !strings.Contains(a, "--values=/werf/values/values.yaml") {
		t.Errorf("values reached the command line: %s", argsOf(&j))
	}
	var secret corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, &secret); err != nil {
		t.Fatalf("the Job's values Secret: %v", err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(secret.Data["values.yaml"], &vals); err != nil {
		t.Fatal(err)
	}
	db, _ := vals["db"].(map[string]any)
	if vals["replicas"] != float64(2) || db["host"] != "db.local" || db["password"] != "s3cr3t-value" {
		t.Errorf("merged values = %v", vals)
	}
	if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].Name != j.Name {
		t.Errorf("values Secret not owned by its Job: %+v", secret.OwnerReferences)
	}
	for _, e := range eventsOf(f, b) {
		if strings.Contains(e, "s3cr3t") {
			t.Errorf("an event carries a secret value: %s", e)
		}
	}

	// A change to the ConfigMap redeploys (same tag, new revision).
	var cm corev1.ConfigMap
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "app-values"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["values.yaml"] = "replicas: 3\n"
	if err := f.c.Update(f.ctx, &cm); err != nil {
		t.Fatal(err)
	}
	f.waitFor(b, "a new revision is Synced", func(got *werfv1.WerfBundle) bool {
		return got.Status.Phase == werfv1.PhaseSynced && got.Status.LastAppliedRevision != first.Status.LastAppliedRevision
	})
	if n := len(f.jobs(b)); n != 2 {
		t.Errorf("%d Jobs, want 2", n)
	}

	// A required source that disappears stops the deploy with a clear message.
	if err := f.c.Delete(f.ctx, &cm); err != nil {
		t.Fatal(err)
	}
	got := f.waitPhase(b, werfv1.PhaseFailed, "")
	if r := conditions.Get(got.Status.Conditions, conditions.Ready); r == nil || r.Reason != werfbundle.ReasonValuesInvalid ||
		!strings.Contains(r.Message, `ConfigMap "app-values" not found`) {
		t.Errorf("Ready = %+v", r)
	}
}

func eventsOf(f *fixture, b *werfv1.WerfBundle) []string {
	var list corev1.EventList
	_ = f.c.List(f.ctx, &list, client.InNamespace(b.Namespace))
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// TestWerfBundle_DriftIsDetectedAndCorrectedThenGivesUp: a check Job that exits 2 (changes
// planned) sets DriftDetected and re-applies, at most maxRetries times in a row; a clean check
// clears it.
func TestWerfBundle_DriftIsDetectedAndCorrectedThenGivesUp(t *testing.T) {
	reg := startRegistry(t, "1.0.0")
	d := newDirect(t, reg.Repository("demo/app"), withDrift(2))
	d.r.DecoratePod = d.outcomes.decorate
	waitSynced(d)
	if c := conditions.Get(d.get(d.b).Status.Conditions, werfbundle.DriftDetected); c != nil {
		t.Errorf("DriftDetected before any check: %+v", c)
	}

	// Every check finds drift from now on.
	d.outcomes.checkExit.Store(2)
	for i := 1; i <= 2; i++ {
		d.clock.Step(2 * time.Minute)
		d.eventually("drift is found and a correction runs", func() bool {
			d.reconcile()
			got := d.get(d.b)
			c := conditions.Get(got.Status.Conditions, werfbundle.DriftDetected)
			return c != nil && c.Status == metav1.ConditionTrue && got.Status.Drift.Corrections == int32(i)
		})
		waitSynced(d)
	}
	d.clock.Step(2 * time.Minute)
	d.eventually("correction gives up", func() bool {
		d.reconcile()
		c := conditions.Get(d.get(d.b).Status.Conditions, werfbundle.DriftDetected)
		return c != nil && c.Reason == werfbundle.ReasonDriftNotCorrected
	})
	got := d.get(d.b)
	if got.Status.Phase != werfv1.PhaseFailed || !strings.Contains(got.Status.LastErrorMessage, "drift remains after 2 corrections") {
		t.Errorf("after giving up: phase %s, message %q", got.Status.Phase, got.Status.LastErrorMessage)
	}

	// The drift goes away: the next check clears it.
	d.outcomes.checkExit.Store(0)
	d.clock.Step(2 * time.Minute)
	d.eventually("a clean check clears the drift", func() bool {
		d.reconcile()
		got := d.get(d.b)
		c := conditions.Get(got.Status.Conditions, werfbundle.DriftDetected)
		return c != nil && c.Status == metav1.ConditionFalse && got.Status.Phase == werfv1.PhaseSynced
	})
}

// TestWerfBundle_PushWebhookDeploysAtOnce: a distribution push notification makes the bundle
// poll now instead of at its (long) interval.
func TestWerfBundle_PushWebhookDeploysAtOnce(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	b := f.bundle("app", reg.Repository("demo/app"))
	b.Spec.Registry.PollInterval = &metav1.Duration{Duration: time.Hour}
	f.create(b)
	f.start()
	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")

	registrytest.PushBundle(t, reg.Host, "demo/app", "1.1.0")
	srv := receiver.New(receiver.Options{Secret: []byte("hook-secret"), Trigger: f.reconciler()})
	body := []byte(`{"repository":"` + reg.Repository("demo/app") + `","tag":"1.1.0"}`)
	req, _ := http.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer hook-secret")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"triggered":1`) {
		t.Fatalf("webhook answered %d %s", rec.Code, rec.Body.String())
	}
	f.waitPhase(b, werfv1.PhaseSynced, "1.1.0")
}

// TestWerfBundle_RollbackOnFailureRedeploysLastGoodTag: 1.1.0 fails, 1.0.0 is re-deployed, and
// 1.1.0 is not retried in a loop.
func TestWerfBundle_RollbackOnFailureRedeploysLastGoodTag(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	b := f.bundle("app", reg.Repository("demo/app"))
	b.Spec.Converge.RollbackOnFailure = true
	f.create(b)
	f.start()
	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")

	f.outcomes.failTag("1.1.0")
	registrytest.PushBundle(t, reg.Host, "demo/app", "1.1.0")
	got := f.get(b)
	got.Annotations = map[string]string{werfv1.ReconcileNowAnnotation: "push"}
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	got = f.waitFor(b, "rolled back to 1.0.0", func(got *werfv1.WerfBundle) bool {
		return strings.Contains(got.Status.LastErrorMessage, "rolled back to tag 1.0.0") && got.Status.ActiveJob == ""
	})
	if got.Status.Phase != werfv1.PhaseFailed || got.Status.LastAppliedTag != "1.0.0" {
		t.Errorf("after rollback: phase %s, tag %s", got.Status.Phase, got.Status.LastAppliedTag)
	}
	time.Sleep(3 * time.Second)
	if n := len(f.jobs(b)); n != 3 {
		t.Errorf("%d Jobs, want 3 (1.0.0, failed 1.1.0, rollback): 1.1.0 must not be retried in a loop", n)
	}
}

// TestWerfBundle_RegistryCredentialsStayOutOfJobArgs: a registry behind basic auth is polled with
// the Secret's credentials; the Job gets them as a mounted docker config, never as arguments.
func TestWerfBundle_RegistryCredentialsStayOutOfJobArgs(t *testing.T) {
	f := newFixture(t)
	reg := registrytest.StartDistribution(t, registrytest.WithBasicAuth("robot", "pa55-w0rd"))
	registrytest.PushBundle(t, reg.Host, "demo/app", "1.0.0", registrytest.WithPushAuth("robot", "pa55-w0rd"))
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-creds", Namespace: f.ns},
		Data: map[string][]byte{"username": []byte("robot"), "password": []byte("pa55-w0rd")}})
	b := f.bundle("app", reg.Repository("demo/app"))
	b.Spec.Registry.SecretRef = &corev1.LocalObjectReference{Name: "registry-creds"}
	f.create(b)
	f.start()
	got := f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")
	j := f.jobs(b)[0]
	if args := argsOf(&j); strings.Contains(args, "pa55") || !strings.Contains(args, "--docker-config=/werf/docker") {
		t.Errorf("Job args: %s", args)
	}
	var secret corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, &secret); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(secret.Data["config.json"]), reg.Host) {
		t.Errorf("docker config lacks the registry: %s", secret.Data["config.json"])
	}
	if s := fmt.Sprintf("%+v", got.Status); strings.Contains(s, "pa55") {
		t.Error("status carries the password")
	}
	for _, e := range eventsOf(f, b) {
		if strings.Contains(e, "pa55") {
			t.Errorf("event carries the password: %s", e)
		}
	}
}
