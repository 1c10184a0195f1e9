package deploy_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

const (
	manifestType  = catalystv1alpha1.DeploymentTypeManifest
	kustomizeType = catalystv1alpha1.DeploymentTypeKustomize
)

// extraManifests is a multi-document file in a subdirectory: a ConfigMap and a Secret.
var extraManifests = gittest.Files{"deploy/ingress.yaml": []byte(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: app}
spec:
  rules:
  - host: app.example.dev
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}]}
`), "deploy/config/extra.yaml": []byte(`# settings
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
---
apiVersion: v1
kind: Secret
metadata: {name: credentials}
stringData: {password: s3cret}
---
# an empty document
`)}

func TestManifest_AppliesThenPrunesWhatTheNextRevisionDrops(t *testing.T) {
	f := newFixture(t)
	src := f.commit(gittest.Merge(gittest.Manifests("deploy"), extraManifests))
	req := f.request(manifestType, src, "deploy")

	res := f.deploy(req)
	if res.Revision != "1" {
		t.Errorf("revision %q, want 1", res.Revision)
	}
	want := []string{"ConfigMap/settings", "Deployment.apps/app", "Ingress.networking.k8s.io/app", "Secret/credentials", "Service/app"}
	if got := refNames(res.Objects); !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
	var d appsv1.Deployment
	f.get("app", &d)
	f.checkInjected(&d, testImage.String())
	if d.Annotations[deploy.ReleaseAnnotation] != "pr-1" {
		t.Errorf("annotations %v lack %s=pr-1", d.Annotations, deploy.ReleaseAnnotation)
	}
	if d.Spec.Selector.MatchLabels["catalyst.dev/environment"] != "" {
		t.Error("the selector was changed")
	}
	var settings corev1.ConfigMap
	f.get("settings", &settings)
	var creds corev1.Secret
	f.get("credentials", &creds)
	for _, o := range []client.Object{&settings, &creds} {
		if o.GetLabels()["catalyst.dev/project"] != "app" {
			t.Errorf("%s labels %v lack catalyst.dev/project=app", o.GetName(), o.GetLabels())
		}
	}
	var ing networkingv1.Ingress
	f.get("app", &ing)
	if h := ing.Spec.Rules[0].Host; h != "pr-1.preview.example.dev" {
		t.Errorf("Ingress host %q, want the environment's", h)
	}
	if inv := f.inventory(); len(inv) != 5 {
		t.Errorf("inventory %v, want 5 objects", inv)
	}

	// The next commit drops the ConfigMap and the Secret and changes the Service.
	src = f.commit(gittest.Files{
		"deploy/config/extra.yaml": gittest.Delete,
		"deploy/ingress.yaml":      gittest.Delete,
		"deploy/service.yaml": []byte(`apiVersion: v1
kind: Service
metadata: {name: app}
spec:
  selector: {app.kubernetes.io/name: app}
  ports: [{name: http, port: 8080, targetPort: http}]
