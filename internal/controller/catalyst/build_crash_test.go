//go:build e2e

package catalyst_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/testenv"
)

var errCrashed = errors.New("the operator died before this write")

// crashOnce fails the first write the match function picks, as if the operator had died just
// before it; every later write goes through, as from the restarted operator.
type crashOnce struct {
	client.Client
	match   func(verb string, o client.Object) bool
	crashed atomic.Bool
}

func (c *crashOnce) hit(verb string, o client.Object) bool {
	return c.match(verb, o) && c.crashed.CompareAndSwap(false, true)
}

func (c *crashOnce) Create(ctx context.Context, o client.Object, opts ...client.CreateOption) error {
	if c.hit("create", o) {
		return errCrashed
	}
	return c.Client.Create(ctx, o, opts...)
}

func (c *crashOnce) Patch(ctx context.Context, o client.Object, p client.Patch, opts ...client.PatchOption) error {
	if c.hit("patch", o) {
		return errCrashed
	}
	return c.Client.Patch(ctx, o, p, opts...)
}

// inBuildNamespace matches writes of kind T in the build namespace.
func inBuildNamespace[T client.Object](verb string) func(string, client.Object) bool {
	return func(v string, o client.Object) bool {
		_, ok := o.(T)
		return ok && v == verb && o.GetNamespace() == buildNS
	}
}

// buildSecrets lists the Environment's Secrets in the build namespace.
func (f *fixture) buildSecrets(e *catalystv1alpha1.Environment) []corev1.Secret {
	f.t.Helper()
	var list corev1.SecretList
	if err := f.c.List(f.ctx, &list, client.InNamespace(buildNS), client.MatchingLabels{
		catalyst.LabelEnvironmentNamespace: e.Namespace, catalyst.LabelEnvironmentName: e.Name,
	}); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// TestEnvironment_BuildWritesSurviveACrashAtEachStep: a build writes its Secret, then its Job,
// then gives the Secret to the Job. Whichever of these writes the operator dies at, the next
// reconcile completes the build: one Job, which has its Secret, owned by it (so they go
// together), and the environment Ready. (Before, the Job came first: a crash before its Secret
// left a Job whose pod could never mount it.)
func TestEnvironment_BuildWritesSurviveACrashAtEachStep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match func(string, client.Object) bool
	}{
		{"before the Secret", inBuildNamespace[*corev1.Secret]("create")},
		{"after the Secret, before the Job", inBuildNamespace[*batchv1.Job]("create")},
		{"after the Job, before the Secret is given to it", inBuildNamespace[*corev1.Secret]("patch")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			crash := &crashOnce{match: tc.match}
			f.wrap = func(c client.Client) client.Client { crash.Client = c; return crash }
			p := f.project()
			f.create(p)
			f.start()
			f.waitProjectReady(p)
			e := f.createEnvironment(f.environment("pr-3", f.head))
			f.waitReady(e)
			if !crash.crashed.Load() {
				t.Fatal("the build never came to the write the test fails")
			}
			jobs := f.buildJobs(e)
			if len(jobs) != 1 {
				t.Fatalf("%d build Jobs, want 1", len(jobs))
			}
			j := jobs[0]
			var sec corev1.Secret
			if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: buildNS, Name: j.Name}, &sec); err != nil {
				t.Fatalf("the Secret of build Job %s: %v", j.Name, err)
			}
			if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != j.UID {
				t.Errorf("the Secret's owners %+v, want the Job %s (%s)", sec.OwnerReferences, j.Name, j.UID)
			}
			if j.Annotations[catalyst.AnnotationBuildSecret] != "true" || len(sec.Data["git-password"]) == 0 {
				t.Errorf("Job annotations %v, Secret keys %d: want the Job to read a Secret with the git credentials", j.Annotations, len(sec.Data))
			}
			if n := len(f.buildSecrets(e)); n != 1 {
				t.Errorf("%d build Secrets, want 1", n)
			}
		})
	}
}

// TestEnvironment_BuildSecretLeftByACrashIsTakenOver: the operator wrote a build's Secret and
// died before its Job. A fresh operator finds the Secret without a Job, brings its credentials
// up to date, makes the Job and gives the Secret to it.
func TestEnvironment_BuildSecretLeftByACrashIsTakenOver(t *testing.T) {
	f := newFixture(t)
	p := f.project()
	f.create(p)
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(p), p); err != nil { // with the API's defaults
		t.Fatal(err)
	}
	e := f.environment("pr-8", f.head)
	first := e.DeepCopy()
	first.Generation = 1
	name := catalyst.BuildJobName(first, p.Spec.Registry.Repository+":"+f.head, p, catalyst.DefaultKanikoImage)
	if err := installShippedNamespaces(f.ctx, f.c); err != nil {
		t.Fatal(err)
	}
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: buildNS, Labels: map[string]string{
			catalyst.LabelManagedBy: catalyst.ManagedByValue, catalyst.LabelComponent: catalyst.ComponentBuild,
			catalyst.LabelEnvironmentNamespace: e.Namespace, catalyst.LabelEnvironmentName: e.Name,
		}},
		StringData: map[string]string{"git-username": gitUser, "git-password": "an older password"},
	})
	f.start()
	f.waitProjectReady(p)
	f.createEnvironment(e)
	f.waitReady(e)
	jobs := f.buildJobs(e)
	if len(jobs) != 1 || jobs[0].Name != name {
		t.Fatalf("build Jobs %d (want 1 named %s)", len(jobs), name)
	}
	var sec corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: buildNS, Name: name}, &sec); err != nil {
		t.Fatal(err)
	}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != jobs[0].UID {
		t.Errorf("the Secret's owners %+v, want the Job", sec.OwnerReferences)
	}
	if string(sec.Data["git-password"]) != gitPassword {
		t.Error("the Secret left by the crash still holds the older password")
	}
}

