package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e })
}

const sha = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"

// The manifests of the design (issue 5), unchanged.
const issueProject = `
apiVersion: catalyst.catalyst.dev/v1alpha1
kind: Project
metadata: {name: my-project, namespace: my-team}
spec:
  source: {repositoryUrl: "https://github.com/org/repo", branch: "main"}
  deployment:
    type: helm
    path: ./charts/app
    values: {image: {repository: registry.cluster.local/org/repo}}
  resources: {defaultQuota: {cpu: "1", memory: "2Gi"}}
`

const issueEnvironment = `
apiVersion: catalyst.catalyst.dev/v1alpha1
kind: Environment
metadata:
  name: pr-123
  namespace: my-team-my-project
  labels: {catalyst.dev/team: my-team, catalyst.dev/project: my-project, catalyst.dev/environment: pr-123}
spec:
  projectRef: {name: my-project}
  type: development
  source: {commitSha: ` + sha + `, branch: feature/login, prNumber: 123}
  config: {envVars: [{name: DEBUG, value: "true"}]}
`

func TestSchema_IssueManifestsApplyUnchanged(t *testing.T) {
	ctx := testCtx(t)
	createNamespace(t, "my-team")
	createNamespace(t, "my-team-my-project")

	proj := create(t, ctx, issueProject)
	if got := proj.Spec.Deployment.Values; got == nil || !strings.Contains(string(got.Raw), "registry.cluster.local/org/repo") {
		t.Errorf("values were not kept: %v", got)
	}
	if got := proj.Spec.Resources.DefaultQuota.Memory.String(); got != "2Gi" {
		t.Errorf("defaultQuota.memory = %s, want 2Gi", got)
	}
	if proj.Spec.Build.Engine != catalystv1alpha1.BuildEngineKaniko {
		t.Errorf("build.engine defaulted to %q, want kaniko", proj.Spec.Build.Engine)
	}
	if proj.Spec.Source.Branch != "main" || proj.Spec.Preview.Service.Port != 80 || proj.Spec.Build.Dockerfile != "Dockerfile" {
		t.Errorf("defaults not applied: %+v", proj.Spec)
	}

	var e catalystv1alpha1.Environment
	if err := yaml.UnmarshalStrict([]byte(issueEnvironment), &e); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &e); err != nil {
		t.Fatalf("creating the issue's Environment: %v", err)
	}
	if e.Spec.Source.PRNumber != 123 || e.Spec.Config.EnvVars[0].Value != "true" {
		t.Errorf("spec not kept: %+v", e.Spec)
	}

	// The status shape the web application polls.
	e.Status = catalystv1alpha1.EnvironmentStatus{
		ObservedGeneration: e.Generation,
		Phase:              catalystv1alpha1.PhaseReady,
		URL:                "https://pr-123.preview.example.dev",
		Namespace:          "my-team-my-project-pr-123",
		Image:              "registry.cluster.local/org/repo:" + sha,
		ObservedCommit:     sha,
		BuildJob:           &catalystv1alpha1.JobReference{Namespace: "my-team-my-project-pr-123", Name: "build-a1b2c3d"},
		ExpiresAt:          &metav1.Time{Time: time.Now().Add(time.Hour).Truncate(time.Second)},
	}
	for _, typ := range []string{catalystv1alpha1.NamespaceReadyCondition, catalystv1alpha1.BuildReadyCondition, catalystv1alpha1.DeploymentReadyCondition, "Ready"} {
		e.Status.Conditions = append(e.Status.Conditions, metav1.Condition{
			Type: typ, Status: metav1.ConditionTrue, Reason: catalystv1alpha1.SucceededReason,
			LastTransitionTime: metav1.Now(), ObservedGeneration: e.Generation,
		})
	}
	if err := env.Client.Status().Update(ctx, &e); err != nil {
		t.Fatalf("writing the status: %v", err)
	}
}

func TestSchema_EverythingUsersAddIsAccepted(t *testing.T) {
	ctx := testCtx(t)
	createNamespace(t, "full-team")
	create(t, ctx, `
apiVersion: catalyst.catalyst.dev/v1alpha1
kind: Project
metadata: {name: shop, namespace: full-team}
spec:
  source:
    repositoryUrl: http://127.0.0.1:8080/shop.git
    branch: release/v1.2
    secretRef: {name: git-credentials}
  deployment: {type: kustomize, path: deploy/overlays/preview}
  registry: {repository: "registry.local:5000/shop", secretRef: {name: registry}, insecure: true}
  build: {engine: buildkit, context: services/api, dockerfile: build/Dockerfile, timeout: 45m}
  preview:
    domain: preview.example.dev
    ingressClassName: nginx
    service: {name: shop-web, port: 8080}
    tls: {wildcardSecretRef: {name: wildcard-preview}}
  defaultTTL: 72h
  secretRefs: [{name: app-secrets}, {name: db}]
`)
	createNamespace(t, "full-team-shop")
	create(t, ctx, `
apiVersion: catalyst.catalyst.dev/v1alpha1
kind: Environment
metadata: {name: staging, namespace: full-team-shop}
spec:
  projectRef: {name: shop, namespace: full-team}
  type: deployment
  source: {commitSha: `+strings.Repeat("0123456789abcdef", 4)+`}
  resources: {quota: {cpu: 4, memory: 8Gi}}
  ttl: 0s
`)
}

