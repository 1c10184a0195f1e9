package catalyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/gitsource"
)

const testSHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"

func testProject(opts ...func(*catalystv1alpha1.Project)) *catalystv1alpha1.Project {
	p := &catalystv1alpha1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team"},
		Spec: catalystv1alpha1.ProjectSpec{
			Source:     catalystv1alpha1.ProjectSource{RepositoryURL: "https://git.example.dev/org/shop.git", Branch: "main"},
			Deployment: catalystv1alpha1.DeploymentSpec{Type: catalystv1alpha1.DeploymentTypeManifest, Path: "deploy"},
			Registry:   &catalystv1alpha1.RegistrySpec{Repository: "registry.example.dev:5000/org/shop"},
			Build:      catalystv1alpha1.BuildSpec{Engine: catalystv1alpha1.BuildEngineKaniko, Context: ".", Dockerfile: "Dockerfile"},
			Preview:    catalystv1alpha1.PreviewSpec{Service: catalystv1alpha1.ServiceTarget{Port: 80}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func testEnv(opts ...func(*catalystv1alpha1.Environment)) *catalystv1alpha1.Environment {
	e := &catalystv1alpha1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: "pr-123", Namespace: "team-shop", Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))},
		Spec: catalystv1alpha1.EnvironmentSpec{
			ProjectRef: catalystv1alpha1.ProjectReference{Name: "shop", Namespace: "team"},
			Type:       catalystv1alpha1.EnvironmentTypeDevelopment,
			Source:     catalystv1alpha1.EnvironmentSource{CommitSHA: testSHA, Branch: "feature/login"},
		},
	}
	for _, o := range opts {
		o(e)
	}
	return e
}

