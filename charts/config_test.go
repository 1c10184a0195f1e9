package charts_test

import (
	"bytes"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/slipway-dev/slipway/internal/operator/command"
	sigsyaml "sigs.k8s.io/yaml"
)

// configNS is the operator namespace of config/; the chart is rendered into it for the comparison.
const configNS = "slipway-system"

// chartOnlyLabels are the labels Helm's templates add (slipway.labels) that config/ has no use for.
var chartOnlyLabels = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"}

// TestChart_DeploymentsMatchConfig renders the chart's defaults into config/'s namespace and
// builds config/default, and compares what `make manifests` does not generate and so is written
// twice: the Deployments (replicas, selectors, pod labels, ServiceAccount, security, affinity,
// the operator's flags as its own flag set parses them, ports, probes, resources, volumes), the
// Services, ServiceAccounts, bindings (role and subjects), PodDisruptionBudgets and the build
// namespace's Pod Security labels. Only Helm's own labels, the image tag and pull policy, and what
// the chart renders only when asked for (the push receiver's Service and container port, off by
// default; config/ ships them with the receiver off) may differ. `make verify` runs it.
func TestChart_DeploymentsMatchConfig(t *testing.T) {
	chart := index(t, renderIn(t, "", configNS))
	kustomized := index(t, kustomizeBuild(t, "../config/default"))

	// The same objects on both sides, but for the kinds make manifests copies (compared by
	// TestChart_MatchesConfig) and these, which only one side has by design.
	configOnly := map[string]string{
		"Service/slipway-werfbundle-receiver": "the chart renders the receiver's Service only with receiver.enabled",
		"Namespace/slipway-system":            "the chart installs into a release namespace that exists already",
	}
	generated := []string{"CustomResourceDefinition", "ClusterRole", "Role", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
	for key := range kustomized {
		if _, ok := chart[key]; !ok && configOnly[key] == "" && !slices.Contains(generated, kindOf(key)) {
			t.Errorf("%s: in config/default, not in the chart", key)
		}
	}
	for key := range chart {
		if _, ok := kustomized[key]; !ok && !slices.Contains(generated, kindOf(key)) {
			t.Errorf("%s: in the chart, not in config/default", key)
		}
	}
	for key, want := range kustomized {
		got, ok := chart[key]
		if !ok {
			continue
		}
		var diff string
		switch kindOf(key) {
		case "Deployment":
			diff = cmp.Diff(deploymentView(t, want), deploymentView(t, got))
		case "Service":
			diff = cmp.Diff(serviceView(t, want), serviceView(t, got))
		case "ServiceAccount":
			diff = cmp.Diff(want.GetNamespace(), got.GetNamespace())
		case "ClusterRoleBinding", "RoleBinding":
			diff = cmp.Diff(bindingView(t, want), bindingView(t, got))
		case "PodDisruptionBudget":
			diff = cmp.Diff(pdbView(t, want), pdbView(t, got))
		case "Namespace":
			diff = cmp.Diff(podSecurity(want), podSecurity(got))
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			diff = cmp.Diff(admissionView(want), admissionView(got))
		}
		if diff != "" {
			t.Errorf("%s differs between config/default and the chart (-config +chart):\n%s", key, diff)
		}
	}
	// What the views compare is there at all.
	for _, key := range []string{"Deployment/slipway-werfbundle", "Deployment/slipway-webapp", "Deployment/slipway-catalyst",
		"ValidatingAdmissionPolicy/catalyst-ingress", "ValidatingAdmissionPolicyBinding/catalyst-ingress",
		"Service/slipway-webhook-service", "ClusterRoleBinding/slipway-common", "RoleBinding/slipway-common"} {
		if _, ok := kustomized[key]; !ok {
			t.Errorf("config/default has no %s", key)
		}
	}
}

// index keys objects by Kind/name.
func index(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetName()
		// Catalyst's Roles and RoleBindings of one name in its build and deployer namespaces.
		if ns := o.GetNamespace(); ns != "" && ns != configNS {
			key += " in " + ns
		}
		if _, dup := out[key]; dup {
			t.Fatalf("%s twice", key)
		}
		out[key] = o
	}
	return out
}

func kindOf(key string) string { k, _, _ := strings.Cut(key, "/"); return k }

// withoutChartLabels returns labels without Helm's.
func withoutChartLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if !slices.Contains(chartOnlyLabels, k) {
			out[k] = v
		}
	}
	return out
}

// deploymentView is a Deployment as the comparison sees it: Helm's labels, the image's tag (the
// operator's, and the build helpers'), the pull policy and the receiver's port left out, the arguments replaced by the flag values they
// give.
type deploymentViewT struct {
	Namespace string
	Replicas  int32
	Selector  map[string]string
	Labels    map[string]string
	Template  corev1.PodSpec
	Flags     map[string]string
}

