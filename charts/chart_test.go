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
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
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
	pairs := map[string]string{"../config/webhook/manifests.yaml": "slipway/files/webhook/manifests.yaml",
		"../config/" + config.AdmissionPoliciesFile: "slipway/files/admission/policies.yaml"}
	crds, err := filepath.Glob("../config/crd/bases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range crds {
		pairs[f] = filepath.Join(chartDir, "crds", filepath.Base(f))
	}
	// Each controller's roles (rbac/<controller>/role.yaml) and those it ships unbound
	// (rbac/<controller>/<name>/role.yaml: Catalyst's deployer).
	for _, pattern := range []string{"../config/rbac/*/role.yaml", "../config/rbac/*/*/role.yaml"} {
		roles, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range roles {
			pairs[f] = filepath.Join(chartDir, "files", strings.TrimPrefix(f, "../config/"))
		}
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
	for _, pattern := range []string{"slipway/crds/*.yaml", "slipway/files/rbac/*/role.yaml", "slipway/files/rbac/*/*/role.yaml"} {
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
	// The build namespace's NetworkPolicy and ResourceQuota, as config/ ships them.
	guards, err := config.BuildNamespaceGuards()
	if err != nil {
		t.Fatal(err)
	}
	if len(guards) != 2 {
		t.Errorf("config/ ships %d build namespace guards, want a NetworkPolicy and a ResourceQuota", len(guards))
	}
	for _, want := range guards {
		got := find(t, objs, want.GetKind(), want.GetName())
		if got.GetNamespace() != want.GetNamespace() || !equality.Semantic.DeepEqual(got.Object["spec"], want.Object["spec"]) {
			t.Errorf("%s %s/%s differs from config/manager:\n got %v\nwant %v", want.GetKind(), got.GetNamespace(), got.GetName(), got.Object["spec"], want.Object["spec"])
		}
	}
	// One Deployment per controller by default, each running its own.
	var names []string
	for _, d := range deployments(t, objs) {
		names = append(names, d.Name)
		if got, want := d.Spec.Template.Spec.Containers[0].Args[0], "--controllers="+strings.TrimPrefix(d.Name, "slipway-"); got != want {
			t.Errorf("Deployment %s: first argument %s, want %s", d.Name, got, want)
		}
	}
	var want []string
	for _, c := range controllers {
		want = append(want, "slipway-"+c)
	}
	if slices.Sort(names); !slices.Equal(names, want) {
		t.Errorf("default Deployments %v, want one per controller %v", names, want)
	}
	// The rendered roles carry the generated rules, whatever the templates do to their metadata;
	// the unbound ones too, bound by nothing the chart renders.
	clusterRoles, nsRoles, err := config.Roles(controllers...)
	if err != nil {
		t.Fatal(err)
	}
	unbound, err := config.UnboundRoles(controllers...)
	if err != nil {
		t.Fatal(err)
	}
	if len(unbound) == 0 {
		t.Error("no unbound ClusterRole shipped (slipway-catalyst-deployer)")
	}
	for _, u := range unbound {
		for _, o := range objs {
			if k := o.GetKind(); k == "ClusterRoleBinding" || k == "RoleBinding" {
				if ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name"); ref == u.Name {
					t.Errorf("%s %s binds %s, which ships unbound", k, o.GetName(), u.Name)
				}
			}
		}
	}
	clusterRoles = append(clusterRoles, unbound...)
	for _, want := range clusterRoles {
		got := &rbacv1.ClusterRole{}
		convert(t, find(t, objs, "ClusterRole", want.Name), got)
		if !equality.Semantic.DeepEqual(got.Rules, want.Rules) {
			t.Errorf("ClusterRole %s: rules differ from config/rbac:\n got %+v\nwant %+v", want.Name, got.Rules, want.Rules)
		}
	}
	for _, want := range nsRoles {
		// The operator's namespace is the release's; Catalyst's build and deployer namespaces
		// keep their default names.
		ns := want.Namespace
		if ns == "slipway-system" {
			ns = renderNS
		}
		i := slices.IndexFunc(objs, func(u *unstructured.Unstructured) bool {
			return u.GetKind() == "Role" && u.GetName() == want.Name && u.GetNamespace() == ns
		})
		if i < 0 {
			t.Errorf("no Role %s in %s rendered", want.Name, ns)
			continue
		}
		got := &rbacv1.Role{}
		convert(t, objs[i], got)
		if !equality.Semantic.DeepEqual(got.Rules, want.Rules) {
			t.Errorf("Role %s in %s: rules differ from config/rbac", want.Name, ns)
		}
	}
}