`),
	})
	req.Source = src
	res = f.deploy(req)
	if res.Revision != "2" {
		t.Errorf("revision %q, want 2", res.Revision)
	}
	f.gone("settings", &corev1.ConfigMap{})
	f.gone("credentials", &corev1.Secret{})
	f.gone("app", &networkingv1.Ingress{})
	var svc corev1.Service
	f.get("app", &svc)
	if svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("Service port %d, want 8080", svc.Spec.Ports[0].Port)
	}
	if inv := f.inventory(); !slices.Equal(inv, []string{"Deployment/app", "Service/app"}) {
		t.Errorf("inventory %v, want the Deployment and the Service", inv)
	}
}

// inventory lists "Kind/name" of the objects in the release's inventory.
func (f *fixture) inventory() []string {
	f.t.Helper()
	var cm corev1.ConfigMap
	f.get(deploy.InventoryName("pr-1"), &cm)
	var refs []deploy.ObjectRef
	if err := json.Unmarshal([]byte(cm.Data[deploy.InventoryKeyObjects]), &refs); err != nil {
		f.t.Fatal(err)
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Kind + "/" + r.Name
	}
	slices.Sort(out)
	return out
}

func TestManifest_RefusesObjectsOutsideTheNamespace(t *testing.T) {
	for _, tc := range []struct {
		name, doc, wantInMsg string
	}{
		{"cluster-scoped", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: escape}\n",
			"ClusterRole.rbac.authorization.k8s.io/escape (deploy/zz.yaml, document 1) is cluster-scoped"},
		{"namespace", "apiVersion: v1\nkind: Namespace\nmetadata: {name: elsewhere}\n",
			"Namespace/elsewhere (deploy/zz.yaml, document 1) is cluster-scoped"},
		{"foreign namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: kube-system}\n",
			"ConfigMap/x (deploy/zz.yaml, document 1) is for namespace kube-system"},
		{"unknown kind", "apiVersion: example.dev/v1\nkind: Widget\nmetadata: {name: w}\n",
			"Widget.example.dev/w (deploy/zz.yaml, document 1) is of kind Widget of apiVersion example.dev/v1, which the cluster does not serve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			src := f.commit(gittest.Merge(gittest.Manifests("deploy"), gittest.Files{"deploy/zz.yaml": []byte(tc.doc)}))
			err := f.deployFails(f.request(manifestType, src, "deploy"), deploy.ErrRefusedObject)
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("message %q lacks %q", err, tc.wantInMsg)
			}
			if deploy.Reason(err) != catalystv1alpha1.ObjectRefusedReason || !deploy.Stalled(err) {
				t.Errorf("reason %s stalled %v", deploy.Reason(err), deploy.Stalled(err))
			}
			f.gone("app", &appsv1.Deployment{})
			f.gone(deploy.InventoryName("pr-1"), &corev1.ConfigMap{})
			if err := f.c.Get(f.ctx, client.ObjectKey{Name: "escape"}, &rbacv1.ClusterRole{}); err == nil {
				t.Error("the ClusterRole was created")
			}
		})
	}
}

func TestManifest_Errors(t *testing.T) {
	f := newFixture(t)
	src := f.commit(gittest.Merge(gittest.Manifests("deploy"), gittest.Files{
		"broken/ok.yaml":                []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n"),
		"broken/bad.yaml":               []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [unclosed\n"),
		"nokind/x.yaml":                 []byte("apiVersion: v1\nmetadata: {name: a}\n"),
		"docs/README.md":                []byte("no manifests here\n"),
		"secret/secret.yaml":            []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: not-base64!}\n"),
		"kustomized/kustomization.yaml": []byte("resources: [cm.yaml]\n"),
		"badtype/cm.yaml":               []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: [1]}\n"),
	}))
	for _, tc := range []struct {
		path      string
		want      error
		wantInMsg string
		notInMsg  string
	}{
		{"missing", deploy.ErrPathNotFound, `"missing" does not exist`, ""},
		{"docs", deploy.ErrPathNotFound, `no *.yaml, *.yml or *.json files under "docs"`, ""},
		{"broken", deploy.ErrInvalidManifest, "broken/bad.yaml, document 2", ""},
		{"nokind", deploy.ErrInvalidManifest, "nokind/x.yaml, document 1: no kind", ""},
		{"kustomized", deploy.ErrInvalidManifest, "kustomized/kustomization.yaml is a kustomization; use deployment type kustomize", ""},
		{"badtype", deploy.ErrApplyRejected, "ConfigMap/c", ""},
		{"secret", deploy.ErrApplyRejected, "Secret/s", "not-base64"},
		{"../outside", deploy.ErrInvalidRequest, "leaves the repository", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			err := f.deployFails(f.request(manifestType, src, tc.path), tc.want)
			t.Log(err)
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("message %q lacks %q", err, tc.wantInMsg)
			}
			if tc.notInMsg != "" && strings.Contains(err.Error(), tc.notInMsg) {
				t.Errorf("message %q shows the Secret's data", err)
			}
		})
	}
}

func TestKustomize_BuildsTheOverlayAndInjects(t *testing.T) {
	f := newFixture(t)
	src := f.commit(gittest.Kustomization("deploy/kustomize"))
	res := f.deploy(f.request(kustomizeType, src, "deploy/kustomize/overlays/preview"))
	if got, want := refNames(res.Objects), []string{"Deployment.apps/app", "Service/app"}; !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
	var d appsv1.Deployment
	f.get("app", &d)
	// The overlay's images entry turned app into app:latest; the injection replaces it.
	f.checkInjected(&d, testImage.String())
	if d.Labels["app.kubernetes.io/part-of"] != "catalyst-sample" {
		t.Errorf("labels %v lack the overlay's app.kubernetes.io/part-of", d.Labels)
	}
	if d.Namespace != f.ns {
		t.Errorf("namespace %s", d.Namespace)
	}
	if inv := f.inventory(); !slices.Equal(inv, []string{"Deployment/app", "Service/app"}) {
		t.Errorf("inventory %v", inv)
	}
}

func TestKustomize_RefusesRemoteBasesAndReportsBuildErrors(t *testing.T) {
	f := newFixture(t)
	src := f.commit(gittest.Merge(gittest.Kustomization("deploy/kustomize"), gittest.Files{
		"deploy/remote/kustomization.yaml":     []byte("resources: [../kustomize/base, mid]\n"),
		"deploy/remote/mid/kustomization.yaml": []byte("resources: ['https://github.com/org/repo//deploy?ref=v1']\n"),
		"deploy/remotefile/kustomization.yaml": []byte("resources: [../kustomize/base]\npatches: [{path: 'https://example.dev/patch.yaml'}]\n"),
		"deploy/missing/kustomization.yaml":    []byte("resources: [nothere.yaml]\n"),
		"deploy/plain/cm.yaml":                 []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"),
	}))
	for _, tc := range []struct {
		path      string
		want      error
		wantInMsg string
	}{
		{"deploy/remote", deploy.ErrKustomizeBuild, `deploy/remote/mid/kustomization.yaml: resources[0] names "https://github.com/org/repo//deploy?ref=v1", a URL or a remote repository`},
		{"deploy/remotefile", deploy.ErrKustomizeBuild, `deploy/remotefile/kustomization.yaml: patches[0].path names "https://example.dev/patch.yaml"`},
		{"deploy/missing", deploy.ErrKustomizeBuild, "nothere.yaml"},
		{"deploy/plain", deploy.ErrPathNotFound, "no kustomization.yaml"},
		{"deploy/none", deploy.ErrPathNotFound, "does not exist"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			err := f.deployFails(f.request(kustomizeType, src, tc.path), tc.want)
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("message %q lacks %q", err, tc.wantInMsg)
			}
		})
	}
}

func TestUninstall_ManifestRemovesObjectsAndInventory(t *testing.T) {
	f := newFixture(t)
	f.deploy(f.request(manifestType, f.commit(gittest.Merge(gittest.Manifests("deploy"), extraManifests)), "deploy"))
	// An object the release did not create stays.
	keep := &corev1.ConfigMap{}
	keep.Name, keep.Namespace = "keep", f.ns
	if err := f.c.Create(f.ctx, keep); err != nil {
		t.Fatal(err)
	}

	if err := f.engine.Uninstall(f.ctx, f.ns, deployerOf(f.ns), "pr-1"); err != nil {
		t.Fatal(err)
	}
	f.gone("app", &appsv1.Deployment{})
	f.gone("app", &corev1.Service{})
	f.gone("settings", &corev1.ConfigMap{})
	f.gone("credentials", &corev1.Secret{})
	f.gone("app", &networkingv1.Ingress{})
	f.gone(deploy.InventoryName("pr-1"), &corev1.ConfigMap{})
	f.get("keep", &corev1.ConfigMap{})
}

func TestDeploy_ChangingTypeMovesTheReleaseOver(t *testing.T) {
	f := newFixture(t)
	src := f.commit(gittest.Merge(chartWithHost(), gittest.Manifests("deploy"), extraManifests))

	f.deploy(f.request(helmType, src, "charts/app"))
	f.deploy(f.request(manifestType, src, "deploy"))
	var secrets corev1.SecretList
	if n := f.count(&secrets, helmReleaseSecrets); n != 0 {
		t.Errorf("%d Helm release Secrets after moving to manifests", n)
	}
	f.gone("app-config", &corev1.ConfigMap{}) // only the chart had it
	var d appsv1.Deployment
	f.get("app", &d)
	if d.Annotations[deploy.ReleaseAnnotation] != "pr-1" {
		t.Errorf("the Deployment is not the manifests' (annotations %v)", d.Annotations)
	}

	f.deploy(f.request(helmType, src, "charts/app"))
	f.gone(deploy.InventoryName("pr-1"), &corev1.ConfigMap{})
	f.gone("settings", &corev1.ConfigMap{}) // only the manifests had it
	if n := f.count(&secrets, helmReleaseSecrets); n != 1 {
		t.Errorf("%d Helm release Secrets after moving back to helm, want 1", n)
	}
}