func deploymentView(t *testing.T, u *unstructured.Unstructured) deploymentViewT {
	t.Helper()
	var d appsv1.Deployment
	convert(t, u, &d)
	spec := *d.Spec.Template.Spec.DeepCopy()
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			sel := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm.LabelSelector
			sel.MatchLabels = withoutChartLabels(sel.MatchLabels)
		}
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("Deployment %s: %d containers, want the operator alone", d.Name, len(spec.Containers))
	}
	c := &spec.Containers[0]
	c.Image, _, _ = strings.Cut(c.Image, ":")
	c.ImagePullPolicy = ""
	c.Ports = slices.DeleteFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "receiver" })
	flags := flagValues(t, d.Name, c.Args)
	// The build helpers' image is the operator's, tag and all (checked beside): the tag differs.
	if img := flags["catalyst-build-helper-image"]; img != "" {
		flags["catalyst-build-helper-image"], _, _ = strings.Cut(img, ":")
	}
	c.Args = nil
	return deploymentViewT{Namespace: d.Namespace, Replicas: *d.Spec.Replicas, Selector: withoutChartLabels(d.Spec.Selector.MatchLabels),
		Labels: withoutChartLabels(d.Spec.Template.Labels), Template: spec, Flags: flags}
}

// flagValues parses args with the operator's flag set and returns every flag's value, defaults
// included, and the controllers.
func flagValues(t *testing.T, name string, args []string) map[string]string {
	t.Helper()
	fs, flags := command.NewFlagSet("operator", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	if err := command.Parse(fs, expandEnv(args, configNS)); err != nil {
		t.Fatalf("%s: the operator refuses its arguments %q: %v", name, args, err)
	}
	values := map[string]string{"controllers": strings.Join(flags.Options.Controllers, ",")}
	fs.VisitAll(func(f *flag.Flag) { values[f.Name] = f.Value.String() })
	return values
}

type serviceViewT struct {
	Namespace string
	Selector  map[string]string
	Ports     []corev1.ServicePort
}

func serviceView(t *testing.T, u *unstructured.Unstructured) serviceViewT {
	t.Helper()
	var s corev1.Service
	convert(t, u, &s)
	return serviceViewT{Namespace: s.Namespace, Selector: withoutChartLabels(s.Spec.Selector), Ports: s.Spec.Ports}
}

type bindingViewT struct {
	Namespace string
	RoleRef   rbacv1.RoleRef
	Subjects  []string
}

func bindingView(t *testing.T, u *unstructured.Unstructured) bindingViewT {
	t.Helper()
	var b rbacv1.RoleBinding
	convert(t, u, &b)
	var subjects []string
	for _, s := range b.Subjects {
		subjects = append(subjects, fmt.Sprintf("%s %s/%s", s.Kind, s.Namespace, s.Name))
	}
	slices.Sort(subjects)
	return bindingViewT{Namespace: b.Namespace, RoleRef: b.RoleRef, Subjects: subjects}
}

func pdbView(t *testing.T, u *unstructured.Unstructured) policyv1.PodDisruptionBudgetSpec {
	t.Helper()
	var p policyv1.PodDisruptionBudget
	convert(t, u, &p)
	spec := *p.Spec.DeepCopy()
	if spec.Selector != nil {
		spec.Selector.MatchLabels = withoutChartLabels(spec.Selector.MatchLabels)
	}
	return spec
}

// podSecurity returns a Namespace's Pod Security labels.
func podSecurity(u *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for k, v := range u.GetLabels() {
		if strings.HasPrefix(k, "pod-security.kubernetes.io/") {
			out[k] = v
		}
	}
	return out
}

// configExempt and chartExempt are the identities Catalyst's admission policies exempt in config/
// (both install forms) and in the chart's default render into slipway-system (the Deployment
// running Catalyst): the one difference the comparison allows.
const (
	configExempt = "['system:serviceaccount:slipway-system:slipway-catalyst', 'system:serviceaccount:slipway-system:slipway-operator']"
	chartExempt  = "['system:serviceaccount:slipway-system:slipway-catalyst']"
)

// admissionView is an admission policy or binding's spec, as YAML, with config/'s exempt
// identities replaced by those of the chart's default.
func admissionView(u *unstructured.Unstructured) string {
	spec := u.DeepCopy().Object["spec"].(map[string]any)
	conditions, _ := spec["matchConditions"].([]any)
	for _, c := range conditions {
		m := c.(map[string]any)
		m["expression"] = strings.ReplaceAll(m["expression"].(string), configExempt, chartExempt)
	}
	data, err := sigsyaml.Marshal(spec)
	if err != nil {
		return err.Error()
	}
	return string(data)
}