// TestChart_RendersWhatItsValuesAsk renders the chart with several values and checks the objects:
// the controllers decide the RBAC, the webhooks and the flags; cert-manager, the receiver and the
// ServiceMonitor appear when asked for.
func TestChart_RendersWhatItsValuesAsk(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		objs := render(t, "")
		// Every Deployment: its own controller, ServiceAccount and Lease, the shared settings.
		for _, d := range deployments(t, objs) {
			c := d.Spec.Template.Spec.Containers[0]
			system := strings.TrimPrefix(d.Name, "slipway-")
			for _, arg := range []string{"--controllers=" + system, "--leader-elect=true", "--leader-election-id=" + d.Name + ".slipway.dev",
				"--namespace=$(POD_NAMESPACE)", "--metrics-secure=true"} {
				if !slices.Contains(c.Args, arg) {
					t.Errorf("%s args %v: want %s", d.Name, c.Args, arg)
				}
			}
			if sa := d.Spec.Template.Spec.ServiceAccountName; sa != d.Name {
				t.Errorf("%s runs as ServiceAccount %s, want its own, %s", d.Name, sa, d.Name)
			}
			find(t, objs, "ServiceAccount", d.Name)
			if *d.Spec.Replicas != 3 || d.Spec.Template.Spec.Affinity == nil || d.Spec.Template.Spec.Affinity.PodAntiAffinity == nil {
				t.Errorf("%s: want 3 replicas spread by pod anti-affinity, got %d replicas, affinity %+v", d.Name, *d.Spec.Replicas, d.Spec.Template.Spec.Affinity)
			}
			sc := c.SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
				!slices.Contains(sc.Capabilities.Drop, "ALL") || d.Spec.Template.Spec.SecurityContext.RunAsNonRoot == nil {
				t.Errorf("%s: want a restricted security context, got %+v", d.Name, sc)
			}
			// Only the webapp Deployment serves webhooks, only werfbundle's the receiver, only
			// catalyst's builds.
			for prefix, owner := range map[string]string{"--webhook-": "webapp", "--werfbundle-": "werfbundle", "--catalyst-": "catalyst"} {
				if has := slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, prefix) }); has != (system == owner) {
					t.Errorf("%s args %v: %s flags %t, want them on %s only", d.Name, c.Args, prefix, has, owner)
				}
			}
			selects(t, find(t, objs, "Service", d.Name+"-metrics"), d)
			pdb := find(t, objs, "PodDisruptionBudget", d.Name)
			if sel, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels"); !equality.Semantic.DeepEqual(sel, d.Spec.Selector.MatchLabels) {
				t.Errorf("PodDisruptionBudget %s selects %v, want %v", d.Name, sel, d.Spec.Selector.MatchLabels)
			}
		}
		for _, arg := range []string{"--webhook-cert-self-managed=true"} {
			if c := deployment(t, objs, "slipway-webapp").Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, arg) {
				t.Errorf("slipway-webapp args %v: want %s", c.Args, arg)
			}
		}
		for _, arg := range []string{"--werfbundle-webhook-bind-address=", "--werfbundle-allow-cross-namespace=false"} {
			if c := deployment(t, objs, "slipway-werfbundle").Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, arg) {
				t.Errorf("slipway-werfbundle args %v: want %s", c.Args, arg)
			}
		}
		if c := deployment(t, objs, "slipway-catalyst").Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, "--catalyst-build-namespace=slipway-builds") ||
			!slices.Contains(c.Args, "--catalyst-build-helper-image="+c.Image) {
			t.Errorf("slipway-catalyst args %v: want its build namespace, and its own image %s for the build helpers", c.Args, c.Image)
		}
		// The common roles are bound to every ServiceAccount, each controller's to its own alone.
		everyone := []string{"slipway-werfbundle", "slipway-webapp", "slipway-catalyst"}
		for _, name := range []string{"slipway-common", "slipway-werfbundle", "slipway-webapp", "slipway-catalyst", "slipway-catalyst-deployer", "slipway-metrics-reader"} {
			find(t, objs, "ClusterRole", name)
		}
		for kind, bindings := range map[string]map[string][]string{
			"ClusterRoleBinding": {"slipway-common": everyone, "slipway-werfbundle": {"slipway-werfbundle"}, "slipway-webapp": {"slipway-webapp"}, "slipway-catalyst": {"slipway-catalyst"}},
			"RoleBinding": {"slipway-common": everyone, "slipway-werfbundle": {"slipway-werfbundle"}, "slipway-webapp": {"slipway-webapp"},
				"slipway-catalyst": {"slipway-catalyst"}},
		} {
			for name, want := range bindings {
				if got := subjects(t, find(t, objs, kind, name), "slipway"); !slices.Equal(got, want) {
					t.Errorf("%s %s binds %v, want %v", kind, name, got, want)
				}
			}
		}
		for _, name := range []string{"slipway-common", "slipway-werfbundle", "slipway-webapp"} {
			if r := find(t, objs, "Role", name); r.GetNamespace() != "slipway" {
				t.Errorf("Role %s in namespace %q, want the release namespace", name, r.GetNamespace())
			}
		}
		// Catalyst's build Jobs: a Role in the build namespace, nowhere else; its impersonation:
		// a Role in the deployer namespace.
		buildJobsIn(t, objs, "slipway-builds")
		impersonationIn(t, objs, "slipway-catalyst-deployers")
		if has(objs, "ClusterRoleBinding", "slipway-catalyst-deployer") || has(objs, "RoleBinding", "slipway-catalyst-deployer") {
			t.Error("slipway-catalyst-deployer is bound: only Catalyst binds it, in each environment namespace")
		}
		m := find(t, objs, "MutatingWebhookConfiguration", "slipway-mutating-webhook-configuration")
		if ns, _, _ := unstructured.NestedString(m.Object["webhooks"].([]any)[0].(map[string]any), "clientConfig", "service", "namespace"); ns != "slipway" {
			t.Errorf("webhook Service namespace %q, want the release namespace", ns)
		}
		selects(t, find(t, objs, "Service", "slipway-webhook-service"), deployment(t, objs, "slipway-webapp"))
		find(t, objs, "Namespace", "slipway-builds")
		find(t, objs, "Namespace", "slipway-catalyst-deployers")
		for _, kind := range []string{"Certificate", "Issuer", "ServiceMonitor"} {
			if has(objs, kind, "") {
				t.Errorf("unexpected %s by default", kind)
			}
		}
		for _, name := range []string{"slipway-werfbundle-receiver", "slipway-operator-metrics"} {
			if has(objs, "Service", name) {
				t.Errorf("Service %s rendered by default", name)
			}
		}
		if has(objs, "Deployment", "slipway-operator") || has(objs, "ServiceAccount", "slipway-operator") {
			t.Error("the single Deployment's objects rendered by default")
		}
		exemptsOnly(t, objs, "system:serviceaccount:slipway:slipway-catalyst")
	})

	t.Run("single Deployment", func(t *testing.T) {
		objs := render(t, "singleDeployment: true\nserviceAccount: {name: ops}\n")
		ds := deployments(t, objs)
		if len(ds) != 1 || ds[0].Name != "slipway-operator" {
			t.Fatalf("Deployments %d, want the one slipway-operator", len(ds))
		}
		d := ds[0]
		c := d.Spec.Template.Spec.Containers[0]
		for _, arg := range []string{"--controllers=werfbundle,webapp,catalyst", "--leader-election-id=slipway-operator.slipway.dev",
			"--webhook-cert-self-managed=true", "--werfbundle-webhook-bind-address=", "--catalyst-build-namespace=slipway-builds"} {
			if !slices.Contains(c.Args, arg) {
				t.Errorf("args %v: want %s", c.Args, arg)
			}
		}
		if d.Spec.Template.Spec.ServiceAccountName != "ops" {
			t.Errorf("runs as %s, want serviceAccount.name", d.Spec.Template.Spec.ServiceAccountName)
		}
		find(t, objs, "ServiceAccount", "ops")
		for _, o := range objs {
			if k := o.GetKind(); k == "ClusterRoleBinding" || k == "RoleBinding" {
				if got := subjects(t, o, "slipway"); !slices.Equal(got, []string{"ops"}) {
					t.Errorf("%s %s binds %v, want the one ServiceAccount", k, o.GetName(), got)
				}
			}
		}
		for _, name := range []string{"slipway-webhook-service", "slipway-operator-metrics"} {
			selects(t, find(t, objs, "Service", name), d)
		}
		find(t, objs, "PodDisruptionBudget", "slipway-operator")
		exemptsOnly(t, objs, "system:serviceaccount:slipway:ops")
		for _, name := range []string{"slipway-werfbundle", "slipway-webapp", "slipway-catalyst"} {
			if has(objs, "Deployment", name) || has(objs, "ServiceAccount", name) {
				t.Errorf("%s rendered in the single-Deployment form", name)
			}
		}
	})

	t.Run("build namespace", func(t *testing.T) {
		objs := render(t, "catalyst: {buildNamespace: {name: ci-builds, quota: {pods: \"4\"}, "+
			"egress: [{to: [{ipBlock: {cidr: 203.0.113.10/32}}], ports: [{protocol: TCP, port: 443}]}]}}\n")
		if c := deployment(t, objs, "slipway-catalyst").Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, "--catalyst-build-namespace=ci-builds") {
			t.Errorf("slipway-catalyst args %v: want its build namespace", c.Args)
		}
		find(t, objs, "Namespace", "ci-builds")
		buildJobsIn(t, objs, "ci-builds")
		// The egress rules replace the default's, after DNS; the quota's values override.
		np := &networkingv1.NetworkPolicy{}
		convert(t, find(t, objs, "NetworkPolicy", "catalyst-builds"), np)
		if np.Namespace != "ci-builds" || len(np.Spec.Egress) != 2 || np.Spec.Egress[1].To[0].IPBlock == nil ||
			np.Spec.Egress[1].To[0].IPBlock.CIDR != "203.0.113.10/32" || len(np.Spec.Egress[0].Ports) != 2 || np.Spec.Egress[0].Ports[0].Port.IntValue() != 53 {
			t.Errorf("NetworkPolicy %s/catalyst-builds egress %+v, want DNS and 203.0.113.10/32:443", np.Namespace, np.Spec.Egress)
		}
		q := &corev1.ResourceQuota{}
		convert(t, find(t, objs, "ResourceQuota", "catalyst-builds"), q)
		if q.Namespace != "ci-builds" || q.Spec.Hard.Pods().String() != "4" || q.Spec.Hard.Name(corev1.ResourceRequestsCPU, resource.DecimalSI).IsZero() {
			t.Errorf("ResourceQuota %s/catalyst-builds hard %v, want pods 4 beside the defaults", q.Namespace, q.Spec.Hard)
		}
		for _, o := range objs {
			if o.GetNamespace() == "slipway-builds" || (o.GetKind() == "Namespace" && o.GetName() == "slipway-builds") {
				t.Errorf("%s %s in slipway-builds, the default the value replaced", o.GetKind(), o.GetName())
			}
		}
	})

	t.Run("deployer namespace", func(t *testing.T) {
		objs := render(t, "catalyst: {deployerNamespace: {name: ci-deployers}}\n")
		if c := deployment(t, objs, "slipway-catalyst").Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, "--catalyst-deployer-namespace=ci-deployers") {
			t.Errorf("slipway-catalyst args %v: want its deployer namespace", c.Args)
		}
		ns := find(t, objs, "Namespace", "ci-deployers")
		if got := ns.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "restricted" {
			t.Errorf("Namespace ci-deployers enforces %q, want restricted: nothing runs there", got)
		}
		impersonationIn(t, objs, "ci-deployers")
		for _, o := range objs {
			if o.GetNamespace() == "slipway-catalyst-deployers" || (o.GetKind() == "Namespace" && o.GetName() == "slipway-catalyst-deployers") {
				t.Errorf("%s %s in slipway-catalyst-deployers, the default the value replaced", o.GetKind(), o.GetName())
			}
		}
	})

	t.Run("werfbundle only with the receiver", func(t *testing.T) {
		objs := render(t, "controllers: [werfbundle]\nreceiver: {enabled: true}\nwerfbundle: {allowCrossNamespace: true}\n")
		if ds := deployments(t, objs); len(ds) != 1 {
			t.Errorf("%d Deployments, want werfbundle's alone", len(ds))
		}
		d := deployment(t, objs, "slipway-werfbundle")
		c := d.Spec.Template.Spec.Containers[0]
		for _, arg := range []string{"--controllers=werfbundle", "--werfbundle-webhook-bind-address=:9292", "--werfbundle-allow-cross-namespace=true"} {
			if !slices.Contains(c.Args, arg) {
				t.Errorf("args %v: want %s", c.Args, arg)
			}
		}
		if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--catalyst-") }) {
			t.Errorf("args %v: Catalyst flags without the Catalyst controller", c.Args)
		}
		if has(objs, "ValidatingAdmissionPolicy", "") || has(objs, "ValidatingAdmissionPolicyBinding", "") {
			t.Error("Catalyst's admission policies without the Catalyst controller")
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
		selects(t, svc, d)
		if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "receiver" && p.ContainerPort == 9292 }) {
			t.Errorf("ports %v: want the receiver's", c.Ports)
		}
	})

	t.Run("cert-manager and ServiceMonitor", func(t *testing.T) {
		objs := render(t, "webhook: {certManager: {enabled: true}}\nmetrics: {serviceMonitor: {enabled: true}}\n")
		c := deployment(t, objs, "slipway-webapp").Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--webhook-cert-self-managed=false") {
			t.Errorf("args %v: want the operator to leave the certificate to cert-manager", c.Args)
		}
		cert := find(t, objs, "Certificate", "slipway-webhook-cert")
		if name, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName"); name != "slipway-webhook-cert" {
			t.Errorf("Certificate secretName %q, want the Secret the pods mount", name)
		}
		find(t, objs, "Issuer", "slipway-selfsigned")
		sm := find(t, objs, "ServiceMonitor", "slipway-operator")
		// It selects every Deployment's metrics Service.
		if sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels"); sel["app.kubernetes.io/component"] != "metrics" {
			t.Errorf("ServiceMonitor selects %v", sel)
		}
		for _, name := range []string{"slipway-werfbundle-metrics", "slipway-webapp-metrics", "slipway-catalyst-metrics"} {
			if l := find(t, objs, "Service", name).GetLabels(); l["app.kubernetes.io/component"] != "metrics" || l["app.kubernetes.io/instance"] != "slipway" {
				t.Errorf("Service %s labels %v: the ServiceMonitor does not select it", name, l)
			}
		}
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
		for _, values := range []string{"controllers: [nope]\n", "controllers: []\n", "replicas: 0\n", "podAntiAffinity: always\n",
			"singleDeployment: yes please\n"} {
			if _, err := renderErr(t, values); err == nil || !strings.Contains(err.Error(), "schema") {
				t.Errorf("values %q: want a schema error, got %v", values, err)
			}
		}
	})
}

