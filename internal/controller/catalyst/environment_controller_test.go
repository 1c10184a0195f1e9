//go:build e2e

package catalyst_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestEnvironment_ExistingImageIsDeployedWithoutBuild: a pull-request environment whose image is
// in the registry gets its namespace (labelled, locked down, with a quota), no build Job, the
// Helm chart deployed with the image, and an Ingress; it ends Ready with its URL and kstatus
// Current. A reconcile with nothing to do writes nothing; drift in its objects is repaired.
func TestEnvironment_ExistingImageIsDeployedWithoutBuild(t *testing.T) {
	f := newFixture(t)
	f.pushImage(f.head)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/app"))
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-123", f.head, func(e *catalystv1alpha1.Environment) {
		e.Spec.Source.Branch = "feature/Login_v2"
	}))
	got := f.waitReady(e)

	if got.Status.URL != "http://pr-123."+previewDomain {
		t.Errorf("url = %q", got.Status.URL)
	}
	if s := kstatus(t, got); s != status.CurrentStatus {
		t.Errorf("kstatus = %s, want Current", s)
	}
	for _, typ := range []string{catalystv1alpha1.NamespaceReadyCondition, catalystv1alpha1.BuildReadyCondition, catalystv1alpha1.DeploymentReadyCondition, "Ready"} {
		if c := condition(got.Status.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("%s = %+v", typ, c)
		}
	}
	if c := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition); c.Reason != catalystv1alpha1.ImageFoundReason {
		t.Errorf("BuildReady reason %s, want %s", c.Reason, catalystv1alpha1.ImageFoundReason)
	}
	if n := len(f.buildJobs(e)); n != 0 || got.Status.BuildJob != nil {
		t.Errorf("%d build Jobs for an image that exists (status %v)", n, got.Status.BuildJob)
	}
	wantImage := f.reg.Repository("org/app") + ":" + f.head
	if got.Status.Image != wantImage || got.Status.DeployedRevision == "" || got.Status.ExpiresAt != nil {
		t.Errorf("status = %+v", got.Status)
	}
	if !containsString(got.Finalizers, catalystv1alpha1.EnvironmentFinalizer) {
		t.Errorf("finalizers %v", got.Finalizers)
	}

	nsName := naming.NamespaceName(f.team, projectName, "pr-123")
	if got.Status.Namespace != nsName {
		t.Fatalf("namespace %q, want %q", got.Status.Namespace, nsName)
	}
	var ns corev1.Namespace
	if err := f.c.Get(f.ctx, client.ObjectKey{Name: nsName}, &ns); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		naming.LabelTeam: f.team, naming.LabelProject: projectName, naming.LabelEnvironment: "pr-123",
		naming.LabelBranch: "feature-Login_v2", "pod-security.kubernetes.io/enforce": "restricted",
	} {
		if ns.Labels[k] != v {
			t.Errorf("namespace label %s = %q, want %q", k, ns.Labels[k], v)
		}
	}
	if ns.Annotations[naming.AnnotationBranch] != "feature/Login_v2" {
		t.Errorf("branch annotation %q", ns.Annotations[naming.AnnotationBranch])
	}
	// The admission parameters: the derived host, the Project's defaults.
	for k, v := range map[string]string{catalyst.PolicyHost: "pr-123." + previewDomain, catalyst.PolicySubHosts: "false",
		catalyst.PolicyServiceTypes: "", catalyst.PolicyPriorityClasses: "", catalyst.PolicyClusterRoles: ""} {
		if got, ok := ns.Annotations[k]; !ok || got != v {
			t.Errorf("namespace annotation %s = %q (present %t), want %q", k, got, ok, v)
		}
	}
	var quota corev1.ResourceQuota
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: nsName, Name: catalyst.QuotaName}, &quota); err != nil {
		t.Fatal(err)
	}
	if q := quota.Spec.Hard[corev1.ResourceLimitsMemory]; q.String() != "2Gi" {
		t.Errorf("quota %v", quota.Spec.Hard)
	}
	var np networkingv1.NetworkPolicy
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: nsName, Name: catalyst.NetworkPolicyName}, &np); err != nil {
		t.Fatal(err)
	}
	var wantPolicy networkingv1.NetworkPolicySpec
	if err := sigsyaml.UnmarshalStrict([]byte(wantNetworkPolicy), &wantPolicy); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(np.Spec, wantPolicy) {
		t.Errorf("NetworkPolicy spec:\n%s\nwant:\n%s", toYAML(t, np.Spec), wantNetworkPolicy)
	}
	var ing networkingv1.Ingress
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: nsName, Name: catalyst.IngressName}, &ing); err != nil {
		t.Fatal(err)
	}
	if r := ing.Spec.Rules[0]; r.Host != "pr-123."+previewDomain || r.HTTP.Paths[0].Backend.Service.Name != "app" {
		t.Errorf("ingress rule %+v", r)
	}
	var dep appsv1.Deployment
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: nsName, Name: "app"}, &dep); err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != wantImage {
		t.Errorf("deployed image %q, want %q", c.Image, wantImage)
	}
	if !hasEnv(c, "DEBUG", "true") {
		t.Errorf("env var DEBUG not injected: %+v", c.Env)
	}
	if dep.Status.AvailableReplicas != 1 {
		t.Errorf("Deployment not available: %+v", dep.Status)
	}

	// Drift in the network policy is repaired with one write, and nothing else is written: the
	// Environment's status did not change.
	rv := got.ResourceVersion
	f.writes.Reset()
	np.Spec.Ingress = nil
	if err := f.c.Update(f.ctx, &np); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(f.ctx, t, "the NetworkPolicy is repaired", func() (bool, error) {
		var live networkingv1.NetworkPolicy
		err := f.c.Get(f.ctx, client.ObjectKeyFromObject(&np), &live)
		return err == nil && len(live.Spec.Ingress) == 2, err
	})
	time.Sleep(time.Second) // let any further reconcile run
	if now := f.getEnv(e); now.ResourceVersion != rv {
		t.Errorf("a reconcile with nothing to change wrote the Environment (resourceVersion %s -> %s): %+v", rv, now.ResourceVersion, now.Status)
	}
	if n := f.writes.Writes(); n != 1 {
		t.Errorf("%d writes to repair one NetworkPolicy, want 1", n)
	}
}

