//go:build e2e

package catalyst_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// TestProject_ValidationSaysWhatToFix: a repository that does not exist, a deployment path that
// is not there and a missing credentials Secret (git or pull-only registry) each make the Project not Ready and Stalled,
// with a reason and a message saying what to fix; fixing the spec makes it Ready.
func TestProject_ValidationSaysWhatToFix(t *testing.T) {
	f := newFixture(t)
	f.start()
	for _, tc := range []struct {
		name   string
		opt    projectOption
		reason string
		text   string
	}{
		{"no-repo", func(p *catalystv1alpha1.Project) { p.Spec.Source.RepositoryURL = f.git.URL + "/org/missing" },
			catalystv1alpha1.RepositoryNotFoundReason, "spec.source.repositoryUrl"},
		{"no-path", withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/missing"),
			catalystv1alpha1.DeploymentPathNotFoundReason, `"charts/missing"`},
		{"no-branch", func(p *catalystv1alpha1.Project) { p.Spec.Source.Branch = "release" },
			catalystv1alpha1.BranchNotFoundReason, "release"},
		{"no-secret", func(p *catalystv1alpha1.Project) { p.Spec.Source.SecretRef.Name = "nope" },
			catalystv1alpha1.SecretNotFoundReason, "nope"},
		{"no-pull-secret", func(p *catalystv1alpha1.Project) {
			p.Spec.Registry.PullSecretRef = &catalystv1alpha1.SecretReference{Name: "missing-pull"}
		}, catalystv1alpha1.SecretNotFoundReason, "spec.registry.pullSecretRef"},
		{"wrong-password", func(p *catalystv1alpha1.Project) { p.Spec.Source.SecretRef.Name = "wrong" },
			catalystv1alpha1.AuthenticationFailedReason, "spec.source.secretRef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "wrong-password" {
				f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wrong", Namespace: f.team},
					StringData: map[string]string{"username": gitUser, "password": "nope"}})
			}
			p := f.project(tc.opt)
			p.Name = tc.name
			f.create(p)
			got := f.waitProject(p, "not Ready with "+tc.reason, func(got *catalystv1alpha1.Project) bool {
				r := condition(got.Status.Conditions, "Ready")
				return r != nil && r.Status == metav1.ConditionFalse && r.Reason == tc.reason
			})
			r := condition(got.Status.Conditions, "Ready")
			if !strings.Contains(r.Message, tc.text) {
				t.Errorf("Ready message %q lacks %q", r.Message, tc.text)
			}
			if s := condition(got.Status.Conditions, "Stalled"); s == nil || s.Status != metav1.ConditionTrue {
				t.Errorf("not Stalled: %+v", got.Status.Conditions)
			}
		})
	}

	// Fixing the path makes it Ready.
	p := &catalystv1alpha1.Project{}
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.team, Name: "no-path"}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Deployment.Path = "charts/app"
	if err := f.c.Update(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	got := f.waitProjectReady(p)
	if got.Status.SourceCommit != f.head || got.Status.LastValidatedTime == nil {
		t.Errorf("status %+v", got.Status)
	}
	if c := condition(got.Status.Conditions, catalystv1alpha1.SourceReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("SourceReady = %+v", c)
	}
	if s := kstatus(t, got); s != "Current" {
		t.Errorf("kstatus = %s", s)
	}
}

// TestProject_CountsEnvironmentsAndRedeploysThemOnChange: the Project counts its Environments;
// a change of its deployment settings redeploys every one of them.
func TestProject_CountsEnvironmentsAndRedeploysThemOnChange(t *testing.T) {
	f := newFixture(t)
	f.pushImage(f.head)
	// A second manifest directory whose Deployment carries a label the first has not.
	v2 := gittest.Manifests("deploy/v2")
	v2["deploy/v2/deployment.yaml"] = []byte(strings.Replace(string(v2["deploy/v2/deployment.yaml"]),
		"labels: {app.kubernetes.io/name: app}\nspec:", "labels: {app.kubernetes.io/name: app, example.dev/version: v2}\nspec:", 1))
	head := f.commit("a second version of the manifests", v2)
	f.pushImage(head)
	p := f.project()
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	a := f.createEnvironment(f.environment("pr-1", head))
	b := f.createEnvironment(f.environment("pr-2", head))
	revA := f.waitReady(a).Status.DeployedRevision
	f.waitReady(b)
	f.waitProject(p, "counts 2 Environments", func(got *catalystv1alpha1.Project) bool { return got.Status.Environments == 2 })

	got := &catalystv1alpha1.Project{}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	got.Spec.Deployment.Path = "deploy/v2"
	got.Spec.Deployment.AllowedServiceTypes = []string{"NodePort"}
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*catalystv1alpha1.Environment{a, b} {
		now := f.waitEnv(e, "redeployed", func(got *catalystv1alpha1.Environment) bool {
			return got.Status.Phase == catalystv1alpha1.PhaseReady && got.Status.DeployedRevision != revA
		})
		var dep appsv1.Deployment
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: now.Status.Namespace, Name: "app"}, &dep); err != nil {
			t.Fatal(err)
		}
		if dep.Labels["example.dev/version"] != "v2" {
			t.Errorf("%s: the Deployment was not redeployed from deploy/v2: labels %v", e.Name, dep.Labels)
		}
		// The admission parameters follow the Project's lists.
		var ns corev1.Namespace
		if err := f.c.Get(f.ctx, client.ObjectKey{Name: now.Status.Namespace}, &ns); err != nil {
			t.Fatal(err)
		}
		if v := ns.Annotations[catalyst.PolicyServiceTypes]; v != "NodePort" {
			t.Errorf("%s: namespace annotation %s = %q, want NodePort", e.Name, catalyst.PolicyServiceTypes, v)
		}
	}

	if err := f.c.Delete(f.ctx, b); err != nil {
		t.Fatal(err)
	}
	f.waitProject(p, "counts 1 Environment", func(got *catalystv1alpha1.Project) bool { return got.Status.Environments == 1 })
}
