// Package config embeds the generated manifests (CRDs, RBAC, webhooks) and the install's
// namespaces, so the test harness and the dev environment install exactly what `make manifests`
// produced and what config/ ships.
package config

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

//go:embed crd/bases/*.yaml rbac/*/role.yaml rbac/*/*/role.yaml manager/*.yaml manager/*/*.yaml webhook/manifests.yaml samples
var files embed.FS

// CRDs returns every CustomResourceDefinition under crd/bases.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, "crd/bases/*.yaml")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		objs, err := decodeAll[apiextensionsv1.CustomResourceDefinition](name)
		if err != nil {
			return nil, err
		}
		crds = append(crds, objs...)
	}
	return crds, nil
}

// CommonRole names the role every operator needs whichever controllers it runs (leader election,
// Events, webhook certificates, metrics authorization): rbac/common/role.yaml.
const CommonRole = "common"

// Controllers returns the controllers that have a generated role (rbac/<controller>/role.yaml),
// the names --controllers accepts, sorted.
func Controllers() ([]string, error) {
	names, err := fs.Glob(files, "rbac/*/role.yaml")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if c := path.Base(path.Dir(n)); c != CommonRole {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Roles returns the generated ClusterRoles and namespaced Roles an operator running the given
// controllers needs: the common role and each controller's own (rbac/<controller>/role.yaml).
// No controllers means all of them, as for --controllers.
func Roles(controllers ...string) ([]*rbacv1.ClusterRole, []*rbacv1.Role, error) {
	all, err := Controllers()
	if err != nil {
		return nil, nil, err
	}
	if len(controllers) == 0 {
		controllers = all
	}
	var clusterRoles []*rbacv1.ClusterRole
	var roles []*rbacv1.Role
	seen := map[string]bool{}
	for _, c := range append([]string{CommonRole}, controllers...) {
		if seen[c] {
			continue
		}
		seen[c] = true
		if c != CommonRole && !slices.Contains(all, c) {
			return nil, nil, fmt.Errorf("no generated role for controller %q; controllers: %s", c, strings.Join(all, ", "))
		}
		name := "rbac/" + c + "/role.yaml"
		docs, err := decodeAll[rbacv1.Role](name)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range docs {
			switch d.Kind {
			case "ClusterRole":
				clusterRoles = append(clusterRoles, &rbacv1.ClusterRole{TypeMeta: d.TypeMeta, ObjectMeta: d.ObjectMeta, Rules: d.Rules})
			case "Role":
				roles = append(roles, d)
			default:
				return nil, nil, fmt.Errorf("%s: unexpected %s", name, d.Kind)
			}
		}
	}
	return clusterRoles, roles, nil
}

// UnboundRoles returns the ClusterRoles shipped with the given controllers (all when none is
// given) that no operator identity is bound to: rbac/<controller>/<name>/role.yaml. A controller
// binds them itself where it needs them; Catalyst binds slipway-catalyst-deployer (rbac/catalyst/
// deployer) to the deployer ServiceAccount of each environment namespace, through a RoleBinding
// there. An install ships them beside the controllers' roles and binds them to nobody.
func UnboundRoles(controllers ...string) ([]*rbacv1.ClusterRole, error) {
	all, err := Controllers()
	if err != nil {
		return nil, err
	}
	if len(controllers) == 0 {
		controllers = all
	}
	var out []*rbacv1.ClusterRole
	seen := map[string]bool{}
	for _, c := range controllers {
		if seen[c] {
			continue
		}
		seen[c] = true
		if !slices.Contains(all, c) {
			return nil, fmt.Errorf("no generated role for controller %q; controllers: %s", c, strings.Join(all, ", "))
		}
		names, err := fs.Glob(files, "rbac/"+c+"/*/role.yaml")
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			docs, err := decodeAll[rbacv1.ClusterRole](name)
			if err != nil {
				return nil, err
			}
			for _, d := range docs {
				if d.Kind != "ClusterRole" {
					return nil, fmt.Errorf("%s: unexpected %s (only ClusterRoles are shipped unbound)", name, d.Kind)
				}
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// Namespaces returns the Namespaces the install creates (manager/*.yaml and each system's
// manager/<controller>/*.yaml), with their labels: the operator's own, labelled for Pod Security,
// and any other the controllers work in (Catalyst's build namespace).
func Namespaces() ([]*corev1.Namespace, error) {
	var names []string
	for _, pattern := range []string{"manager/*.yaml", "manager/*/*.yaml"} {
		found, err := fs.Glob(files, pattern)
		if err != nil {
			return nil, err
		}
		names = append(names, found...)
	}
	var out []*corev1.Namespace
	for _, name := range names {
		docs, err := decodeAll[map[string]any](name)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if (*d)["kind"] != "Namespace" {
				continue
			}
			data, err := sigsyaml.Marshal(*d)
			if err != nil {
				return nil, err
			}
			ns := &corev1.Namespace{}
			if err := sigsyaml.UnmarshalStrict(data, ns); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", name, err)
			}
			out = append(out, ns)
		}
	}
	return out, nil
}

// BuildNamespaceGuards returns the NetworkPolicies and ResourceQuotas the install ships beside its
// namespaces (manager/*/*.yaml: Catalyst's build namespace), for the installer of the tests and
// the chart's comparison.
func BuildNamespaceGuards() ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(files, "manager/*/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, name := range names {
		docs, err := decodeAll[map[string]any](name)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if k := (*d)["kind"]; k == "NetworkPolicy" || k == "ResourceQuota" {
				out = append(out, &unstructured.Unstructured{Object: *d})
			}
		}
	}
	return out, nil
}

func decodeAll[T any](name string) ([]*T, error) {
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, err
	}
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*T
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || string(bytes.TrimSpace(doc)) == "---" {
			continue
		}
		obj := new(T)
		if err := sigsyaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		out = append(out, obj)
	}
}