// TestEnvironment_MissingImageIsBuiltThenDeployed: without the image, one build Job is made in the
// build namespace from the repository at the commit, with every credential read from its own
// Secret; kwok completes it; the environment is deployed and Ready. The registry needs
// credentials: the image pull Secret is made from the pull-only Secret and given to the default
// ServiceAccount.
func TestEnvironment_MissingImageIsBuiltThenDeployed(t *testing.T) {
	f := newFixture(t, withRegistryAuth("pusher", "s3cret-registry-password"))
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: f.team},
		StringData: map[string]string{"username": "pusher", "password": "s3cret-registry-password"},
	})
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "registry-pull", Namespace: f.team},
		StringData: map[string]string{"username": "puller", "password": "pull-only-password"},
	})
	p := f.project(func(p *catalystv1alpha1.Project) {
		p.Spec.Registry.SecretRef = &catalystv1alpha1.SecretReference{Name: "registry"}
		p.Spec.Registry.PullSecretRef = &catalystv1alpha1.SecretReference{Name: "registry-pull"}
	})
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-7", f.head))

	building := f.waitEnv(e, "a build Job", func(got *catalystv1alpha1.Environment) bool { return got.Status.BuildJob != nil })
	got := f.waitReady(e)
	if c := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition); c.Reason != catalystv1alpha1.ImageBuiltReason {
		t.Errorf("BuildReady = %+v", c)
	}
	jobs := f.buildJobs(e)
	if len(jobs) != 1 {
		t.Fatalf("%d build Jobs, want 1", len(jobs))
	}
	j := jobs[0]
	if got.Status.BuildJob.Name != j.Name || building.Status.BuildJob.Namespace != buildNS {
		t.Errorf("status buildJob %+v, Job %s/%s", got.Status.BuildJob, j.Namespace, j.Name)
	}
	spec := j.Spec.Template.Spec
	if len(spec.InitContainers) != 2 || len(spec.Containers) != 1 {
		t.Fatalf("build pod: %d init containers and %d containers, want fetch, build and push", len(spec.InitContainers), len(spec.Containers))
	}
	for _, tc := range []struct {
		c    corev1.Container
		want []string
	}{
		{spec.InitContainers[0], []string{"fetch", "--url=" + f.repo.URL, "--commit=" + f.head}},
		{spec.InitContainers[1], []string{"--context=dir:///workspace/src", "--destination=" + f.reg.Repository("org/app") + ":" + f.head, "--no-push"}},
		{spec.Containers[0], []string{"push", "--destination=" + f.reg.Repository("org/app") + ":" + f.head}},
	} {
		args := strings.Join(tc.c.Args, " ")
		for _, want := range tc.want {
			if !strings.Contains(args, want) {
				t.Errorf("%s args %q lack %q", tc.c.Name, args, want)
			}
		}
	}
	specJSON := toJSON(t, j.Spec)
	for _, secret := range []string{gitPassword, "s3cret-registry-password"} {
		if strings.Contains(specJSON, secret) {
			t.Errorf("a credential is in the Job's spec")
		}
	}
	var js corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: buildNS, Name: j.Name}, &js); err != nil {
		t.Fatalf("the Job's Secret: %v", err)
	}
	if len(js.OwnerReferences) != 1 || js.OwnerReferences[0].UID != j.UID || string(js.Data["git-password"]) != gitPassword || len(js.Data["config.json"]) == 0 {
		t.Errorf("the Job's Secret is not owned by it or lacks credentials (keys %v)", keysOf(js.Data))
	}

	// The image pull Secret, for the registry that needs credentials.
	ns := got.Status.Namespace
	var pull corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: catalyst.PullSecretName}, &pull); err != nil {
		t.Fatal(err)
	}
	pullAuth := base64.StdEncoding.EncodeToString([]byte("puller:pull-only-password"))
	if cfg := string(pull.Data[corev1.DockerConfigJsonKey]); pull.Type != corev1.SecretTypeDockerConfigJson ||
		!strings.Contains(cfg, f.reg.Host) || !strings.Contains(cfg, pullAuth) {
		t.Errorf("pull Secret type %s, not made from the pull-only Secret", pull.Type)
	}
	var sa corev1.ServiceAccount
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &sa); err != nil {
		t.Fatal(err)
	}
	if len(sa.ImagePullSecrets) != 1 || sa.ImagePullSecrets[0].Name != catalyst.PullSecretName {
		t.Errorf("default ServiceAccount imagePullSecrets %v", sa.ImagePullSecrets)
	}
}