func TestSchema_RejectsWhatCannotWork(t *testing.T) {
	ctx := testCtx(t)
	createNamespace(t, "bad-team")
	project := func(name, spec string) string {
		return "apiVersion: catalyst.catalyst.dev/v1alpha1\nkind: Project\nmetadata: {name: " + name + ", namespace: bad-team}\nspec:\n" + spec
	}
	environment := func(name, spec string) string {
		return "apiVersion: catalyst.catalyst.dev/v1alpha1\nkind: Environment\nmetadata: {name: " + name + ", namespace: bad-team}\nspec:\n" + spec
	}
	okSource := "  source: {repositoryUrl: https://example.dev/repo.git}\n"
	okDeploy := "  deployment: {type: manifest, path: deploy}\n"
	for _, tc := range []struct {
		name, manifest, want string
	}{
		{"ssh URL", project("p1", "  source: {repositoryUrl: git@github.com:org/repo.git}\n"+okDeploy), "http:// or https://"},
		{"file URL", project("p2", "  source: {repositoryUrl: file:///etc}\n"+okDeploy), "http:// or https://"},
		{"credentials in URL", project("p3", "  source: {repositoryUrl: https://user:pw@example.dev/repo}\n"+okDeploy), "must not carry credentials"},
		{"bad branch", project("p4", "  source: {repositoryUrl: https://example.dev/r, branch: a..b}\n"+okDeploy), "valid git branch name"},
		{"hidden branch component", project("p15", "  source: {repositoryUrl: https://example.dev/r, branch: feature/.x}\n"+okDeploy), "valid git branch name"},
		{"lock branch", project("p16", "  source: {repositoryUrl: https://example.dev/r, branch: a.lock/b}\n"+okDeploy), "valid git branch name"},
		{"unknown deployment type", project("p5", okSource+"  deployment: {type: jsonnet}\n"), "Unsupported value"},
		{"path leaves repo", project("p6", okSource+"  deployment: {type: helm, path: ../other}\n"), "must not leave the repository"},
		{"absolute path", project("p7", okSource+"  deployment: {type: helm, path: /etc}\n"), "relative to the repository root"},
		{"values without helm", project("p8", okSource+"  deployment: {type: manifest, values: {a: 1}}\n"), "values apply to type helm only"},
		{"values not an object", project("p9", okSource+"  deployment: {type: helm, values: [1, 2]}\n"), "must be of type object"},
		{"registry with tag", project("p10", okSource+okDeploy+"  registry: {repository: reg.dev/app:latest}\n"), "must not carry a tag"},
		{"both TLS modes", project("p11", okSource+okDeploy+"  preview: {domain: p.example.dev, tls: {clusterIssuer: le, wildcardSecretRef: {name: w}}}\n"), "exactly one of"},
		{"bad domain", project("p12", okSource+okDeploy+"  preview: {domain: Preview_Example}\n"), "spec.preview.domain"},
		{"short TTL", project("p13", okSource+okDeploy+"  defaultTTL: 30s\n"), "at least 1m"},
		{"bad duration", project("p14", okSource+okDeploy+"  defaultTTL: 3d\n"), "spec.defaultTTL"},
		{"project name not a DNS label", project("a.b", okSource+okDeploy), "must be a DNS label"},
		{"short commit", environment("e1", "  projectRef: {name: p}\n  source: {commitSha: a1b2c3d}\n"), "spec.source.commitSha"},
		{"upper-case commit", environment("e2", "  projectRef: {name: p}\n  source: {commitSha: "+strings.ToUpper(sha)+"}\n"), "spec.source.commitSha"},
		{"unknown type", environment("e3", "  projectRef: {name: p}\n  type: production\n  source: {commitSha: "+sha+"}\n"), "Unsupported value"},
		{"environment name with dots", environment("pr.1", "  projectRef: {name: p}\n  source: {commitSha: "+sha+"}\n"), "must be a DNS label"},
		{"bad env var name", environment("e4", "  projectRef: {name: p}\n  source: {commitSha: "+sha+"}\n  config: {envVars: [{name: 'A=B', value: x}]}\n"), "spec.config.envVars[0].name"},
		{"duplicate env var", environment("e5", "  projectRef: {name: p}\n  source: {commitSha: "+sha+"}\n  config: {envVars: [{name: A}, {name: A}]}\n"), "Duplicate value"},
		{"ttl too short", environment("e6", "  projectRef: {name: p}\n  source: {commitSha: "+sha+"}\n  ttl: 10s\n"), "0s (never) or at least 1m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.manifest), &u.Object); err != nil {
				t.Fatal(err)
			}
			err := env.Client.Create(ctx, u)
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.manifest)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestSchema_ProjectRefIsImmutable(t *testing.T) {
	ctx := testCtx(t)
	createNamespace(t, "imm-team-app")
	e := &catalystv1alpha1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: "pr-1", Namespace: "imm-team-app"},
		Spec: catalystv1alpha1.EnvironmentSpec{
			ProjectRef: catalystv1alpha1.ProjectReference{Name: "app"},
			Source:     catalystv1alpha1.EnvironmentSource{CommitSHA: sha},
		},
	}
	if err := env.Client.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	if e.Spec.Type != catalystv1alpha1.EnvironmentTypeDevelopment {
		t.Errorf("type defaulted to %q, want development", e.Spec.Type)
	}
	e.Spec.Source.CommitSHA = strings.Repeat("b", 40)
	if err := env.Client.Update(ctx, e); err != nil {
		t.Fatalf("a new commit was refused: %v", err)
	}
	e.Spec.ProjectRef.Name = "other"
	err := env.Client.Update(ctx, e)
	if err == nil || !strings.Contains(err.Error(), "projectRef is immutable") {
		t.Fatalf("changing projectRef: got %v, want an immutability error", err)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func create(t *testing.T, ctx context.Context, manifest string) *catalystv1alpha1.Project {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	var p catalystv1alpha1.Project
	if u.GetKind() == "Project" {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), &p); err != nil {
			t.Fatal(err)
		}
	}
	return &p
}
