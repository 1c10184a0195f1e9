package catalyst

import (
	"slices"
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
	data := buildSecretData(docker, git)
	img := DefaultKanikoImage
	if p.Spec.Build.Engine == catalystv1alpha1.BuildEngineBuildKit {
		img = DefaultBuildKitImage
	}
	j, err := newBuildJob(buildRequest{
		env: env, project: p, namespace: "slipway-system", image: p.Spec.Registry.Repository + ":" + testSHA,
		commit: testSHA, branch: "feature/login", engineImg: img, helperImg: "operator:v1", hash: buildHash(p, img),
		gitKeys: gitSecretKeys(data), hasDocker: len(data[dockerConfigKey]) > 0,
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

// container returns the pod's container (or init container) called name.
func (j *corevJob) container(t *testing.T, name string) corev1.Container {
	t.Helper()
	for _, c := range append(slices.Clone(j.pod.InitContainers), j.pod.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

// secretKeysMounted lists the keys of the Job's Secret a container can read: through a mounted
// Secret volume (its items) or a variable.
func (j *corevJob) secretKeysMounted(c corev1.Container) []string {
	var out []string
	for _, m := range c.VolumeMounts {
		for _, v := range j.pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				for _, it := range v.Secret.Items {
					out = append(out, it.Key)
				}
				if len(v.Secret.Items) == 0 {
					out = append(out, "*")
				}
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			out = append(out, e.ValueFrom.SecretKeyRef.Key)
		}
	}
	for _, e := range c.EnvFrom {
		if e.SecretRef != nil {
			out = append(out, "*")
		}
	}
	slices.Sort(out)
	return out
}

// The Kaniko Job: fetch (the git credentials alone), then Kaniko builds the commit's context
// from the workspace into a tarball with no credential and no push, then push (the docker config
// alone) pushes <repository>:<commit>. No credential is on a command line, and the fetch and
// push containers are restricted.
func TestBuildJob_KanikoBuildsWithNoCredential(t *testing.T) {
	p := testProject(func(p *catalystv1alpha1.Project) {
		p.Spec.Build.Context, p.Spec.Build.Dockerfile = "services/api", "build/Dockerfile"
		p.Spec.Registry.Insecure = true
	})
	job, data := buildFor(t, p, &gitsource.Credentials{Username: "bot", Password: "hunter2"}, []byte(`{"auths":{}}`))
	if names := containerNames(job.pod); names != "fetch,build|push" {
		t.Fatalf("containers %s, want init fetch and build, then push", names)
	}
	build := job.container(t, buildContainer)
	args := strings.Join(build.Args, " ")
	for _, want := range []string{
		"--context=dir:///workspace/src/services/api", "--dockerfile=/workspace/src/services/api/build/Dockerfile",
		"--destination=registry.example.dev:5000/org/shop:" + testSHA, "--no-push", "--tar-path=/image/image.tar",
		"--insecure-registry=registry.example.dev:5000",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("build args %q lack %q", args, want)
		}
	}
	if keys := job.secretKeysMounted(build); len(keys) != 0 || len(build.Env) != 0 {
		t.Errorf("the build container reads the Secret's %v, env %v", keys, build.Env)
	}
	fetch, push := job.container(t, fetchContainer), job.container(t, pushContainer)
	if keys := strings.Join(job.secretKeysMounted(fetch), ","); keys != gitPasswordKey+","+gitUsernameKey {
		t.Errorf("fetch reads %s, want the git credentials alone", keys)
	}
	if keys := strings.Join(job.secretKeysMounted(push), ","); keys != dockerConfigKey {
		t.Errorf("push reads %s, want the docker config alone", keys)
	}
	for _, want := range []string{"build-helper fetch --url=https://git.example.dev/org/shop.git --branch=feature/login --commit=" + testSHA,
		"--credentials=/credentials/git"} {
		if got := strings.Join(fetch.Args, " "); !strings.Contains(got, want) || fetch.Image != "operator:v1" {
			t.Errorf("fetch %s %q lacks %q", fetch.Image, got, want)
		}
	}
	for _, want := range []string{"build-helper push --tarball=/image/image.tar --destination=registry.example.dev:5000/org/shop:" + testSHA,
		"--insecure", "--credentials=/credentials/registry"} {
		if got := strings.Join(push.Args, " "); !strings.Contains(got, want) || push.Image != "operator:v1" {
			t.Errorf("push %s %q lacks %q", push.Image, got, want)
		}
	}
	for _, c := range []corev1.Container{fetch, build, push} {
		if a := strings.Join(c.Args, " "); strings.Contains(a, "hunter2") || strings.Contains(a, "bot") {
			t.Errorf("credentials on the command line of %s: %q", c.Name, a)
		}
	}
	for _, c := range []corev1.Container{fetch, push} {
		sc := c.SecurityContext
		if !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !slices.Contains(sc.Capabilities.Drop, "ALL") ||
			sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s is not restricted: %+v", c.Name, sc)
		}
	}
	if string(data[gitPasswordKey]) != "hunter2" || string(data[dockerConfigKey]) == "" {
		t.Errorf("Secret data incomplete: keys %v", keys(data))
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

// The rootless BuildKit Job builds the same workspace with buildctl-daemonless.sh into a docker
// tarball, unconfined for user namespaces and with no credential; a bearer-token git Secret is
// usable now that go-git fetches.
func TestBuildJob_BuildKitRootlessBuildsWithNoCredential(t *testing.T) {
	p := testProject(func(p *catalystv1alpha1.Project) {
		p.Spec.Build.Engine = catalystv1alpha1.BuildEngineBuildKit
		p.Spec.Build.Context = "app"
		p.Spec.Source.RepositoryURL = "http://127.0.0.1:8080/org/shop.git"
	})
	job, data := buildFor(t, p, &gitsource.Credentials{BearerToken: "tok"}, nil)
	c := job.container(t, buildContainer)
	args := strings.Join(c.Args, " ")
	for _, want := range []string{
		"--local context=/workspace/src/app", "--local dockerfile=/workspace/src/app", "filename=Dockerfile",
		"type=docker,name=registry.example.dev:5000/org/shop:" + testSHA + ",dest=/image/image.tar",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if c.Command[0] != "buildctl-daemonless.sh" || c.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined ||
		*c.SecurityContext.RunAsUser != 1000 || strings.Contains(args, "push=true") {
		t.Errorf("not a rootless BuildKit container without push: %+v", c)
	}
	if keys := job.secretKeysMounted(c); len(keys) != 0 || len(c.Env) != 1 {
		t.Errorf("the build container reads the Secret's %v, env %v", keys, c.Env)
	}
	if keys := strings.Join(job.secretKeysMounted(job.container(t, fetchContainer)), ","); keys != gitBearerTokenKey || string(data[gitBearerTokenKey]) != "tok" {
		t.Errorf("fetch reads %s", keys)
	}
	if keys := job.secretKeysMounted(job.container(t, pushContainer)); len(keys) != 0 {
		t.Errorf("push mounts %v with no registry credentials", keys)
	}
}

// The log read after a failed build is the failing container's: fetch, build or push, in the
// order they ran; build when none says so.
func TestFailedContainer(t *testing.T) {
	failed := func(name string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	for want, st := range map[string]corev1.PodStatus{
		fetchContainer: {InitContainerStatuses: []corev1.ContainerStatus{failed(fetchContainer, 1)}},
		buildContainer: {InitContainerStatuses: []corev1.ContainerStatus{failed(fetchContainer, 0), failed(buildContainer, 2)}},
		pushContainer: {InitContainerStatuses: []corev1.ContainerStatus{failed(fetchContainer, 0), failed(buildContainer, 0)},
			ContainerStatuses: []corev1.ContainerStatus{failed(pushContainer, 1)}},
	} {
		if got := failedContainer(&corev1.Pod{Status: st}); got != want {
			t.Errorf("failedContainer = %s, want %s", got, want)
		}
	}
	if got := failedContainer(&corev1.Pod{}); got != buildContainer {
		t.Errorf("no status: %s, want build", got)
	}
}

func containerNames(pod corev1.PodSpec) string {
	var init, main []string
	for _, c := range pod.InitContainers {
		init = append(init, c.Name)
	}
	for _, c := range pod.Containers {
		main = append(main, c.Name)
	}
	return strings.Join(init, ",") + "|" + strings.Join(main, ",")
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