// TestEnvironment_FailedBuildIsFailedWithLogTailAndNewCommitRetries: a build whose pod fails
// makes the environment Failed and Stalled with the log tail in its condition; nothing is
// retried until a new commit arrives, which builds again and deploys.
func TestEnvironment_FailedBuildIsFailedWithLogTailAndNewCommitRetries(t *testing.T) {
	f := newFixture(t)
	f.outcomes.failCommit(f.head)
	p := f.project()
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-9", f.head))

	got := f.waitFailed(e)
	c := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition)
	if c == nil || c.Reason != catalystv1alpha1.BuildFailedReason {
		t.Fatalf("BuildReady = %+v", c)
	}
	for _, want := range []string{"build of " + got.Status.Image + " failed", "BackoffLimitExceeded", "make: *** [build] Error 2", "new commit"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("BuildReady message %q lacks %q", c.Message, want)
		}
	}
	if r := condition(got.Status.Conditions, "Ready"); r.Reason != catalystv1alpha1.BuildFailedReason {
		t.Errorf("Ready = %+v", r)
	}
	if s := kstatus(t, got); s != status.FailedStatus {
		t.Errorf("kstatus = %s, want Failed", s)
	}
	if got.Status.Namespace == "" || len(f.buildJobs(e)) != 1 {
		t.Errorf("namespace %q, %d Jobs", got.Status.Namespace, len(f.buildJobs(e)))
	}
	// A label change reconciles it: still one Job, still failed, the log read once.
	calls := f.logs.calls.Load()
	got.Labels["poke"] = "1"
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if n := len(f.buildJobs(e)); n != 1 || f.logs.calls.Load() != calls {
		t.Errorf("%d Jobs and %d more log reads after a reconcile: a failed build must not be retried by itself", n, f.logs.calls.Load()-calls)
	}

	// A new commit builds again.
	fixed := f.commit("fix the build", gittest.Files{"README.md": []byte("fixed\n")})
	got = f.getEnv(e)
	got.Spec.Source.CommitSHA = fixed
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	got = f.waitReady(e)
	if c := condition(got.Status.Conditions, catalystv1alpha1.BuildReadyCondition); c.Reason != catalystv1alpha1.ImageBuiltReason ||
		!strings.HasSuffix(got.Status.Image, ":"+fixed) {
		t.Errorf("BuildReady %+v, image %s", c, got.Status.Image)
	}
	jobs := f.buildJobs(e)
	if len(jobs) != 1 || jobs[0].Annotations[catalyst.AnnotationCommit] != fixed {
		t.Errorf("the old commit's Job was not cleaned up: %d Jobs", len(jobs))
	}
}

