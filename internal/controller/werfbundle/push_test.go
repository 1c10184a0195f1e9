//go:build e2e

package werfbundle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/receiver"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

const pushSecret = "push-secret"

// replica is one operator process of a multi-replica deployment: a manager with leader election
// and, when it has one, the push receiver listening on hookURL.
type replica struct {
	mgr     ctrl.Manager
	hookURL string
}

// startReplica runs a manager as the operator's user with leader election on the Lease leaseID,
// the WerfBundle controller (reconciling only while it leads) and, with hook, the push receiver
// added the way the operator adds it. It returns once the manager's cache has synced and the
// receiver listens.
func (f *fixture) startReplica(leaseID string, hook bool) *replica {
	f.t.Helper()
	r := &werfbundle.Reconciler{OperatorNamespace: f.opNS, Logs: f.logs, DecoratePod: f.outcomes.decorate}
	rep := &replica{}
	addr := testenv.FreeAddr(f.t)
	opts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: f.opNS, GracefulShutdownTimeout: 10 * time.Second,
		LeaderElect: true, LeaderElectionID: leaseID,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	ctx, cancel := context.WithCancel(f.ctx)
	mgr, err := operator.NewManager(ctx, operatorConfig(f.t), scheme.New(), opts, []operator.Controller{{
		Name: "werfbundle",
		Setup: func(ctx context.Context, mgr ctrl.Manager, _ operator.Options) error {
			r.Client, r.APIReader, r.Recorder = mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("werfbundle-test")
			if err := r.SetupWithManager(ctx, mgr, controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4}); err != nil {
				return err
			}
			if !hook {
				return nil
			}
			return mgr.Add(receiver.New(receiver.Options{Addr: addr, Secret: []byte(pushSecret), Trigger: r,
				Logger: mgr.GetLogger().WithName("werfbundle-webhook")}))
		},
	}})
	if err != nil {
		cancel()
		f.t.Fatal(err)
	}
	rep.mgr = mgr
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			f.t.Errorf("manager: %v", err)
		}
	}()
	f.t.Cleanup(func() { cancel(); <-done })
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		f.t.Fatal("the replica's cache did not sync")
	}
	if hook {
		rep.hookURL = "http://" + addr + "/hook"
		f.eventually("the replica's receiver listens", func() bool {
			resp, err := http.Get(rep.hookURL)
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusMethodNotAllowed
		})
	}
	return rep
}

// leads reports whether the replica has won the election.
func (r *replica) leads() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// pushAnswer is the receiver's response.
type pushAnswer struct {
	status    int
	Events    int    `json:"events"`
	Triggered int    `json:"triggered"`
	Error     string `json:"error"`
}

