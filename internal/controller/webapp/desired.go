package webapp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator"
)

// Labels on the Deployment, the Service and the pods.
const (
	LabelName     = "app.kubernetes.io/name"
	LabelInstance = "app.kubernetes.io/instance"
	// AnnotationSpecHash on the Deployment and the Service is a hash of what the operator last
	// applied (replicas aside). A changed spec changes it, so a field the spec no longer sets is
	// removed by the next apply even though the live object still holds it.
	AnnotationSpecHash = "webapp.slipway.dev/spec-hash"
	// ContainerName is the name of the WebApp's container; PortName of its port.
	ContainerName = "app"
	PortName      = "http"
)

// Defaults for spec fields left empty (the mutating webhook and the CRD defaults set them too).
const (
	DefaultReplicas         int32 = 1
	DefaultPort             int32 = 80
	DefaultRevisionHistory  int32 = 3
	DefaultProgressDeadline int32 = 600
)

// SelectorLabels select the WebApp's pods. They derive from the WebApp's name only, which cannot
// change, because a Deployment's selector is immutable.
func SelectorLabels(app *webappv1.WebApp) map[string]string {
	return map[string]string{LabelName: app.Name, LabelInstance: app.Name}
}

// Selector is SelectorLabels as a string, for status.selector (the scale subresource).
func Selector(app *webappv1.WebApp) string {
	return labels.SelectorFromSet(SelectorLabels(app)).String()
}

func standardLabels(app *webappv1.WebApp) map[string]string {
	l := SelectorLabels(app)
	l[operator.ManagedByLabel] = operator.ManagedByValue
	return l
}

// shardLabels carries the WebApp's shard (operator --shards) to its Deployment and Service, so
// the shard caches them; outside the spec hash and off the pods, so a move rolls nothing out.
func shardLabels(app *webappv1.WebApp) map[string]string {
	if s := app.Labels[webappv1.ShardLabel]; s != "" {
		return map[string]string{webappv1.ShardLabel: s}
	}
	return nil
}

func replicasOf(app *webappv1.WebApp) int32 {
	if app.Spec.Replicas != nil {
		return *app.Spec.Replicas
	}
	return DefaultReplicas
}

func portOf(app *webappv1.WebApp) int32 {
	if app.Spec.Port != 0 {
		return app.Spec.Port
	}
	return DefaultPort
}

func ownerRef(app *webappv1.WebApp) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(webappv1.GroupVersion.String()).WithKind("WebApp").
		WithName(app.Name).WithUID(app.UID).
		WithController(true).WithBlockOwnerDeletion(true)
}

// containerSecurity is the container's security context for spec.podSecurity; baseline writes
// exactly what every WebApp had before the field, so no pod rolls for it.
func containerSecurity(app *webappv1.WebApp) *corev1ac.SecurityContextApplyConfiguration {
	sc := corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false)
	if app.Spec.PodSecurity == webappv1.PodSecurityRestricted {
		sc.WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
	}
	return sc
}

// podSecurity is the pod's security context for spec.podSecurity.
func podSecurity(app *webappv1.WebApp) *corev1ac.PodSecurityContextApplyConfiguration {
	sc := corev1ac.PodSecurityContext().WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	if app.Spec.PodSecurity == webappv1.PodSecurityRestricted {
		sc.WithRunAsNonRoot(true)
	}
	return sc
}