// TestEnvironment_EachDeploymentType: a Helm chart, plain manifests and a kustomization from the
// same repository each become a Ready environment with the Deployment available.
func TestEnvironment_EachDeploymentType(t *testing.T) {
	for _, tc := range []struct {
		typ  catalystv1alpha1.DeploymentType
		path string
	}{
		{catalystv1alpha1.DeploymentTypeHelm, "charts/app"},
		{catalystv1alpha1.DeploymentTypeManifest, "deploy/manifests"},
		{catalystv1alpha1.DeploymentTypeKustomize, "deploy/kustomize/overlays/preview"},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			f := newFixture(t)
			f.pushImage(f.head)
			p := f.project(withDeployment(tc.typ, tc.path))
			f.create(p)
			f.start()
			f.waitProjectReady(p)
			e := f.createEnvironment(f.environment("pr-1", f.head))
			got := f.waitReady(e)
			var dep appsv1.Deployment
			if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: "app"}, &dep); err != nil {
				t.Fatal(err)
			}
			if dep.Status.AvailableReplicas != 1 || dep.Spec.Template.Spec.Containers[0].Image != f.reg.Repository("org/app")+":"+f.head {
				t.Errorf("Deployment %s: available %d, image %s", tc.typ, dep.Status.AvailableReplicas, dep.Spec.Template.Spec.Containers[0].Image)
			}
			if tc.typ == catalystv1alpha1.DeploymentTypeKustomize && dep.Labels["app.kubernetes.io/part-of"] != "catalyst-sample" {
				t.Errorf("the overlay's labels are missing: %v", dep.Labels)
			}
		})
	}
}

// TestEnvironment_DeploymentCannotLiftItsGuardRails: a commit whose manifests bring their own
// NetworkPolicy (which would open the namespace) is refused with ObjectRefused, nothing of it is
// applied, and the next commit without it deploys.
func TestEnvironment_DeploymentCannotLiftItsGuardRails(t *testing.T) {
	f := newFixture(t)
	open := f.commit("open the network", gittest.Files{"deploy/manifests/zz-open.yaml": []byte(
		"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: allow-all}\nspec:\n  podSelector: {}\n  ingress: [{}]\n")})
	f.pushImage(open)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeManifest, "deploy/manifests"))
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-7", open))

	got := f.waitFailed(e)
	c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
	if c == nil || c.Reason != catalystv1alpha1.ObjectRefusedReason ||
		!strings.Contains(c.Message, "NetworkPolicy.networking.k8s.io/allow-all (") || !strings.Contains(c.Message, "zz-open.yaml") {
		t.Fatalf("DeploymentReady = %+v", c)
	}
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: "allow-all"}, &networkingv1.NetworkPolicy{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused NetworkPolicy: %v", err)
	}
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: "app"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("part of a refused deployment was applied: %v", err)
	}

	closed := f.commit("close it again", gittest.Files{"deploy/manifests/zz-open.yaml": gittest.Delete})
	f.pushImage(closed)
	got.Spec.Source.CommitSHA = closed
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	f.waitReady(e)
}

