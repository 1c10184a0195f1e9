// Tests of the slipway Helm chart (charts/slipway): its generated parts agree with config/, and
// it renders what its values ask for. install_test.go installs and upgrades it on a control plane.
package charts_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/config"
)

const chartDir = "slipway"

// TestChart_MatchesConfig fails when the chart's generated parts (crds/, files/) differ from the
// controller-gen output in config/: `make manifests` copies them, `make verify` runs this test.
func TestChart_MatchesConfig(t *testing.T) {
	pairs := map[string]string{"../config/webhook/manifests.yaml": "slipway/files/webhook/manifests.yaml"}
	crds, err := filepath.Glob("../config/crd/bases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range crds {
		pairs[f] = filepath.Join(chartDir, "crds", filepath.Base(f))
	}
	roles, err := filepath.Glob("../config/rbac/*/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range roles {
		pairs[f] = filepath.Join(chartDir, "files", "rbac", filepath.Base(filepath.Dir(f)), "role.yaml")
	}
	for src, dst := range pairs {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Errorf("%s: %v (run make manifests)", dst, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s: run make manifests", dst, src)
		}
	}
	// Nothing in the chart that config/ no longer generates.
	for _, pattern := range []string{"slipway/crds/*.yaml", "slipway/files/rbac/*/role.yaml"} {
		shipped, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range shipped {
			if !slices.Contains(mapValues(pairs), f) {
				t.Errorf("%s: not generated in config/ (run make manifests)", f)
			}
		}
	}

	// The chart's default controllers, and those its schema accepts, are every controller with a
	// role.
	controllers, err := config.Controllers()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Controllers struct {
				Items struct {
					Enum []string `json:"enum"`
				} `json:"items"`
			} `json:"controllers"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	if enum := slices.Sorted(slices.Values(schema.Properties.Controllers.Items.Enum)); !slices.Equal(enum, controllers) {
		t.Errorf("values.schema.json accepts controllers %v, config/rbac has roles for %v", enum, controllers)
	}
	objs := render(t, "")
	if got := deployment(t, objs).Spec.Template.Spec.Containers[0].Args[0]; got != "--controllers=werfbundle,webapp,catalyst" {
		t.Errorf("default --controllers: got %s", got)
	}
	// The rendered roles carry the generated rules, whatever the templates do to their metadata.
	clusterRoles, nsRoles, err := config.Roles(controllers...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range clusterRoles {
		got := &rbacv1.ClusterRole{}
		convert(t, find(t, objs, "ClusterRole", want.Name), got)
		if !equality.Semantic.DeepEqual(got.Rules, want.Rules) {
			t.Errorf("ClusterRole %s: rules differ from config/rbac:\n got %+v\nwant %+v", want.Name, got.Rules, want.Rules)
		}
	}
	for _, want := range nsRoles {
		got := &rbacv1.Role{}
		convert(t, find(t, objs, "Role", want.Name), got)
		if !equality.Semantic.DeepEqual(got.Rules, want.Rules) {
			t.Errorf("Role %s: rules differ from config/rbac", want.Name)
		}
	}
}

// TestChart_RendersWhatItsValuesAsk renders the chart with several values and checks the objects:
// the controllers decide the RBAC, the webhooks and the flags; cert-manager, the receiver and the
// ServiceMonitor appear when asked for.
func TestChart_RendersWhatItsValuesAsk(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		objs := render(t, "")
		d := deployment(t, objs)
		c := d.Spec.Template.Spec.Containers[0]
		for _, arg := range []string{"--leader-elect=true", "--namespace=$(POD_NAMESPACE)", "--webhook-cert-self-managed=true",
			"--werfbundle-webhook-bind-address=", "--werfbundle-allow-cross-namespace=false",
			"--catalyst-build-namespace=slipway-builds", "--metrics-secure=true"} {
			if !slices.Contains(c.Args, arg) {
				t.Errorf("args %v: want %s", c.Args, arg)
			}
		}
		if *d.Spec.Replicas != 3 || d.Spec.Template.Spec.Affinity == nil || d.Spec.Template.Spec.Affinity.PodAntiAffinity == nil {
			t.Errorf("want 3 replicas spread by pod anti-affinity, got %d replicas, affinity %+v", *d.Spec.Replicas, d.Spec.Template.Spec.Affinity)
		}
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
			!slices.Contains(sc.Capabilities.Drop, "ALL") || d.Spec.Template.Spec.SecurityContext.RunAsNonRoot == nil {
			t.Errorf("want a restricted security context, got %+v", sc)
		}
		for _, name := range []string{"slipway-common", "slipway-werfbundle", "slipway-webapp", "slipway-catalyst", "slipway-metrics-reader"} {
			find(t, objs, "ClusterRole", name)
		}
		for _, name := range []string{"slipway-common", "slipway-werfbundle"} {
			if r := find(t, objs, "Role", name); r.GetNamespace() != "slipway" {
				t.Errorf("Role %s in namespace %q, want the release namespace", name, r.GetNamespace())
			}
			find(t, objs, "RoleBinding", name)
		}
		m := find(t, objs, "MutatingWebhookConfiguration", "slipway-mutating-webhook-configuration")
		if ns, _, _ := unstructured.NestedString(m.Object["webhooks"].([]any)[0].(map[string]any), "clientConfig", "service", "namespace"); ns != "slipway" {
			t.Errorf("webhook Service namespace %q, want the release namespace", ns)
		}
		find(t, objs, "Service", "slipway-webhook-service")
		find(t, objs, "Service", "slipway-operator-metrics")
		find(t, objs, "Namespace", "slipway-builds")
		find(t, objs, "PodDisruptionBudget", "slipway-operator")
		for _, kind := range []string{"Certificate", "Issuer", "ServiceMonitor"} {
			if has(objs, kind, "") {
				t.Errorf("unexpected %s by default", kind)
			}
		}
		if has(objs, "Service", "slipway-werfbundle-receiver") {
			t.Error("receiver Service rendered while the receiver is off")
		}
	})

	t.Run("werfbundle only with the receiver", func(t *testing.T) {
		objs := render(t, "controllers: [werfbundle]\nreceiver: {enabled: true}\nwerfbundle: {allowCrossNamespace: true}\n")
		c := deployment(t, objs).Spec.Template.Spec.Containers[0]
		for _, arg := range []string{"--controllers=werfbundle", "--werfbundle-webhook-bind-address=:9292", "--werfbundle-allow-cross-namespace=true"} {
			if !slices.Contains(c.Args, arg) {
				t.Errorf("args %v: want %s", c.Args, arg)
			}
		}
		if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--catalyst-") }) {
			t.Errorf("args %v: Catalyst flags without the Catalyst controller", c.Args)
		}
		find(t, objs, "ClusterRole", "slipway-werfbundle")
		for _, name := range []string{"slipway-webapp", "slipway-catalyst"} {
			if has(objs, "ClusterRole", name) || has(objs, "ClusterRoleBinding", name) {
				t.Errorf("%s installed without its controller", name)
			}
		}
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Namespace"} {
			if has(objs, kind, "") {
				t.Errorf("%s rendered without the controller that needs it", kind)
			}
		}
		svc := find(t, objs, "Service", "slipway-werfbundle-receiver")
		if port, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports"); len(port) != 1 || port[0].(map[string]any)["targetPort"] != "receiver" {
			t.Errorf("receiver Service ports %v, want the receiver port", port)
		}
	})

	t.Run("cert-manager and ServiceMonitor", func(t *testing.T) {
		objs := render(t, "webhook: {certManager: {enabled: true}}\nmetrics: {serviceMonitor: {enabled: true}}\n")
		c := deployment(t, objs).Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--webhook-cert-self-managed=false") {
			t.Errorf("args %v: want the operator to leave the certificate to cert-manager", c.Args)
		}
		cert := find(t, objs, "Certificate", "slipway-webhook-cert")
		if name, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName"); name != "slipway-webhook-cert" {
			t.Errorf("Certificate secretName %q, want the Secret the pods mount", name)
		}
		find(t, objs, "Issuer", "slipway-selfsigned")
		find(t, objs, "ServiceMonitor", "slipway-operator")
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			w := find(t, objs, kind, "")
			if got := w.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "slipway/slipway-webhook-cert" {
				t.Errorf("%s: inject-ca-from %q", kind, got)
			}
		}
	})

	t.Run("one replica", func(t *testing.T) {
		if objs := render(t, "replicas: 1\n"); has(objs, "PodDisruptionBudget", "") {
			t.Error("a PodDisruptionBudget for a single replica would block every node drain")
		}
	})

	t.Run("values the schema refuses", func(t *testing.T) {
		for _, values := range []string{"controllers: [nope]\n", "controllers: []\n", "replicas: 0\n", "podAntiAffinity: always\n"} {
			if _, err := renderErr(t, values); err == nil || !strings.Contains(err.Error(), "schema") {
				t.Errorf("values %q: want a schema error, got %v", values, err)
			}
		}
	})
}

// TestChart_Lints runs helm lint --strict on the chart with its defaults and with every optional
// part on.
func TestChart_Lints(t *testing.T) {
	for _, values := range []string{"", "webhook: {certManager: {enabled: true}}\nmetrics: {serviceMonitor: {enabled: true}}\nreceiver: {enabled: true}\n"} {
		l := action.NewLint()
		l.Strict, l.Namespace = true, "slipway"
		res := l.Run([]string{chartDir}, parseValues(t, values))
		for _, err := range res.Errors {
			t.Errorf("values %q: %v", values, err)
		}
		for _, m := range res.Messages {
			t.Logf("values %q: %s", values, m)
		}
	}
}

func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func parseValues(t testing.TB, values string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if err := sigsyaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

// render renders the chart as `helm template` does (release "slipway" in namespace "slipway").
func render(t testing.TB, values string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderErr(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func renderErr(t testing.TB, values string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	in := action.NewInstall(action.NewConfiguration())
	in.DryRunStrategy = action.DryRunClient
	in.Replace = true
	in.ReleaseName, in.Namespace = "slipway", "slipway"
	r, err := in.Run(loadChart(t), parseValues(t, values))
	if err != nil {
		return nil, err
	}
	return manifestObjects(t, r.(*release.Release).Manifest), nil
}

// manifestObjects decodes a rendered manifest strictly: a key written twice is an error.
func manifestObjects(t testing.TB, manifest string) []*unstructured.Unstructured {
	t.Helper()
	r := yaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("reading the rendered manifest: %v", err)
		}
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if err := sigsyaml.UnmarshalStrict(doc, &u.Object); err != nil {
			t.Fatalf("decoding the rendered manifest: %v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// has reports whether objs hold an object of kind named name (any name when empty).
func has(objs []*unstructured.Unstructured, kind, name string) bool {
	return slices.ContainsFunc(objs, func(u *unstructured.Unstructured) bool {
		return u.GetKind() == kind && (name == "" || u.GetName() == name)
	})
}

func find(t testing.TB, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	i := slices.IndexFunc(objs, func(u *unstructured.Unstructured) bool {
		return u.GetKind() == kind && (name == "" || u.GetName() == name)
	})
	if i < 0 {
		t.Fatalf("no %s %s rendered", kind, name)
	}
	return objs[i]
}

func deployment(t testing.TB, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	convert(t, find(t, objs, "Deployment", "slipway-operator"), d)
	return d
}

func convert(t testing.TB, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