// buildJobsIn checks that Catalyst's rights on Jobs are a Role in the build namespace ns, bound
// there to Catalyst's ServiceAccount, and that no ClusterRole of the chart grants Jobs.
// impersonationIn checks that Catalyst may impersonate the ServiceAccounts of the deployer
// namespace ns, through a Role there bound to its ServiceAccount, and that no ClusterRole grants
// impersonation.
func impersonationIn(t *testing.T, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	impersonates := func(p rbacv1.PolicyRule) bool { return slices.Contains(p.Verbs, "impersonate") }
	var role, binding *unstructured.Unstructured
	for _, o := range objs {
		if o.GetName() == "slipway-catalyst" && o.GetNamespace() == ns {
			switch o.GetKind() {
			case "Role":
				role = o
			case "RoleBinding":
				binding = o
			}
		}
		if o.GetKind() == "ClusterRole" {
			var cr rbacv1.ClusterRole
			convert(t, o, &cr)
			if slices.ContainsFunc(cr.Rules, impersonates) {
				t.Errorf("ClusterRole %s grants impersonation: only the Role in the deployer namespace may", o.GetName())
			}
		}
	}
	if role == nil || binding == nil {
		t.Fatalf("no Role or RoleBinding slipway-catalyst in the deployer namespace %s", ns)
	}
	var r rbacv1.Role
	convert(t, role, &r)
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}}}
	if !equality.Semantic.DeepEqual(r.Rules, want) {
		t.Errorf("Role slipway-catalyst in %s: rules %+v, want %+v", ns, r.Rules, want)
	}
	if got := subjects(t, binding, "slipway"); !slices.Equal(got, []string{"slipway-catalyst"}) {
		t.Errorf("RoleBinding slipway-catalyst in %s binds %v, want Catalyst's ServiceAccount", ns, got)
	}
}