// TestEnvironment_NoBuildSecretOutlivesItsEnvironment: a build Secret the operator wrote just
// before dying, whose Job was never made, is deleted once the environment finds its image in the
// registry, and such a Secret left when the environment is deleted goes with it.
func TestEnvironment_NoBuildSecretOutlivesItsEnvironment(t *testing.T) {
	f := newFixture(t)
	f.pushImage(f.head)
	p := f.project()
	f.create(p)
	e := f.environment("pr-4", f.head)
	orphan := func() *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "pr-4-build-" + rand.String(12), Namespace: buildNS, Labels: map[string]string{
				catalyst.LabelManagedBy: catalyst.ManagedByValue, catalyst.LabelComponent: catalyst.ComponentBuild,
				catalyst.LabelEnvironmentNamespace: e.Namespace, catalyst.LabelEnvironmentName: e.Name,
			}},
			StringData: map[string]string{"git-password": gitPassword},
		}
		f.create(s)
		return s
	}
	f.start()
	first := orphan()
	f.waitProjectReady(p)
	f.createEnvironment(e)
	got := f.waitReady(e)
	if c := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition); c.Reason != catalystv1alpha1.ImageFoundReason {
		t.Fatalf("BuildReady %+v, want the image found", c)
	}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(first), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the build Secret left by a crash is still there once the image was found: %v", err)
	}

	orphan()
	if err := f.c.Delete(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	f.waitGone(f.ctx, e)
	testenv.Eventually(f.ctx, t, "no build Secret of the deleted environment", func() (bool, error) {
		return len(f.buildSecrets(e)) == 0, nil
	})
	if n := len(f.buildJobs(e)); n != 0 {
		t.Errorf("%d build Jobs left", n)
	}
}

// TestBuildPods_AdmittedByTheShippedBuildNamespace: the API server's Pod Security admission, with
// the namespaces labelled as config/manager ships them, admits a Kaniko build pod in the build
// namespace and refuses it in the operator's restricted namespace (where builds ran before);
// rootless BuildKit needs a privileged namespace. The operator's own check agrees with the API
// server in every case, and an Environment whose engine the build namespace refuses says so
// instead of making a Job whose pods never come.
func TestBuildPods_AdmittedByTheShippedBuildNamespace(t *testing.T) {
	f := newFixture(t)
	if err := installShippedNamespaces(f.ctx, f.c); err != nil {
		t.Fatal(err)
	}
	privileged := "t" + rand.String(6) + "-privileged"
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: privileged, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged"}}})
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: privileged}})
	})
	operatorNS := "slipway-system"

	for _, tc := range []struct {
		engine   catalystv1alpha1.BuildEngine
		ns       string
		admitted bool
	}{
		{catalystv1alpha1.BuildEngineKaniko, buildNS, true},
		{catalystv1alpha1.BuildEngineKaniko, operatorNS, false},
		{catalystv1alpha1.BuildEngineBuildKit, buildNS, false},
		{catalystv1alpha1.BuildEngineBuildKit, privileged, true},
	} {
		tpl, err := catalyst.BuildPodTemplate(tc.engine)
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(f.ctx, t, "the default ServiceAccount of "+tc.ns, func() (bool, error) {
			err := f.c.Get(f.ctx, client.ObjectKey{Namespace: tc.ns, Name: "default"}, &corev1.ServiceAccount{})
			return err == nil, client.IgnoreNotFound(err)
		})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "build-" + rand.String(6), Namespace: tc.ns, Labels: tpl.Labels}, Spec: tpl.Spec}
		err = f.c.Create(f.ctx, pod, client.DryRunAll)
		switch {
		case tc.admitted && err != nil:
			t.Errorf("%s in %s: refused: %v", tc.engine, tc.ns, err)
		case !tc.admitted && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity")):
			t.Errorf("%s in %s: got %v, want a Pod Security refusal", tc.engine, tc.ns, err)
		}
		var ns corev1.Namespace
		if err := f.c.Get(f.ctx, client.ObjectKey{Name: tc.ns}, &ns); err != nil {
			t.Fatal(err)
		}
		if refusal := catalyst.BuildNamespaceRefusal(&ns, tc.engine); (refusal == "") != tc.admitted {
			t.Errorf("%s in %s: the operator's check says %q, the API server admitted=%v", tc.engine, tc.ns, refusal, tc.admitted)
		}
	}

	p := f.project(func(p *catalystv1alpha1.Project) { p.Spec.Build.Engine = catalystv1alpha1.BuildEngineBuildKit })
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-6", f.head))
	got := f.waitFailed(e)
	c := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition)
	if c.Reason != catalystv1alpha1.BuildNamespaceRefusedReason || !strings.Contains(c.Message, `the build namespace `+buildNS+` enforces Pod Security level "baseline", which refuses buildkit build pods`) {
		t.Errorf("BuildReady %+v", c)
	}
	if n := len(f.buildJobs(e)); n != 0 {
		t.Errorf("%d build Jobs made for a namespace that refuses their pods", n)
	}
}
