package catalyst

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/operator"
)

// Labels and annotations the controller puts on what it creates. The owner labels name the
// Environment (namespaces cannot hold owner references across namespaces); events on labelled
// objects are mapped back to it.
const (
	LabelManagedBy = operator.ManagedByLabel
	ManagedByValue = operator.ManagedByValue
	LabelComponent = "app.kubernetes.io/component"
	// ComponentEnvironment marks the namespace and the objects made for an environment.
	ComponentEnvironment = "catalyst-environment"
	// ComponentBuild marks build Jobs and their Secrets.
	ComponentBuild = "catalyst-build"

	// LabelEnvironmentNamespace and LabelEnvironmentName name the Environment an object
	// belongs to.
	LabelEnvironmentNamespace = "catalyst.catalyst.dev/environment-namespace"
	LabelEnvironmentName      = "catalyst.catalyst.dev/environment-name"
	// LabelCopiedSecret marks Secrets copied into an environment namespace.
	LabelCopiedSecret = "catalyst.catalyst.dev/copied-secret"
	// LabelBuildGeneration is the Environment generation a build Job was made for.
	LabelBuildGeneration = "catalyst.catalyst.dev/generation"

	// AnnotationCopiedFrom is the <namespace>/<name> a Secret was copied from.
	AnnotationCopiedFrom = "catalyst.catalyst.dev/copied-from"
	// AnnotationInventory lists the objects of the last deploy (on the environment namespace).
	AnnotationInventory = "catalyst.catalyst.dev/inventory"
	// AnnotationCopiedSecrets lists the Secrets copied into the namespace (on the namespace).
	AnnotationCopiedSecrets = "catalyst.catalyst.dev/copied-secrets"
	// AnnotationInventoryRevision is the revision the inventory belongs to.
	AnnotationInventoryRevision = "catalyst.catalyst.dev/inventory-revision"
	// AnnotationImage, AnnotationCommit and AnnotationBuildHash describe a build Job.
	AnnotationImage     = "catalyst.catalyst.dev/image"
	AnnotationCommit    = "catalyst.catalyst.dev/commit"
	AnnotationBuildHash = "catalyst.catalyst.dev/build-hash"
	// AnnotationSpecSince records when the controller first saw the Environment's current
	// generation (<generation>/<RFC 3339 time>): the start of its TTL after a spec change.
	AnnotationSpecSince = "catalyst.catalyst.dev/spec-since"
	// AnnotationClusterIssuer is cert-manager's Ingress annotation.
	AnnotationClusterIssuer = "cert-manager.io/cluster-issuer"

	// Pod-security admission labels.
	labelPodSecurityEnforce        = "pod-security.kubernetes.io/enforce"
	labelPodSecurityEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	labelPodSecurityWarn           = "pod-security.kubernetes.io/warn"
	labelPodSecurityAudit          = "pod-security.kubernetes.io/audit"
	// labelNamespaceName is set by the API server on every namespace.
	labelNamespaceName = "kubernetes.io/metadata.name"

	// Names of the objects made in every environment namespace.
	QuotaName         = "catalyst-quota"
	NetworkPolicyName = "catalyst-default"
	IngressName       = "catalyst-preview"
	PullSecretName    = "catalyst-registry-pull"
	ingressTLSSecret  = "catalyst-preview-tls"
)

// ownerLabels name env on the objects made for it.
func ownerLabels(env *catalystv1alpha1.Environment, component string) map[string]string {
	return map[string]string{
		LabelManagedBy:            ManagedByValue,
		LabelComponent:            component,
		LabelEnvironmentNamespace: env.Namespace,
		LabelEnvironmentName:      env.Name,
	}
}

// namespaceLabels are the labels the environment namespace must carry.
func namespaceLabels(env *catalystv1alpha1.Environment, team, project, branch, psLevel string) map[string]string {
	l := naming.Labels(team, project, env.Name, branch)
	maps.Copy(l, ownerLabels(env, ComponentEnvironment))
	l[labelPodSecurityEnforce] = psLevel
	l[labelPodSecurityEnforceVersion] = "latest"
	l[labelPodSecurityWarn] = psLevel
	l[labelPodSecurityAudit] = psLevel
	return l
}

// desiredQuota is the environment namespace's ResourceQuota, nil when neither the Environment
// nor the Project sets a quota. CPU and memory cap both requests and limits.
func desiredQuota(env *catalystv1alpha1.Environment, project *catalystv1alpha1.Project, ns string) *corev1.ResourceQuota {
	q := env.Spec.Resources.Quota
	if q == nil {
		q = project.Spec.Resources.DefaultQuota
	}
	if q == nil || (q.CPU == nil && q.Memory == nil) {
		return nil
	}
	hard := corev1.ResourceList{}
	if q.CPU != nil {
		hard[corev1.ResourceRequestsCPU] = q.CPU.DeepCopy()
		hard[corev1.ResourceLimitsCPU] = q.CPU.DeepCopy()
	}
	if q.Memory != nil {
		hard[corev1.ResourceRequestsMemory] = q.Memory.DeepCopy()
		hard[corev1.ResourceLimitsMemory] = q.Memory.DeepCopy()
	}
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: ns, Labels: ownerLabels(env, ComponentEnvironment)},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
}