// TestEnvironment_LongNamesAreShortenedWithAHash: a team, project and environment whose namespace
// would be longer than 63 characters get a shortened name with a hash, labelled with the full
// identity.
func TestEnvironment_LongNamesAreShortenedWithAHash(t *testing.T) {
	team := "team-with-a-rather-long-name-" + rand.String(5)
	f := newFixture(t, withTeam(team))
	f.pushImage(f.head)
	p := f.project()
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	name := "pr-4711-a-long-feature-branch-preview-environment"
	e := f.createEnvironment(f.environment(name, f.head))
	got := f.waitReady(e)
	ns := got.Status.Namespace
	if ns != naming.NamespaceName(team, projectName, name) || len(ns) > 63 || !strings.Contains(ns, "--") {
		t.Errorf("namespace %q (%d characters)", ns, len(ns))
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		t.Errorf("namespace %q: %v", ns, errs)
	}
	var live corev1.Namespace
	if err := f.c.Get(f.ctx, client.ObjectKey{Name: ns}, &live); err != nil {
		t.Fatal(err)
	}
	if !naming.MatchesEnvironment(live.Labels, team, projectName, name) {
		t.Errorf("labels %v", live.Labels)
	}
	if got.Status.URL != "http://"+name+"."+previewDomain {
		t.Errorf("url %q", got.Status.URL)
	}
}

