package werfbundle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
)

// JobKind tells a converge Job from a drift-check Job.
type JobKind string

// Job kinds.
const (
	KindApply JobKind = "apply"
	KindCheck JobKind = "check"
)

// Labels and annotations on the Jobs, their values Secrets and their log ConfigMaps.
const (
	LabelManagedBy       = "app.kubernetes.io/managed-by"
	ManagedByValue       = "slipway"
	LabelComponent       = "app.kubernetes.io/component"
	ComponentValue       = "werfbundle"
	LabelBundleName      = "werf.io/bundle-name"
	LabelBundleNamespace = "werf.io/bundle-namespace"
	LabelJobKind         = "werf.io/job-kind"
	LabelRevision        = "werf.io/revision"
	AnnotationTag        = "werf.io/tag"
	AnnotationRollback   = "werf.io/rollback-of"
	// AnnotationDriftCorrection numbers a drift correction's Job, so a restarted operator counts
	// a correction whose status write was lost.
	AnnotationDriftCorrection = "werf.io/drift-correction"

	containerName = "werf"
	valuesDir     = "/werf/values"
	dockerDir     = "/werf/docker"
	caDir         = "/werf/ca"

	// driftExitCode is what `werf bundle plan --exit-code` returns when changes are planned.
	driftExitCode = 2
)

// jobRequest is everything that makes one Job. Its hash is the Job's identity: the same request
// always gives the same name, so a restart or a second reconcile finds the Job instead of making
// another.
type jobRequest struct {
	Kind       JobKind
	Tag        string
	Revision   string // apply: the revision deployed; check: the revision checked
	RollbackOf string // apply only: the revision whose failure this rollback answers
	Nonce      string // check: the check's schedule slot; apply: a drift correction's number
	Correction int32  // apply only: the number of the drift correction this Job makes
}

