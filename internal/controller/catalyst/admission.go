package catalyst

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	storagev1 "k8s.io/api/storage/v1"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
)

// The environment's admission parameters: annotations of its namespace, read by the admission
// policies config/manager/catalyst/admission-policies.yaml ships (docs/catalyst.md, Admission
// policies). They live on the namespace rather than in an object inside it so that they exist
// from the namespace's first instant to its last: written in the request that creates it, and
// still there while the namespace controller empties it on deletion, when a parameter object in
// the namespace would already be gone and every later write of the control plane (a finalizer
// removed) refused. No identity of the namespace can write a Namespace.
const (
	policyPrefix = "policy.catalyst.catalyst.dev/"
	// PolicyHost is the environment's host (<environment>.<domain>); empty without a domain.
	PolicyHost = policyPrefix + "host"
	// PolicySubHosts is "true" when names under the host are allowed too.
	PolicySubHosts = policyPrefix + "sub-hosts"
	// The lists, comma-separated.
	PolicyIngressClasses     = policyPrefix + "ingress-classes"
	PolicyIngressAnnotations = policyPrefix + "ingress-annotations"
	PolicyGateways           = policyPrefix + "gateways"
	PolicyServiceTypes       = policyPrefix + "service-types"
	PolicyPriorityClasses    = policyPrefix + "priority-classes"
	PolicyStorageClasses     = policyPrefix + "storage-classes"
	PolicyClusterRoles       = policyPrefix + "cluster-roles"
)

// annotationDefaultStorageClass marks the cluster's default StorageClass.
const annotationDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"

// policyParams are the admission parameters of an environment of project served at host:
// the Project's allowed lists, with their documented defaults filled in.
func policyParams(project *catalystv1alpha1.Project, host, defaultStorageClass string) map[string]string {
	d := project.Spec.Deployment
	classes := d.AllowedIngressClasses
	if len(classes) == 0 && project.Spec.Preview.IngressClassName != "" {
		classes = []string{project.Spec.Preview.IngressClassName}
	}
	var annotations []string
	for _, a := range d.AllowedIngressAnnotations {
		for _, k := range a.Keys {
			annotations = append(annotations, a.IngressClassName+"="+k)
		}
	}
	var gateways []string
	for _, g := range d.AllowedGateways {
		gateways = append(gateways, g.Namespace+"/"+g.Name)
	}
	storage := d.AllowedStorageClasses
	if len(storage) == 0 && defaultStorageClass != "" {
		storage = []string{defaultStorageClass}
	}
	return map[string]string{
		PolicyHost:               host,
		PolicySubHosts:           strconv.FormatBool(d.AllowSubHosts),
		PolicyIngressClasses:     strings.Join(classes, ","),
		PolicyIngressAnnotations: strings.Join(annotations, ","),
		PolicyGateways:           strings.Join(gateways, ","),
		PolicyServiceTypes:       strings.Join(d.AllowedServiceTypes, ","),
		PolicyPriorityClasses:    strings.Join(d.AllowedPriorityClasses, ","),
		PolicyStorageClasses:     strings.Join(storage, ","),
		PolicyClusterRoles:       strings.Join(d.AllowedClusterRoles, ","),
	}
}

// environmentHost is the environment's host, <environment>.<domain> with the Project's preview
// domain or else the operator's; empty without either.
func (r *EnvironmentReconciler) environmentHost(env *catalystv1alpha1.Environment, project *catalystv1alpha1.Project) (string, error) {
	domain := project.Spec.Preview.Domain
	if domain == "" {
		domain = r.PreviewDomain
	}
	if domain == "" {
		return "", nil
	}
	return naming.IngressHost(env.Name, domain)
}

// defaultStorageClass is the name of the cluster's default StorageClass (the one the API server
// gives a claim that names none), "" when there is none; from the cache.
func (r *EnvironmentReconciler) defaultStorageClass(ctx context.Context) (string, error) {
	list := &storagev1.StorageClassList{}
	if err := r.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing StorageClasses: %w", err)
	}
	var defaults []string
	for _, sc := range list.Items {
		if sc.Annotations[annotationDefaultStorageClass] == "true" {
			defaults = append(defaults, sc.Name)
		}
	}
	// With several defaults the API server picks the newest; any of them would do for the claim,
	// so allowing them all changes nothing a tenant could not already get.
	slices.Sort(defaults)
	return strings.Join(defaults, ","), nil
}