// push delivers a generic push notification for repository:tag to a receiver.
func (f *fixture) push(url, repository, tag string) pushAnswer {
	f.t.Helper()
	body := `{"repository":"` + repository + `","tag":"` + tag + `"}`
	req, err := http.NewRequestWithContext(f.ctx, http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+pushSecret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	a := pushAnswer{status: resp.StatusCode}
	if err := json.Unmarshal(raw, &a); err != nil {
		f.t.Fatalf("receiver answered %d %q: %v", resp.StatusCode, raw, err)
	}
	return a
}

// TestWerfBundle_PushToAFollowerPollsOnTheLeader runs two replicas, as a Deployment with a
// Service in front would: the delivery reaches the one that did not win the election, which
// records the push on the bundle; the leader sees it, polls at once (the interval is an hour) and
// deploys the pushed tag, and records the push it handled in status.
func TestWerfBundle_PushToAFollowerPollsOnTheLeader(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	b := f.bundle("app", reg.Repository("demo/app"))
	b.Spec.Registry.PollInterval = &metav1.Duration{Duration: time.Hour}
	f.create(b)

	lease := "slipway-werfbundle-push-" + rand.String(5)
	leader := f.startReplica(lease, false)
	testenv.Eventually(f.ctx, t, "the first replica leads", func() (bool, error) { return leader.leads(), nil })
	follower := f.startReplica(lease, true)
	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")

	registrytest.PushBundle(t, reg.Host, "demo/app", "1.1.0")
	if follower.leads() {
		t.Fatal("the second replica leads; the test needs it to follow")
	}
	got := f.push(follower.hookURL, reg.Repository("demo/app"), "1.1.0")
	if got.status != http.StatusAccepted || got.Events != 1 || got.Triggered != 1 {
		t.Fatalf("the follower's receiver answered %+v, want 202 with 1 event and 1 bundle marked", got)
	}
	// Acknowledged means written: the annotation is in the API server when the sender gets 202.
	marked := f.get(b).Annotations[werfv1.PushReceivedAnnotation]
	if _, err := time.Parse(time.RFC3339Nano, marked); err != nil {
		t.Fatalf("annotation %s = %q after a 202, want the time of the push: %v", werfv1.PushReceivedAnnotation, marked, err)
	}

	synced := f.waitPhase(b, werfv1.PhaseSynced, "1.1.0")
	synced = f.waitFor(b, "the push is recorded as handled", func(got *werfv1.WerfBundle) bool {
		return got.Status.LastHandledPush == marked
	})
	if synced.Status.LastHandledReconcileNow != "" {
		t.Errorf("lastHandledReconcileNow = %q; a push must not pass for a reconcile-now request", synced.Status.LastHandledReconcileNow)
	}
	if follower.leads() {
		t.Error("the follower won the election during the test; the push may not have crossed replicas")
	}
}

// TestWerfBundle_PushDoesNotRetryAFailedRevision: a push polls, but unlike werf.io/reconcile-now
// it does not retry the revision that failed; reconcile-now still does.
func TestWerfBundle_PushDoesNotRetryAFailedRevision(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	f.outcomes.failTag("1.0.0")
	b := f.bundle("app", reg.Repository("demo/app"))
	b.Spec.Registry.PollInterval = &metav1.Duration{Duration: time.Hour}
	f.create(b)
	rep := f.startReplica("slipway-werfbundle-push-"+rand.String(5), true)
	failed := f.waitFor(b, "the deploy of 1.0.0 failed", func(got *werfv1.WerfBundle) bool {
		return got.Status.Phase == werfv1.PhaseFailed && got.Status.LastFailedRevision != "" && got.Status.ActiveJob == ""
	})
	if n := len(f.jobs(b)); n != 1 {
		t.Fatalf("%d Jobs after the failed deploy, want 1", n)
	}

	got := f.push(rep.hookURL, reg.Repository("demo/app"), "1.0.0")
	if got.status != http.StatusAccepted || got.Triggered != 1 {
		t.Fatalf("receiver answered %+v, want 202 with 1 bundle marked", got)
	}
	marked := f.get(b).Annotations[werfv1.PushReceivedAnnotation]
	// The reconcile that records the push ran the deploy step before its status write.
	afterPush := f.waitFor(b, "the push is handled", func(got *werfv1.WerfBundle) bool {
		return marked != "" && got.Status.LastHandledPush == marked
	})
	if afterPush.Status.LastFailedRevision != failed.Status.LastFailedRevision || afterPush.Status.Phase != werfv1.PhaseFailed {
		t.Errorf("after the push: phase %s, lastFailedRevision %q; want the failed revision %q kept",
			afterPush.Status.Phase, afterPush.Status.LastFailedRevision, failed.Status.LastFailedRevision)
	}
	if n := len(f.jobs(b)); n != 1 {
		t.Fatalf("%d Jobs after the push, want 1: a push must not retry a failed revision", n)
	}

	cur := f.get(b)
	cur.Annotations[werfv1.ReconcileNowAnnotation] = "retry-1"
	if err := f.c.Update(f.ctx, cur); err != nil {
		t.Fatal(err)
	}
	f.eventually("reconcile-now retries the failed revision with a second Job", func() bool { return len(f.jobs(b)) == 2 })
	retried := f.waitFor(b, "the reconcile-now request is handled", func(got *werfv1.WerfBundle) bool {
		return got.Status.LastHandledReconcileNow == "retry-1"
	})
	if retried.Status.LastHandledPush != marked {
		t.Errorf("lastHandledPush = %q after reconcile-now, want %q", retried.Status.LastHandledPush, marked)
	}
}

// TestWerfBundle_PushToASuspendedBundleWritesNothing: the receiver skips a suspended bundle (no
// annotation, not counted) and marks the other bundle of the same repository.
func TestWerfBundle_PushToASuspendedBundleWritesNothing(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	suspended := f.bundle("paused", reg.Repository("demo/app"))
	suspended.Spec.Suspend = true
	active := f.bundle("active", reg.Repository("demo/app"))
	f.create(suspended)
	f.create(active)
	rep := f.startReplica("slipway-werfbundle-push-"+rand.String(5), true)
	f.waitPhase(active, werfv1.PhaseSynced, "1.0.0")
	before := f.waitFor(suspended, "the suspension is in status", func(got *werfv1.WerfBundle) bool {
		c := condition(got, "Ready")
		return c != nil && c.Reason == werfbundle.ReasonSuspended
	})

	got := f.push(rep.hookURL, reg.Repository("demo/app"), "1.0.0")
	if got.status != http.StatusAccepted || got.Triggered != 1 {
		t.Fatalf("receiver answered %+v, want 202 with only the active bundle marked", got)
	}
	if v := f.get(active).Annotations[werfv1.PushReceivedAnnotation]; v == "" {
		t.Error("the active bundle has no push annotation")
	}
	after := f.get(suspended)
	if v, ok := after.Annotations[werfv1.PushReceivedAnnotation]; ok {
		t.Errorf("the suspended bundle got %s = %q", werfv1.PushReceivedAnnotation, v)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the suspended bundle was written: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
	}
}

// TestWerfBundle_RefusedPushIsNotAcknowledged: when the API server refuses to record the push on
// one bundle (here an admission policy), the receiver still marks the others but answers 503 with
// Retry-After, so the sender retries; the retry, once the write goes through, is acknowledged.
func TestWerfBundle_RefusedPushIsNotAcknowledged(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	ok := f.bundle("ok", reg.Repository("demo/app"))
	refused := f.bundle("refused", reg.Repository("demo/app"))
	f.create(ok)
	f.create(refused)
	rep := f.startReplica("slipway-werfbundle-push-"+rand.String(5), true)
	f.waitPhase(ok, werfv1.PhaseSynced, "1.0.0")
	f.waitPhase(refused, werfv1.PhaseSynced, "1.0.0")

	removePolicy := f.refusePushes(refused)
	got := f.push(rep.hookURL, reg.Repository("demo/app"), "1.0.0")
	if got.status != http.StatusServiceUnavailable || got.Triggered != 1 || got.Error == "" {
		t.Fatalf("receiver answered %+v, want 503 with 1 bundle marked and an error", got)
	}
	if v := f.get(ok).Annotations[werfv1.PushReceivedAnnotation]; v == "" {
		t.Error("the bundle whose write was allowed has no push annotation")
	}
	if v := f.get(refused).Annotations[werfv1.PushReceivedAnnotation]; v != "" {
		t.Errorf("the refused bundle has %s = %q", werfv1.PushReceivedAnnotation, v)
	}

	removePolicy()
	f.eventually("the sender's retry is acknowledged", func() bool {
		got = f.push(rep.hookURL, reg.Repository("demo/app"), "1.0.0")
		return got.status == http.StatusAccepted
	})
	if got.Triggered != 2 {
		t.Errorf("the retry marked %d bundles, want 2", got.Triggered)
	}
	marked := f.get(refused).Annotations[werfv1.PushReceivedAnnotation]
	f.waitFor(refused, "the retried push is handled", func(got *werfv1.WerfBundle) bool {
		return marked != "" && got.Status.LastHandledPush == marked
	})
}

// refusePushes makes the API server refuse the push annotation on b, through a
// ValidatingAdmissionPolicy, and waits until it does. It returns a func that removes the policy.
func (f *fixture) refusePushes(b *werfv1.WerfBundle) (remove func()) {
	f.t.Helper()
	name := "refuse-push-" + rand.String(5)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{werfv1.GroupVersion.Group},
						APIVersions: []string{"*"}, Resources: []string{"werfbundles"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `!(object.metadata.namespace == '` + b.Namespace + `' && object.metadata.name == '` + b.Name + `' && ` +
					`has(object.metadata.annotations) && '` + werfv1.PushReceivedAnnotation + `' in object.metadata.annotations)`,
				Message: "pushes refused for this test",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	f.create(policy)
	f.create(binding)
	removed := false
	remove = func() {
		if removed {
			return
		}
		removed = true
		for _, o := range []client.Object{binding, policy} {
			if err := f.c.Delete(context.Background(), o); client.IgnoreNotFound(err) != nil {
				f.t.Errorf("deleting %s: %v", o.GetName(), err)
			}
		}
	}
	f.t.Cleanup(remove)
	probe := client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+werfv1.PushReceivedAnnotation+`":"probe"}}}`))
	f.eventually("the API server enforces the policy", func() bool {
		err := f.c.Patch(f.ctx, f.get(b), probe, client.DryRunAll)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
	})
	return remove
}