func buildJobsIn(t *testing.T, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	r := find(t, objs, "Role", "slipway-catalyst")
	var role rbacv1.Role
	convert(t, r, &role)
	if role.Namespace != ns || !slices.ContainsFunc(role.Rules, func(p rbacv1.PolicyRule) bool {
		return slices.Contains(p.APIGroups, "batch") && slices.Contains(p.Resources, "jobs") && slices.Contains(p.Verbs, "create")
	}) {
		t.Errorf("Role slipway-catalyst in %q with rules %+v, want the build Jobs' rules in %s", role.Namespace, role.Rules, ns)
	}
	if b := find(t, objs, "RoleBinding", "slipway-catalyst"); b.GetNamespace() != ns || !slices.Equal(subjects(t, b, "slipway"), []string{"slipway-catalyst"}) {
		t.Errorf("RoleBinding slipway-catalyst in %q binds %v, want Catalyst's ServiceAccount in %s", b.GetNamespace(), subjects(t, b, "slipway"), ns)
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		var cr rbacv1.ClusterRole
		convert(t, o, &cr)
		for _, p := range cr.Rules {
			if slices.Contains(p.APIGroups, "batch") && slices.Contains(p.Resources, "jobs") && o.GetName() != "slipway-werfbundle" && o.GetName() != "slipway-catalyst-deployer" {
				t.Errorf("ClusterRole %s grants Jobs %v: only WerfBundle's may (the deployer's is bound in one namespace)", o.GetName(), p.Verbs)
			}
		}
	}
}

