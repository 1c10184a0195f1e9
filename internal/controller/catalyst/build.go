package catalyst

import (
	"crypto/sha256"
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
	"github.com/slipway-dev/slipway/internal/registry/access"
)

// Build engine images and Job settings.
const (
	DefaultKanikoImage   = "gcr.io/kaniko-project/executor:v1.23.2"
	DefaultBuildKitImage = "moby/buildkit:v0.23.2-rootless"
	// DefaultBuildHelperImage runs the fetch and push containers of build Jobs: the operator's own
	// image (config/manager and the chart set --catalyst-build-helper-image to it).
	DefaultBuildHelperImage = "slipway-operator:latest"
	// DefaultBuildTimeout applies when the Project sets none (the API defaults it to 30m).
	DefaultBuildTimeout = 30 * time.Minute
	// buildJobTTL removes finished build Jobs (and their Secrets) a day after they end; the
	// controller deletes them sooner when the environment moves on or goes away.
	buildJobTTL = 24 * 60 * 60

	// The build pod's containers, in the order they run: fetch and build are init containers.
	fetchContainer = "fetch"
	buildContainer = "build"
	pushContainer  = "push"

	// Keys of the build Job's Secret: the registry's docker config, and the git credentials.
	dockerConfigKey    = "config.json"
	gitUsernameKey     = "git-username"
	gitPasswordKey     = "git-password"
	gitBearerTokenKey  = "git-bearer-token"
	buildkitHome       = "/home/user"
	workspaceDir       = "/workspace"
	sourceDir          = workspaceDir + "/src"
	imageDir           = "/image"
	imageTarball       = imageDir + "/image.tar"
	gitCredentialsDir  = "/credentials/git"
	registryCredsDir   = "/credentials/registry"
	buildHelperUID     = 1000
	buildHelperFSGroup = 1000
	// buildHelperCommand is the operator's argument that runs a helper (buildhelper.Command);
	// the image's entrypoint is the operator.
	buildHelperCommand = "build-helper"
)

// gitSecretPaths maps the build Secret's git keys to the file names the fetch helper reads (the
// keys of a git credentials Secret, gitsource.CredentialsFromSecretData).
var gitSecretPaths = map[string]string{gitUsernameKey: "username", gitPasswordKey: "password", gitBearerTokenKey: "bearerToken"}

// buildRequest is everything that makes one build Job.
type buildRequest struct {
	env        *catalystv1alpha1.Environment
	project    *catalystv1alpha1.Project
	namespace  string // the build namespace
	image      string // <repository>:<commit>
	commit     string
	branch     string
	engineImg  string
	helperImg  string   // the operator's image: fetch and push
	hash       string   // buildHash
	gitKeys    []string // the git keys the Job's Secret holds, sorted
	hasDocker  bool     // ... and a docker config.json
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

// newBuildJob makes the Job that builds req.image from the repository at req.commit and pushes
// it, in three containers so that the pull request's Dockerfile never runs beside a credential:
//
//  1. fetch (init, the operator's image): checks the commit out into the workspace emptyDir, with
//     the git credentials mounted from the Job's Secret (those keys alone);
//  2. build (init, the engine): builds from the workspace into a tarball in the image emptyDir,
//     with no credential, no Secret volume and no push;
//  3. push (the operator's image): pushes the tarball to <repository>:<commit>, with the
//     registry's docker config mounted from the Job's Secret (that key alone).
//
// The pod has no ServiceAccount token. Credentials are never on a command line.
func newBuildJob(req buildRequest) (*batchv1.Job, error) {
	if u, err := url.Parse(req.repository); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL", req.repository)
	}
	name := buildJobName(req.env, req.image, req.hash)
	labels := buildLabels(req.env)
	annotations := map[string]string{AnnotationImage: req.image, AnnotationCommit: req.commit, AnnotationBuildHash: req.hash}

	volumes := []corev1.Volume{
		{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "image", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if len(req.gitKeys) > 0 {
		var items []corev1.KeyToPath
		for _, k := range req.gitKeys {
			items = append(items, corev1.KeyToPath{Key: k, Path: gitSecretPaths[k]})
		}
		volumes = append(volumes, secretVolume("git-credentials", name, items))
	}
	if req.hasDocker {
		volumes = append(volumes, secretVolume("registry-credentials", name,
			[]corev1.KeyToPath{{Key: dockerConfigKey, Path: corev1.DockerConfigJsonKey}}))
	}
	build, buildVolumes := engineContainer(req)
	volumes = append(volumes, buildVolumes...)
	containers := []*corev1.Container{fetchHelper(req), build, pushHelper(req)}
	for _, c := range containers {
		c.Resources = corev1.ResourceRequirements{Requests: req.resources, Limits: req.resources}
		c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	}

	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: maps.Clone(annotations)},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext:              &corev1.PodSecurityContext{FSGroup: ptr.To[int64](buildHelperFSGroup)},
			InitContainers:               []corev1.Container{*containers[0], *containers[1]},
			Containers:                   []corev1.Container{*containers[2]},
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

func secretVolume(volume, secret string, items []corev1.KeyToPath) corev1.Volume {
	return corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: items, DefaultMode: ptr.To[int32](0o440),
	}}}
}

// helperSecurityContext is the restricted Pod Security profile of the fetch and push containers.
func helperSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](buildHelperUID),
		RunAsGroup:               ptr.To[int64](buildHelperUID),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// fetchHelper checks the commit out into the workspace, with the git credentials.