// WebhookConfigurations returns the generated webhook configurations (webhook/manifests.yaml).
// With a non-empty base URL such as https://localhost:9443, every webhook calls base + its path
// instead of the operator's Service: for an operator run outside the cluster.
func WebhookConfigurations(base string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	const name = "webhook/manifests.yaml"
	docs, err := decodeAll[map[string]any](name)
	if err != nil {
		return nil, nil, err
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	var found int
	for _, d := range docs {
		data, err := sigsyaml.Marshal(*d)
		if err != nil {
			return nil, nil, err
		}
		switch (*d)["kind"] {
		case "MutatingWebhookConfiguration":
			err = sigsyaml.UnmarshalStrict(data, mutating)
			for i := range mutating.Webhooks {
				mutating.Webhooks[i].ClientConfig = clientConfig(base, mutating.Webhooks[i].ClientConfig)
			}
		case "ValidatingWebhookConfiguration":
			err = sigsyaml.UnmarshalStrict(data, validating)
			for i := range validating.Webhooks {
				validating.Webhooks[i].ClientConfig = clientConfig(base, validating.Webhooks[i].ClientConfig)
			}
		default:
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		found++
	}
	if found != 2 {
		return nil, nil, fmt.Errorf("%s: want a mutating and a validating configuration, found %d configurations", name, found)
	}
	return mutating, validating, nil
}

func clientConfig(base string, cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
	if base == "" || cc.Service == nil || cc.Service.Path == nil {
		return cc
	}
	url := base + *cc.Service.Path
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: cc.CABundle}
}

// Samples returns the objects in samples/*.yaml (kustomization.yaml aside), in file order.
func Samples() ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(files, "samples/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, name := range names {
		if path.Base(name) == "kustomization.yaml" {
			continue
		}
		objs, err := decodeAll[map[string]any](name)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, &unstructured.Unstructured{Object: *o})
		}
	}
	return out, nil
}

// AdmissionPoliciesFile is Catalyst's preview rules (docs/catalyst.md, Admission policies).
const AdmissionPoliciesFile = "manager/catalyst/admission-policies.yaml"

// AdmissionPolicies returns Catalyst's ValidatingAdmissionPolicies and their bindings
// (manager/catalyst/admission-policies.yaml), in file order.
func AdmissionPolicies() ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	docs, err := decodeAll[map[string]any](AdmissionPoliciesFile)
	if err != nil {
		return nil, nil, err
	}
	var policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, d := range docs {
		data, err := sigsyaml.Marshal(*d)
		if err != nil {
			return nil, nil, err
		}
		switch (*d)["kind"] {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			err = sigsyaml.UnmarshalStrict(data, p)
			policies = append(policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			err = sigsyaml.UnmarshalStrict(data, b)
			bindings = append(bindings, b)
		default:
			err = fmt.Errorf("unexpected %v", (*d)["kind"])
		}
		if err != nil {
			return nil, nil, fmt.Errorf("decoding %s: %w", AdmissionPoliciesFile, err)
		}
	}
	return policies, bindings, nil
}