func buildFor(t *testing.T, p *catalystv1alpha1.Project, git *gitsource.Credentials, docker []byte) (*corevJob, map[string][]byte) {
	t.Helper()
	env := testEnv()
	data, err := buildSecretData(p.Spec.Build.Engine, docker, git)
	if err != nil {
		t.Fatal(err)
	}
	img := DefaultKanikoImage
	if p.Spec.Build.Engine == catalystv1alpha1.BuildEngineBuildKit {
		img = DefaultBuildKitImage
	}
	j, err := newBuildJob(buildRequest{
		env: env, project: p, namespace: "slipway-system", image: p.Spec.Registry.Repository + ":" + testSHA,
		commit: testSHA, branch: "feature/login", engineImg: img, hash: buildHash(p, img),
		hasGit: len(data[gitUsernameKey])+len(data[gitAuthHeaderKey]) > 0, hasDocker: len(data[dockerConfigKey]) > 0,
		resources: defaultBuildResources(), repository: p.Spec.Source.RepositoryURL,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &corevJob{j.Spec.Template.Spec, j.Name, j.Labels, j.Annotations, *j.Spec.BackoffLimit, *j.Spec.ActiveDeadlineSeconds}, data
}

type corevJob struct {
	pod         corev1.PodSpec
	name        string
	labels      map[string]string
	annotations map[string]string
	backoff     int32
	deadline    int64
}

func envValue(c corev1.Container, name string) (string, *corev1.SecretKeySelector) {
	for _, e := range c.Env {
		if e.Name == name {
			if e.ValueFrom != nil {
				return "", e.ValueFrom.SecretKeyRef
			}
			return e.Value, nil
		}
	}
	return "", nil
}

// The Kaniko Job builds the commit from a git context, pushes <repository>:<commit>, and reads
// every credential from its Secret: none is on the command line.
func TestBuildJob_KanikoFromGitAtCommit(t *testing.T) {
	p := testProject(func(p *catalystv1alpha1.Project) {
		p.Spec.Build.Context, p.Spec.Build.Dockerfile = "services/api", "build/Dockerfile"
		p.Spec.Registry.Insecure = true
	})
	job, data := buildFor(t, p, &gitsource.Credentials{Username: "bot", Password: "hunter2"}, []byte(`{"auths":{}}`))
	c := job.pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{
		"--context=git://git.example.dev/org/shop.git#refs/heads/feature/login#" + testSHA,
		"--context-sub-path=services/api", "--dockerfile=build/Dockerfile",
		"--destination=registry.example.dev:5000/org/shop:" + testSHA, "--insecure", "--insecure-registry=registry.example.dev:5000",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "hunter2") || strings.Contains(args, "bot") {
		t.Errorf("credentials on the command line: %q", args)
	}
	if v, _ := envValue(c, "GIT_PULL_METHOD"); v != "https" {
		t.Errorf("GIT_PULL_METHOD = %q", v)
	}
	for name, key := range map[string]string{"GIT_USERNAME": gitUsernameKey, "GIT_PASSWORD": gitPasswordKey} {
		if _, ref := envValue(c, name); ref == nil || ref.Name != job.name || ref.Key != key {
			t.Errorf("%s is not read from the Job's Secret: %+v", name, ref)
		}
	}
	if string(data[gitPasswordKey]) != "hunter2" || string(data[dockerConfigKey]) == "" {
		t.Errorf("Secret data incomplete: keys %v", keys(data))
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != kanikoDockerDir {
		t.Errorf("docker config not mounted at %s: %+v", kanikoDockerDir, c.VolumeMounts)
	}
	if job.backoff != 0 || job.deadline != int64(DefaultBuildTimeout.Seconds()) {
		t.Errorf("backoffLimit %d, deadline %d", job.backoff, job.deadline)
	}
	if *job.pod.AutomountServiceAccountToken {
		t.Error("the build pod gets a ServiceAccount token")
	}
	if job.labels[LabelManagedBy] != ManagedByValue || job.labels[LabelEnvironmentName] != "pr-123" || job.annotations[AnnotationImage] == "" {
		t.Errorf("labels %v annotations %v", job.labels, job.annotations)
	}
	if errs := validation.IsDNS1123Label(job.name); len(errs) > 0 {
		t.Errorf("Job name %q: %v", job.name, errs)
	}
}

// The rootless BuildKit Job builds the same commit with buildctl-daemonless.sh, unconfined for
// user namespaces, with git credentials as an auth header secret.
func TestBuildJob_BuildKitRootless(t *testing.T) {
	p := testProject(func(p *catalystv1alpha1.Project) {
		p.Spec.Build.Engine = catalystv1alpha1.BuildEngineBuildKit
		p.Spec.Build.Context = "app"
		p.Spec.Source.RepositoryURL = "http://127.0.0.1:8080/org/shop.git"
	})
	job, data := buildFor(t, p, &gitsource.Credentials{Username: "x-access-token", Password: "tok"}, nil)
	c := job.pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{
		"context=http://127.0.0.1:8080/org/shop.git#" + testSHA + ":app", "filename=Dockerfile",
		"type=image,name=registry.example.dev:5000/org/shop:" + testSHA + ",push=true",
		"id=GIT_AUTH_HEADER.127.0.0.1:8080,env=GIT_AUTH_HEADER",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if c.Command[0] != "buildctl-daemonless.sh" || c.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined ||
		*c.SecurityContext.RunAsUser != 1000 {
		t.Errorf("not a rootless BuildKit container: %+v", c)
	}
	if !strings.HasPrefix(string(data[gitAuthHeaderKey]), "basic ") || strings.Contains(args, "tok") {
		t.Errorf("git auth header %q, args %q", data[gitAuthHeaderKey], args)
	}
	if _, err := buildSecretData(catalystv1alpha1.BuildEngineKaniko, nil, &gitsource.Credentials{BearerToken: "b"}); err == nil {
		t.Error("a bearer token was accepted for a build")
	}
}

// A Job's name depends on the environment, the image, the settings and the generation, so a
// restart finds the same Job and a retry after a spec change makes a new one; it is always a
// DNS label.
func TestBuildJobName(t *testing.T) {
	long := testEnv(func(e *catalystv1alpha1.Environment) { e.Name = strings.Repeat("a-very-long-environment-name", 3)[:63] })
	e1, e2 := testEnv(), testEnv(func(e *catalystv1alpha1.Environment) { e.Generation = 2 })
	if buildJobName(e1, "img:1", "h") != buildJobName(testEnv(), "img:1", "h") {
		t.Error("same input, different names")
	}
	for _, other := range []string{buildJobName(e2, "img:1", "h"), buildJobName(e1, "img:2", "h"), buildJobName(e1, "img:1", "h2")} {
		if other == buildJobName(e1, "img:1", "h") {
			t.Errorf("different inputs share the name %s", other)
		}
	}
	n := buildJobName(long, "img:1", "h")
	if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
		t.Errorf("%q: %v", n, errs)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
