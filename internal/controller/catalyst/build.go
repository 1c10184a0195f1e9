package catalyst

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/gitsource"
)

// Build engine images and Job settings.
const (
	DefaultKanikoImage   = "gcr.io/kaniko-project/executor:v1.23.2"
	DefaultBuildKitImage = "moby/buildkit:v0.23.2-rootless"
	// DefaultBuildTimeout applies when the Project sets none (the API defaults it to 30m).
	DefaultBuildTimeout = 30 * time.Minute
	// buildJobTTL removes finished build Jobs (and their Secrets) a day after they end; the
	// controller deletes them sooner when the environment moves on or goes away.
	buildJobTTL = 24 * 60 * 60

	buildContainer  = "build"
	dockerConfigKey = "config.json"
	// Keys of the build Job's Secret holding the git credentials.
	gitUsernameKey   = "git-username"
	gitPasswordKey   = "git-password"
	gitAuthHeaderKey = "git-auth-header"
	kanikoDockerDir  = "/kaniko/.docker"
	buildkitHome     = "/home/user"
)

// buildRequest is everything that makes one build Job.
type buildRequest struct {
	env        *catalystv1alpha1.Environment
	project    *catalystv1alpha1.Project
	namespace  string // the build namespace
	image      string // <repository>:<commit>
	commit     string
	branch     string
	engineImg  string
	hash       string // buildHash
	hasGit     bool   // the Job's Secret holds git credentials
	hasDocker  bool   // ... and a docker config.json
	decorate   func(*corev1.PodTemplateSpec)
	resources  corev1.ResourceList
	repository string // the git URL
}

// buildHash identifies the build settings of an image: the engine and its image, the registry
// repository, the context and the Dockerfile. A failed build is retried when it changes.
func buildHash(project *catalystv1alpha1.Project, engineImage string) string {
	b := project.Spec.Build
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%t\x00%s\x00%s\x00%s\x00%s", b.Engine, engineImage, project.Spec.Registry.Repository,
		project.Spec.Registry.Insecure, project.Spec.Source.RepositoryURL, b.Context, b.Dockerfile, buildTimeout(project))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func buildTimeout(project *catalystv1alpha1.Project) time.Duration {
	if t := project.Spec.Build.Timeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return DefaultBuildTimeout
}

// buildJobName is <environment>-build-<hash>: the hash covers the environment, the image, the
// build settings and the generation, so a retry after a spec change gets a new Job, and a
// restart finds the Job it made before. At most 63 characters.
func buildJobName(env *catalystv1alpha1.Environment, image, settings string) string {
	h := sha256.Sum256([]byte(strings.Join([]string{env.Namespace, env.Name, image, settings, strconv.FormatInt(env.Generation, 10)}, "\x00")))
	suffix := "-build-" + hex.EncodeToString(h[:])[:12]
	name := env.Name
	if m := 63 - len(suffix); len(name) > m {
		name = strings.TrimRight(name[:m], "-")
	}
	return name + suffix
}

// buildLabels are the labels of a build Job, its pod and its Secret.
func buildLabels(env *catalystv1alpha1.Environment) map[string]string {
	l := ownerLabels(env, ComponentBuild)
	l[LabelBuildGeneration] = strconv.FormatInt(env.Generation, 10)
	return l
}

// gitContext splits the repository URL into the scheme and the rest (host and path).
func gitContext(repo string) (scheme, hostPath string, err error) {
	u, err := url.Parse(repo)
	if err != nil {
		return "", "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", "", fmt.Errorf("%q is not an http:// or https:// URL", repo)
	}
	return u.Scheme, u.Host + u.Path, nil
}