// TestEnvironment_DeletionRemovesEverything: deleting a Ready environment uninstalls it, deletes
// its namespace and build Jobs, waits until the namespace is gone, then releases the
// Environment. Nothing is left behind.
func TestEnvironment_DeletionRemovesEverything(t *testing.T) {
	f := newFixture(t)
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/app"))
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-5", f.head))
	got := f.waitReady(e) // built first: a build Job exists
	ns := got.Status.Namespace
	if len(f.buildJobs(e)) != 1 {
		t.Fatalf("want the build Job before deletion")
	}
	if err := f.c.Delete(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	f.waitGone(f.ctx, e)
	if !f.namespaceGone(ns) {
		t.Errorf("the Environment was released before namespace %s was gone", ns)
	}
	if n := len(f.buildJobs(e)); n != 0 {
		t.Errorf("%d build Jobs left", n)
	}
	var secrets corev1.SecretList
	testenv.Eventually(f.ctx, t, "the build Secrets are garbage collected", func() (bool, error) {
		err := f.c.List(f.ctx, &secrets, client.InNamespace(buildNS), client.MatchingLabels{catalyst.LabelEnvironmentName: e.Name,
			catalyst.LabelEnvironmentNamespace: e.Namespace})
		return err == nil && len(secrets.Items) == 0, err
	})
}

// TestEnvironment_TTLExpiryDeletesIt: expiresAt is the creation time plus the Project's
// defaultTTL; once it has passed the environment is deleted like any other.
func TestEnvironment_TTLExpiryDeletesIt(t *testing.T) {
	f := newFixture(t)
	f.pushImage(f.head)
	p := f.project(func(p *catalystv1alpha1.Project) { p.Spec.DefaultTTL = &metav1.Duration{Duration: time.Hour} })
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-3", f.head))
	got := f.waitReady(e)
	if got.Status.ExpiresAt == nil || !got.Status.ExpiresAt.Time.Equal(got.CreationTimestamp.Add(time.Hour)) {
		t.Fatalf("expiresAt %v, want creation + 1h (%s)", got.Status.ExpiresAt, got.CreationTimestamp.Add(time.Hour))
	}
	ns := got.Status.Namespace

	// Two hours later: any reconcile (a label change here) deletes it.
	f.clock.advance(2 * time.Hour)
	got.Labels["poke"] = "1"
	if err := f.c.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	f.waitGone(f.ctx, e)
	if !f.namespaceGone(ns) {
		t.Errorf("namespace %s outlived the Environment", ns)
	}
	var evs eventsv1.EventList
	if err := f.c.List(f.ctx, &evs, client.InNamespace(e.Namespace)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs.Items {
		found = found || (ev.Regarding.Name == e.Name && ev.Reason == catalystv1alpha1.ExpiredReason)
	}
	if !found {
		t.Error("no Expired event")
	}
}

// TestEnvironment_SecretsAreCopiedAndNeverShown: the Secrets a Project names are copied into the
// environment namespace and follow their source, and their content appears in no status,
// condition or event. The wildcard certificate is not copied.
func TestEnvironment_SecretsAreCopiedAndNeverShown(t *testing.T) {
	f := newFixture(t)
	f.pushImage(f.head)
	const value = "v3ry-s3cret-database-password"
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-secrets", Namespace: f.team},
		StringData: map[string]string{"DATABASE_PASSWORD": value}})
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wildcard-preview", Namespace: f.team}, Type: corev1.SecretTypeTLS,
		StringData: map[string]string{"tls.crt": "certificate for *." + previewDomain, "tls.key": value + "-key"}})
	p := f.project(func(p *catalystv1alpha1.Project) {
		p.Spec.SecretRefs = []catalystv1alpha1.SecretReference{{Name: "app-secrets"}}
		p.Spec.Preview.TLS = &catalystv1alpha1.TLSSpec{WildcardSecretRef: &catalystv1alpha1.SecretReference{Name: "wildcard-preview"}}
	})
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-11", f.head))
	got := f.waitReady(e)

	var copied corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: "app-secrets"}, &copied); err != nil {
		t.Fatal(err)
	}
	if string(copied.Data["DATABASE_PASSWORD"]) != value || copied.Annotations[catalyst.AnnotationCopiedFrom] != f.team+"/app-secrets" {
		t.Errorf("copy: annotations %v", copied.Annotations)
	}
	// The wildcard certificate is the ingress controller's default: it is not copied, and the
	// Ingress's TLS entry names no Secret; the Project says so.
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: "wildcard-preview"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the wildcard certificate was copied into the environment namespace (%v)", err)
	}
	var ing networkingv1.Ingress
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: got.Status.Namespace, Name: catalyst.IngressName}, &ing); err != nil {
		t.Fatal(err)
	}
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "" || len(ing.Spec.TLS[0].Hosts) != 1 ||
		ing.Annotations["cert-manager.io/cluster-issuer"] != "" || got.Status.URL != "https://pr-11."+previewDomain {
		t.Errorf("TLS: Ingress TLS %+v, url %s", ing.Spec.TLS, got.Status.URL)
	}
	if r := condition(f.getProject(p).Status.Conditions, "Ready"); r == nil || !strings.Contains(r.Message, "--default-ssl-certificate="+f.team+"/wildcard-preview") {
		t.Errorf("the Project's Ready condition does not tell its owner where the wildcard goes: %+v", r)
	}

	// The source changes: the copy follows.
	var src corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.team, Name: "app-secrets"}, &src); err != nil {
		t.Fatal(err)
	}
	src.Data["DATABASE_PASSWORD"] = []byte(value + "-rotated")
	if err := f.c.Update(f.ctx, &src); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(f.ctx, t, "the copy follows its source", func() (bool, error) {
		err := f.c.Get(f.ctx, client.ObjectKeyFromObject(&copied), &copied)
		return err == nil && string(copied.Data["DATABASE_PASSWORD"]) == value+"-rotated", err
	})

	got = f.getEnv(e)
	proj := &catalystv1alpha1.Project{}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(p), proj); err != nil {
		t.Fatal(err)
	}
	var evs eventsv1.EventList
	if err := f.c.List(f.ctx, &evs); err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"Environment": toJSON(t, got), "Project": toJSON(t, proj), "events": toJSON(t, evs.Items)} {
		if strings.Contains(text, value) || strings.Contains(text, gitPassword) {
			t.Errorf("a Secret's content appears in the %s", what)
		}
	}
}