// sameResources reports whether two resource lists hold the same quantities.
func sameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || va.Cmp(vb) != 0 {
			return false
		}
	}
	return true
}

// privateRanges are left out of public egress: other pods and services of the cluster (which
// live in private ranges), cloud metadata endpoints (link-local) and carrier-grade NAT.
var (
	privateIPv4 = []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "127.0.0.0/8"}
	privateIPv6 = []string{"fc00::/7", "fe80::/10", "::1/128"}
)

// desiredNetworkPolicy locks the environment namespace down: ingress only from the namespace
// itself and the ingress controller's namespace; egress only to the namespace itself, to DNS in
// kube-system and, with publicEgress, to public addresses.
func desiredNetworkPolicy(env *catalystv1alpha1.Environment, ns, ingressNS string, publicEgress bool) *networkingv1.NetworkPolicy {
	sameNamespace := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
	ingress := []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{sameNamespace}}}
	if ingressNS != "" {
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelNamespaceName: ingressNS}},
		}}})
	}
	dnsPort := intstr.FromInt32(53)
	egress := []networkingv1.NetworkPolicyEgressRule{
		{To: []networkingv1.NetworkPolicyPeer{sameNamespace}},
		{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelNamespaceName: "kube-system"}},
			}},
			Ports: []networkingv1.NetworkPolicyPort{
				{Protocol: ptr.To(corev1.ProtocolUDP), Port: &dnsPort},
				{Protocol: ptr.To(corev1.ProtocolTCP), Port: &dnsPort},
			},
		},
	}
	if publicEgress {
		egress = append(egress, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: privateIPv4}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: privateIPv6}},
		}})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName, Namespace: ns, Labels: ownerLabels(env, ComponentEnvironment)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     ingress,
			Egress:      egress,
		},
	}
}

// serviceTarget is the Service the Ingress routes to: spec.preview.service, its name defaulting
// to the Project's.
func serviceTarget(project *catalystv1alpha1.Project) (string, int32) {
	name, port := project.Spec.Preview.Service.Name, project.Spec.Preview.Service.Port
	if name == "" {
		name = project.Name
	}
	if port == 0 {
		port = 80
	}
	return name, port
}

// desiredIngress routes host to the project's Service, with TLS from cert-manager or the copied
// wildcard certificate.
func desiredIngress(env *catalystv1alpha1.Environment, project *catalystv1alpha1.Project, ns, host string) *networkingv1.Ingress {
	svc, port := serviceTarget(project)
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: IngressName, Namespace: ns, Labels: ownerLabels(env, ComponentEnvironment)},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: svc, Port: networkingv1.ServiceBackendPort{Number: port},
						}},
					}},
				}},
			}},
		},
	}
	if c := project.Spec.Preview.IngressClassName; c != "" {
		ing.Spec.IngressClassName = ptr.To(c)
	}
	if tls := project.Spec.Preview.TLS; tls != nil {
		entry := networkingv1.IngressTLS{Hosts: []string{host}}
		if tls.ClusterIssuer != "" {
			// cert-manager issues a certificate for this host alone into the Secret.
			ing.Annotations = map[string]string{AnnotationClusterIssuer: tls.ClusterIssuer}
			entry.SecretName = ingressTLSSecret
		}
		// With wildcardSecretRef, no Secret: the ingress controller serves its default certificate
		// (the wildcard, given to it once in its own namespace), so the wildcard's key never enters
		// a namespace where a pull request's code runs.
		ing.Spec.TLS = []networkingv1.IngressTLS{entry}
	}
	return ing
}

// urlFor is the environment's URL: https when the Project has TLS.
func urlFor(project *catalystv1alpha1.Project, host string) string {
	if host == "" {
		return ""
	}
	if project.Spec.Preview.TLS != nil {
		return "https://" + host
	}
	return "http://" + host
}

// hasAll reports whether have holds every key of want with the same value.
func hasAll(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// sameIngress reports whether live already routes like want (labels and annotations the
// controller sets included; others are left alone).
func sameIngress(live, want *networkingv1.Ingress) bool {
	return hasAll(live.Labels, want.Labels) && hasAll(live.Annotations, want.Annotations) &&
		(want.Annotations[AnnotationClusterIssuer] != "" || live.Annotations[AnnotationClusterIssuer] == "") &&
		equality.Semantic.DeepEqual(live.Spec, want.Spec)
}