// newBuildJob makes the Job that builds req.image from the repository at req.commit and pushes
// it. Credentials come from the Job's Secret (named like the Job) as a mounted docker
// config.json and environment variables, never on the command line.
func newBuildJob(req buildRequest) (*batchv1.Job, error) {
	scheme, hostPath, err := gitContext(req.repository)
	if err != nil {
		return nil, err
	}
	b := req.project.Spec.Build
	name := buildJobName(req.env, req.image, req.hash)
	labels := buildLabels(req.env)
	annotations := map[string]string{AnnotationImage: req.image, AnnotationCommit: req.commit, AnnotationBuildHash: req.hash}
	secretEnv := func(envName, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: envName, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key,
		}}}
	}
	insecure := req.project.Spec.Registry.Insecure
	host := registryHost(req.project.Spec.Registry.Repository)

	var c corev1.Container
	var podSC *corev1.PodSecurityContext
	volumes := []corev1.Volume{}
	switch b.Engine {
	case catalystv1alpha1.BuildEngineBuildKit:
		ctxDir := ""
		if d := path.Clean(b.Context); d != "." {
			ctxDir = ":" + d
		}
		output := "type=image,name=" + req.image + ",push=true"
		if insecure {
			output += ",registry.insecure=true"
		}
		args := []string{"build", "--frontend=dockerfile.v0",
			"--opt", "context=" + scheme + "://" + hostPath + "#" + req.commit + ctxDir,
			"--opt", "filename=" + b.Dockerfile,
			"--output", output,
		}
		env := []corev1.EnvVar{
			{Name: "BUILDKITD_FLAGS", Value: "--oci-worker-no-process-sandbox"},
			{Name: "DOCKER_CONFIG", Value: buildkitHome + "/.docker"},
		}
		if req.hasGit {
			gitHost := strings.SplitN(hostPath, "/", 2)[0]
			args = append(args, "--secret", "id=GIT_AUTH_HEADER."+gitHost+",env=GIT_AUTH_HEADER")
			env = append(env, secretEnv("GIT_AUTH_HEADER", gitAuthHeaderKey))
		}
		mounts := []corev1.VolumeMount{{Name: "buildkitd", MountPath: buildkitHome + "/.local/share/buildkit"}}
		volumes = append(volumes, corev1.Volume{Name: "buildkitd", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		if req.hasDocker {
			mounts = append(mounts, corev1.VolumeMount{Name: "docker-config", MountPath: buildkitHome + "/.docker", ReadOnly: true})
		}
		c = corev1.Container{
			Name: buildContainer, Image: req.engineImg, Command: []string{"buildctl-daemonless.sh"}, Args: args, Env: env, VolumeMounts: mounts,
			SecurityContext: &corev1.SecurityContext{
				// Rootless BuildKit needs user namespaces without seccomp and AppArmor filtering of
				// the syscalls that create them; it runs as an unprivileged user.
				RunAsUser:       ptr.To[int64](1000),
				RunAsGroup:      ptr.To[int64](1000),
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
			},
		}
		podSC = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)}
	default: // kaniko
		args := []string{
			"--context=git://" + hostPath + "#refs/heads/" + req.branch + "#" + req.commit,
			"--dockerfile=" + b.Dockerfile,
			"--destination=" + req.image,
			"--digest-file=/dev/termination-log",
			"--verbosity=info",
		}
		if d := path.Clean(b.Context); d != "." {
			args = append(args, "--context-sub-path="+d)
		}
		if insecure {
			args = append(args, "--insecure", "--skip-tls-verify", "--insecure-registry="+host, "--skip-tls-verify-registry="+host)
		}
		env := []corev1.EnvVar{{Name: "GIT_PULL_METHOD", Value: scheme}, {Name: "DOCKER_CONFIG", Value: kanikoDockerDir}}
		if req.hasGit {
			env = append(env, secretEnv("GIT_USERNAME", gitUsernameKey), secretEnv("GIT_PASSWORD", gitPasswordKey))
		}
		var mounts []corev1.VolumeMount
		if req.hasDocker {
			mounts = append(mounts, corev1.VolumeMount{Name: "docker-config", MountPath: kanikoDockerDir, ReadOnly: true})
		}
		c = corev1.Container{
			Name: buildContainer, Image: req.engineImg, Args: args, Env: env, VolumeMounts: mounts,
			// Kaniko unpacks base images and runs RUN steps as root inside its container; it needs
			// no privilege, host access or extra capability.
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		}
	}
	if req.hasDocker {
		volumes = append(volumes, corev1.Volume{Name: "docker-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: name, Items: []corev1.KeyToPath{{Key: dockerConfigKey, Path: dockerConfigKey}},
		}}})
	}
	c.Resources = corev1.ResourceRequirements{Requests: req.resources, Limits: req.resources}
	c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	if len(volumes) == 0 {
		volumes = nil
	}

	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: maps.Clone(annotations)},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext:              podSC,
			Containers:                   []corev1.Container{c},
			Volumes:                      volumes,
		},
	}
	if req.decorate != nil {
		req.decorate(&tpl)
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: req.namespace, Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To(int64(buildTimeout(req.project).Seconds())),
			TTLSecondsAfterFinished: ptr.To[int32](buildJobTTL),
			Template:                tpl,
		},
	}, nil
}

// defaultBuildResources bound a build Job's pod.
func defaultBuildResources() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}
}

// buildSecretData is the content of a build Job's Secret: a docker config.json for the registry
// and the git credentials in the form the engine reads them. A bearer token cannot be used:
// neither engine sends one to a git server.
func buildSecretData(engine catalystv1alpha1.BuildEngine, dockerConfig []byte, git *gitsource.Credentials) (map[string][]byte, error) {
	data := map[string][]byte{}
	if len(dockerConfig) > 0 {
		data[dockerConfigKey] = dockerConfig
	}
	if git != nil && *git != (gitsource.Credentials{}) {
		if git.BearerToken != "" {
			return nil, fmt.Errorf("%w: the build engines authenticate to git with a user name and password or token, not a bearerToken", errSecret)
		}
		if engine == catalystv1alpha1.BuildEngineBuildKit {
			data[gitAuthHeaderKey] = []byte("basic " + base64.StdEncoding.EncodeToString([]byte(git.Username+":"+git.Password)))
		} else {
			data[gitUsernameKey] = []byte(git.Username)
			data[gitPasswordKey] = []byte(git.Password)
		}
	}
	return data, nil
}