// TestChart_Lints runs helm lint --strict on the chart with its defaults and with every optional
// part on.
func TestChart_Lints(t *testing.T) {
	for _, values := range []string{"", "webhook: {certManager: {enabled: true}}\nmetrics: {serviceMonitor: {enabled: true}}\nreceiver: {enabled: true}\n",
		"singleDeployment: true\nreceiver: {enabled: true}\n"} {
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
	return renderIn(t, values, "slipway")
}

// renderIn renders the chart as release "slipway" in namespace ns.
func renderIn(t testing.TB, values, ns string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderNamespaceErr(t, values, ns)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func renderErr(t testing.TB, values string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return renderNamespaceErr(t, values, "slipway")
}

func renderNamespaceErr(t testing.TB, values, ns string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	in := action.NewInstall(action.NewConfiguration())
	in.DryRunStrategy = action.DryRunClient
	in.Replace = true
	in.ReleaseName, in.Namespace = "slipway", ns
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

// deployment returns the Deployment named name.
func deployment(t testing.TB, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	convert(t, find(t, objs, "Deployment", name), d)
	return d
}

// deployments returns every Deployment of objs, in order.
func deployments(t testing.TB, objs []*unstructured.Unstructured) []*appsv1.Deployment {
	t.Helper()
	var out []*appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			convert(t, o, d)
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		t.Fatal("no Deployment rendered")
	}
	return out
}

// selects fails unless the Service svc selects exactly d's pods: its selector is d's.
func selects(t testing.TB, svc *unstructured.Unstructured, d *appsv1.Deployment) {
	t.Helper()
	sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	if !equality.Semantic.DeepEqual(sel, d.Spec.Selector.MatchLabels) {
		t.Errorf("Service %s selects %v, want the pods of %s (%v)", svc.GetName(), sel, d.Name, d.Spec.Selector.MatchLabels)
	}
}

// subjects returns the ServiceAccounts a binding binds, in order, failing on any other subject
// and on a ServiceAccount outside ns.
func subjects(t testing.TB, binding *unstructured.Unstructured, ns string) []string {
	t.Helper()
	var b rbacv1.RoleBinding
	convert(t, binding, &b)
	var out []string
	for _, s := range b.Subjects {
		if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != ns {
			t.Errorf("%s %s binds %+v, want ServiceAccounts of %s", binding.GetKind(), binding.GetName(), s, ns)
		}
		out = append(out, s.Name)
	}
	return out
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

// exemptsOnly checks every one of Catalyst's admission policies is rendered with its binding and
// exempts exactly the given user, the ServiceAccount running Catalyst.
func exemptsOnly(t *testing.T, objs []*unstructured.Unstructured, user string) {
	t.Helper()
	policies, _, err := config.AdmissionPolicies()
	if err != nil {
		t.Fatal(err)
	}
	want := "!(request.userInfo.username in ['" + user + "'])"
	for _, p := range policies {
		got := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		convert(t, find(t, objs, "ValidatingAdmissionPolicy", p.Name), got)
		find(t, objs, "ValidatingAdmissionPolicyBinding", p.Name)
		if len(got.Spec.MatchConditions) == 0 || got.Spec.MatchConditions[0].Expression != want {
			t.Errorf("ValidatingAdmissionPolicy %s: first match condition %+v, want %s", p.Name, got.Spec.MatchConditions, want)
		}
	}
}