func fetchHelper(req buildRequest) *corev1.Container {
	args := []string{buildHelperCommand, "fetch", "--url=" + req.repository, "--branch=" + req.branch, "--commit=" + req.commit,
		"--dest=" + sourceDir, "--timeout=" + buildTimeout(req.project).String()}
	mounts := []corev1.VolumeMount{{Name: "workspace", MountPath: workspaceDir}}
	if len(req.gitKeys) > 0 {
		args = append(args, "--credentials="+gitCredentialsDir)
		mounts = append(mounts, corev1.VolumeMount{Name: "git-credentials", MountPath: gitCredentialsDir, ReadOnly: true})
	}
	return &corev1.Container{Name: fetchContainer, Image: req.helperImg, Args: args,
		VolumeMounts: mounts, SecurityContext: helperSecurityContext()}
}

// pushHelper pushes the built tarball to req.image, with the registry's push credentials; the
// digest is its termination message.
func pushHelper(req buildRequest) *corev1.Container {
	args := []string{buildHelperCommand, "push", "--tarball=" + imageTarball, "--destination=" + req.image,
		"--digest-file=/dev/termination-log", "--timeout=" + buildTimeout(req.project).String()}
	if req.project.Spec.Registry.Insecure {
		args = append(args, "--insecure")
	}
	mounts := []corev1.VolumeMount{{Name: "image", MountPath: imageDir, ReadOnly: true}}
	if req.hasDocker {
		args = append(args, "--credentials="+registryCredsDir)
		mounts = append(mounts, corev1.VolumeMount{Name: "registry-credentials", MountPath: registryCredsDir, ReadOnly: true})
	}
	return &corev1.Container{Name: pushContainer, Image: req.helperImg, Args: args,
		VolumeMounts: mounts, SecurityContext: helperSecurityContext()}
}

// engineContainer is the container that runs the pull request's Dockerfile: from the workspace
// into the image tarball, with no credential and no push; and the volumes it alone needs.
func engineContainer(req buildRequest) (*corev1.Container, []corev1.Volume) {
	b := req.project.Spec.Build
	ctxDir := path.Join(sourceDir, path.Clean(b.Context))
	mounts := []corev1.VolumeMount{
		{Name: "workspace", MountPath: workspaceDir, ReadOnly: true},
		{Name: "image", MountPath: imageDir},
	}
	if b.Engine == catalystv1alpha1.BuildEngineBuildKit {
		args := []string{"build", "--frontend=dockerfile.v0",
			"--local", "context=" + ctxDir, "--local", "dockerfile=" + ctxDir,
			"--opt", "filename=" + b.Dockerfile,
			"--output", "type=docker,name=" + req.image + ",dest=" + imageTarball,
		}
		mounts = append(mounts, corev1.VolumeMount{Name: "buildkitd", MountPath: buildkitHome + "/.local/share/buildkit"})
		return &corev1.Container{
			Name: buildContainer, Image: req.engineImg, Command: []string{"buildctl-daemonless.sh"}, Args: args, VolumeMounts: mounts,
			Env: []corev1.EnvVar{{Name: "BUILDKITD_FLAGS", Value: "--oci-worker-no-process-sandbox"}},
			SecurityContext: &corev1.SecurityContext{
				// Rootless BuildKit needs user namespaces without seccomp and AppArmor filtering of
				// the syscalls that create them; it runs as an unprivileged user.
				RunAsUser:       ptr.To[int64](1000),
				RunAsGroup:      ptr.To[int64](1000),
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
			},
		}, []corev1.Volume{{Name: "buildkitd", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
	args := []string{
		"--context=dir://" + ctxDir,
		"--dockerfile=" + path.Join(ctxDir, b.Dockerfile),
		"--destination=" + req.image,
		"--no-push",
		"--tar-path=" + imageTarball,
		"--verbosity=info",
	}
	if req.project.Spec.Registry.Insecure {
		// Base images may come from the same registry.
		host := access.Host(req.project.Spec.Registry.Repository)
		args = append(args, "--insecure-registry="+host, "--skip-tls-verify-registry="+host)
	}
	return &corev1.Container{
		Name: buildContainer, Image: req.engineImg, Args: args, VolumeMounts: mounts,
		// Kaniko unpacks base images and runs RUN steps as root inside its container; it needs
		// no privilege, host access or extra capability.
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}, nil
}

// defaultBuildResources bound a build Job's pod.
func defaultBuildResources() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}
}

// buildSecretData is the content of a build Job's Secret: a docker config.json for the registry
// (the push container's) and the git credentials (the fetch container's), each mounted into its
// container alone.
func buildSecretData(dockerConfig []byte, git *gitsource.Credentials) map[string][]byte {
	data := map[string][]byte{}
	if len(dockerConfig) > 0 {
		data[dockerConfigKey] = dockerConfig
	}
	if git != nil {
		for key, v := range map[string]string{gitUsernameKey: git.Username, gitPasswordKey: git.Password, gitBearerTokenKey: git.BearerToken} {
			if v != "" {
				data[key] = []byte(v)
			}
		}
	}
	return data
}

// gitSecretKeys are the git keys of a build Secret's data, sorted.
func gitSecretKeys(data map[string][]byte) []string {
	var out []string
	for _, k := range []string{gitBearerTokenKey, gitPasswordKey, gitUsernameKey} {
		if len(data[k]) > 0 {
			out = append(out, k)
		}
	}
	return out
}