// revision hashes what a deploy depends on: tag, merged values and converge settings.
func revision(b *werfv1.WerfBundle, targetNS, release, tag, valuesHash, image string) string {
	c := b.Spec.Converge
	h := sha256.New()
	fmt.Fprintf(h, "url=%s\ninsecure=%t\ntag=%s\nns=%s\nrelease=%s\nsa=%s\nvalues=%s\nimage=%s\n",
		b.Spec.Registry.URL, b.Spec.Registry.Insecure, tag, targetNS, release, c.ServiceAccountName, valuesHash, image)
	if c.ResourceLimits.CPU != nil {
		fmt.Fprintf(h, "cpu=%s\n", c.ResourceLimits.CPU.String())
	}
	if c.ResourceLimits.Memory != nil {
		fmt.Fprintf(h, "memory=%s\n", c.ResourceLimits.Memory.String())
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// jobName is <bundle>-<kind>-<hash>, at most 63 characters (the Job controller copies it into a label).
func jobName(b *werfv1.WerfBundle, req jobRequest) string {
	h := sha256.Sum256([]byte(strings.Join([]string{b.Namespace, b.Name, string(req.Kind), req.Revision, req.RollbackOf, req.Nonce}, "\x00")))
	suffix := fmt.Sprintf("-%s-%s", req.Kind, hex.EncodeToString(h[:])[:10])
	name := b.Name
	if max := 63 - len(suffix); len(name) > max {
		name = strings.TrimRight(name[:max], "-.")
	}
	return name + suffix
}

func bundleLabels(b *werfv1.WerfBundle) map[string]string {
	return map[string]string{
		LabelManagedBy:       ManagedByValue,
		LabelComponent:       ComponentValue,
		LabelBundleName:      b.Name,
		LabelBundleNamespace: b.Namespace,
	}
}

// jobSpec holds what buildJob needs beyond the request.
type jobSpec struct {
	bundle      *werfv1.WerfBundle
	targetNS    string
	release     string
	image       string
	hasValues   bool
	hasDocker   bool
	hasCA       bool
	deadline    int64
	backoff     int32
	decorate    func(JobKind, *corev1.PodTemplateSpec)
	extraEnv    []corev1.EnvVar
	secretName  string
	repoForWerf string
}

// buildJob makes the Job for req: `werf bundle apply` (or `werf bundle plan --exit-code` for a
// drift check) under the bundle's ServiceAccount, with a restricted security context, the values
// file and registry credentials mounted from the Job's Secret, never on the command line.
func buildJob(js jobSpec, req jobRequest) *batchv1.Job {
	b := js.bundle
	labels := bundleLabels(b)
	labels[LabelJobKind] = string(req.Kind)
	labels[LabelRevision] = req.Revision
	annotations := map[string]string{AnnotationTag: req.Tag}
	if req.RollbackOf != "" {
		annotations[AnnotationRollback] = req.RollbackOf
	}
	if req.Correction > 0 {
		annotations[AnnotationDriftCorrection] = strconv.Itoa(int(req.Correction))
	}

	verb := "apply"
	if req.Kind == KindCheck {
		verb = "plan"
	}
	args := []string{"bundle", verb,
		"--repo=" + js.repoForWerf,
		"--tag=" + req.Tag,
		"--release=" + js.release,
		"--namespace=" + js.targetNS,
		"--log-color-mode=off",
	}
	if js.hasValues {
		args = append(args, "--values="+valuesDir+"/values.yaml")
	}
	if req.Kind == KindCheck {
		args = append(args, "--exit-code")
	}
	if b.Spec.Registry.Insecure {
		args = append(args, "--insecure-registry")
	}
	env := []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}, {Name: "WERF_TMP_DIR", Value: "/tmp"}}
	mounts := []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
	volumes := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if js.hasValues {
		mounts = append(mounts, corev1.VolumeMount{Name: "values", MountPath: valuesDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "values", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: js.secretName, Items: []corev1.KeyToPath{{Key: secretKeyValues, Path: "values.yaml"}},
		}}})
	}
	if js.hasDocker {
		args = append(args, "--docker-config="+dockerDir)
		mounts = append(mounts, corev1.VolumeMount{Name: "docker", MountPath: dockerDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "docker", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: js.secretName, Items: []corev1.KeyToPath{{Key: secretKeyDocker, Path: "config.json"}},
		}}})
	}
	if js.hasCA {
		env = append(env, corev1.EnvVar{Name: "SSL_CERT_DIR", Value: "/etc/ssl/certs:" + caDir})
		mounts = append(mounts, corev1.VolumeMount{Name: "ca", MountPath: caDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: js.secretName, Items: []corev1.KeyToPath{{Key: secretKeyCA, Path: "ca.crt"}},
		}}})
	}
	env = append(env, js.extraEnv...)

	limits := corev1.ResourceList{}
	if q := b.Spec.Converge.ResourceLimits.CPU; q != nil {
		limits[corev1.ResourceCPU] = *q
	} else {
		limits[corev1.ResourceCPU] = resource.MustParse("1")
	}
	if q := b.Spec.Converge.ResourceLimits.Memory; q != nil {
		limits[corev1.ResourceMemory] = *q
	} else {
		limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
	}

	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: maps.Clone(annotations)},
		Spec: corev1.PodSpec{
			ServiceAccountName:           b.Spec.Converge.ServiceAccountName,
			AutomountServiceAccountToken: ptr.To(true),
			RestartPolicy:                corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65532),
				RunAsGroup:     ptr.To[int64](65532),
				FSGroup:        ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:         containerName,
				Image:        js.image,
				Command:      []string{"werf"},
				Args:         args,
				Env:          env,
				VolumeMounts: mounts,
				Resources:    corev1.ResourceRequirements{Limits: limits, Requests: limits},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Volumes: volumes,
		},
	}
	if js.decorate != nil {
		js.decorate(req.Kind, &tpl)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        jobName(b, req),
			Namespace:   js.targetNS,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(js.backoff),
			ActiveDeadlineSeconds:   ptr.To(js.deadline),
			TTLSecondsAfterFinished: b.Spec.Converge.JobTTLSecondsAfterFinished,
			Template:                tpl,
		},
	}
	if req.Kind == KindCheck {
		// A plan that finds changes exits 2: that is an answer, not a failure to retry.
		job.Spec.BackoffLimit = ptr.To[int32](0)
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To(containerName),
				Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
				Values:        []int32{driftExitCode},
			},
		}}}
	}
	return job
}