// desiredDeployment is the Deployment the WebApp asks for, with its spec-hash annotation.
//
// Pod security: the pod uses the RuntimeDefault seccomp profile, the container may not gain
// privileges (no setuid binaries), no ServiceAccount token is mounted and no Service environment
// variables are injected. That meets the Pod Security Standard "baseline" without forcing a
// non-root user or dropping capabilities: many images (nginx among them) start as root or bind
// port 80 and would break. spec.podSecurity "restricted" adds runAsNonRoot and drops every
// capability, which meets "restricted" for an image built to run as a numeric non-root user.
func desiredDeployment(app *webappv1.WebApp, progressDeadline int32) (*appsv1ac.DeploymentApplyConfiguration, error) {
	c := corev1ac.Container().
		WithName(ContainerName).
		WithImage(app.Spec.Image).
		WithPorts(corev1ac.ContainerPort().WithName(PortName).WithContainerPort(portOf(app)).WithProtocol(corev1.ProtocolTCP)).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithSecurityContext(containerSecurity(app))
	if len(app.Spec.Env) > 0 {
		var env []*corev1ac.EnvVarApplyConfiguration
		if err := convert(app.Spec.Env, &env); err != nil {
			return nil, fmt.Errorf("converting env: %w", err)
		}
		c.WithEnv(env...)
	}
	if len(app.Spec.Resources.Limits) > 0 || len(app.Spec.Resources.Requests) > 0 || len(app.Spec.Resources.Claims) > 0 {
		res := &corev1ac.ResourceRequirementsApplyConfiguration{}
		if err := convert(app.Spec.Resources, res); err != nil {
			return nil, fmt.Errorf("converting resources: %w", err)
		}
		c.WithResources(res)
	}
	if p := app.Spec.HealthCheckPath; p != "" {
		get := func() *corev1ac.HTTPGetActionApplyConfiguration {
			return corev1ac.HTTPGetAction().WithPath(p).WithPort(intstr.FromString(PortName))
		}
		c.WithReadinessProbe(corev1ac.Probe().WithHTTPGet(get()).WithPeriodSeconds(5).WithFailureThreshold(3))
		c.WithLivenessProbe(corev1ac.Probe().WithHTTPGet(get()).WithInitialDelaySeconds(10).WithPeriodSeconds(10).WithFailureThreshold(6))
	}
	pod := corev1ac.PodSpec().
		WithContainers(c).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(podSecurity(app))
	for _, s := range app.Spec.ImagePullSecrets {
		pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s.Name))
	}
	if progressDeadline <= 0 {
		progressDeadline = DefaultProgressDeadline
	}
	d := appsv1ac.Deployment(app.Name, app.Namespace).
		WithLabels(standardLabels(app)).
		WithOwnerReferences(ownerRef(app)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(app))).
			WithRevisionHistoryLimit(DefaultRevisionHistory).
			WithProgressDeadlineSeconds(progressDeadline).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(standardLabels(app)).
				WithSpec(pod)))
	// The hash leaves replicas out: scaling is not a change of what the pods run.
	hash, err := specHash(d)
	if err != nil {
		return nil, err
	}
	d.WithAnnotations(map[string]string{AnnotationSpecHash: hash})
	d.Spec.WithReplicas(replicasOf(app))
	d.WithLabels(shardLabels(app))
	return d, nil
}

// desiredService is the Service the WebApp asks for: its port, named http, to the pods' http port.
func desiredService(app *webappv1.WebApp) (*corev1ac.ServiceApplyConfiguration, error) {
	typ := app.Spec.ServiceType
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP
	}
	s := corev1ac.Service(app.Name, app.Namespace).
		WithLabels(standardLabels(app)).
		WithOwnerReferences(ownerRef(app)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(typ).
			WithSelector(SelectorLabels(app)).
			WithPorts(corev1ac.ServicePort().
				WithName(PortName).WithProtocol(corev1.ProtocolTCP).
				WithPort(portOf(app)).WithTargetPort(intstr.FromString(PortName))))
	hash, err := specHash(s)
	if err != nil {
		return nil, err
	}
	s.WithAnnotations(map[string]string{AnnotationSpecHash: hash})
	s.WithLabels(shardLabels(app))
	return s, nil
}

// URL is the in-cluster address of the WebApp's Service.
func URL(app *webappv1.WebApp) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", app.Name, app.Namespace, portOf(app))
}

func specHash(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("hashing the desired object: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// convert copies a typed API value into its apply configuration (they share the JSON form).
func convert(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}