// TestEnvironment_RefusesAnotherEnvironmentsNamespace: a namespace labelled for another
// environment is reported as a conflict and never changed or deleted.
func TestEnvironment_RefusesAnotherEnvironmentsNamespace(t *testing.T) {
	f := newFixture(t)
	p := f.project()
	f.create(p)
	nsName := naming.NamespaceName(f.team, projectName, "pr-2")
	other := naming.Labels("someone", "else", "pr-2", "")
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName, Labels: other}})
	t.Cleanup(func() { _ = f.c.Delete(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName}}) })
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-2", f.head))
	got := f.waitFailed(e)
	if c := condition(got.Status.Conditions, catalystv1alpha1.NamespaceReadyCondition); c == nil || c.Reason != catalystv1alpha1.NamespaceConflictReason {
		t.Errorf("NamespaceReady = %+v", c)
	}
	if err := f.c.Delete(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(f.ctx, t, "the Environment is released", func() (bool, error) {
		err := f.c.Get(f.ctx, client.ObjectKeyFromObject(e), &catalystv1alpha1.Environment{})
		return apierrors.IsNotFound(err), err
	})
	var ns corev1.Namespace
	if err := f.c.Get(f.ctx, client.ObjectKey{Name: nsName}, &ns); err != nil || !ns.DeletionTimestamp.IsZero() {
		t.Errorf("the other environment's namespace was deleted: %v", err)
	}
	if len(ns.Labels) != len(other)+1 { // + kubernetes.io/metadata.name
		t.Errorf("the other environment's namespace was relabelled: %v", ns.Labels)
	}
}

// TestEnvironment_MustLiveInItsProjectNamespace: an Environment naming a Project of another
// team's namespace is refused.
func TestEnvironment_MustLiveInItsProjectNamespace(t *testing.T) {
	f := newFixture(t)
	p := f.project()
	f.create(p)
	f.start()
	e := f.environment("pr-66", f.head)
	e.Namespace = f.team // not <team>-<project>
	f.createEnvironment(e)
	got := f.waitFailed(e)
	if r := condition(got.Status.Conditions, "Ready"); r.Reason != catalystv1alpha1.ProjectRefForbiddenReason || !strings.Contains(r.Message, f.projNS) {
		t.Errorf("Ready = %+v", r)
	}
	if got.Status.Namespace != "" {
		t.Errorf("a namespace was made: %s", got.Status.Namespace)
	}
}

func hasEnv(c corev1.Container, name, value string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSamples_AreValid: the sample Project and Environment in config/samples are accepted by the
// API server as they are.
func TestSamples_AreValid(t *testing.T) {
	ctx := t.Context()
	objs, err := config.Samples()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			if err := env.Client.Create(ctx, u.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })
		}
	}
	for _, u := range objs {
		if u.GroupVersionKind().Group != catalystv1alpha1.GroupVersion.Group {
			continue
		}
		n++
		if err := env.Client.Create(ctx, u.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("sample %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	if n != 2 {
		t.Errorf("%d Catalyst samples, want a Project and an Environment", n)
	}
}

// wantNetworkPolicy is the whole NetworkPolicy of an environment namespace with the operator's
// defaults (ingress controller in ingress-nginx, public egress on), written out: in from the
// namespace itself and the ingress controller; out to the namespace itself, to DNS in kube-system
// on UDP and TCP 53, and to public addresses only: every private, shared, link-local (the cloud
// metadata service) and loopback range is excepted, so the API server and the cluster's other
// services are out of reach.
const wantNetworkPolicy = `
podSelector: {}
policyTypes: [Ingress, Egress]
ingress:
- from: [{podSelector: {}}]
- from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}}]
egress:
- to: [{podSelector: {}}]
- to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}}]
  ports:
  - {protocol: UDP, port: 53}
  - {protocol: TCP, port: 53}
- to:
  - ipBlock:
      cidr: 0.0.0.0/0
      except: [10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 169.254.0.0/16, 127.0.0.0/8]
  - ipBlock:
      cidr: "::/0"
      except: ["fc00::/7", "fe80::/10", "::1/128"]
`

func toYAML(t testing.TB, v any) string {
	t.Helper()
	out, err := sigsyaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
