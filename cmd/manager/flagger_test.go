//go:build e2e

package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// The acceptance test with a real operator's published chart: Flagger (fluxcd/flagger, a
// progressive delivery operator), whose project releases its Helm chart from the directory
// charts/flagger of the tagged commit, with the chart's version set in that commit. The Go module
// github.com/fluxcd/flagger at tag v<version> therefore carries the published chart; the test
// fetches it at test time with `go mod download` (into the Go module cache, outside the
// repository) and packages it with Helm's own loader. Nothing of Flagger is kept in this repository.
//
// 1.37.0 → 1.38.0 is a real CRD change: MetricTemplate's spec.provider.type gains the enum
// value keptn.
const flaggerModule = "github.com/fluxcd/flagger"

// flaggerChart is Flagger's chart at version, packaged (.tgz).
func flaggerChart(t *testing.T, version string) []byte {
	t.Helper()
	dir := charttest.GoModuleDir(t, flaggerModule, "v"+version)
	ch, err := chartloader.LoadDir(filepath.Join(dir, "charts", "flagger"))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Name != "flagger" || ch.Metadata.Version != version {
		t.Fatalf("%s@v%s carries chart %s %s, want flagger %s", flaggerModule, version, ch.Metadata.Name, ch.Metadata.Version, version)
	}
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return archive
}

var metricTemplates = schema.GroupVersionResource{Group: "flagger.app", Version: "v1beta1", Resource: "metrictemplates"}

// createMetricTemplate stores a MetricTemplate whose provider is of type provider.
func createMetricTemplate(cfg *rest.Config, namespace, name, provider string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flagger.app/v1beta1", "kind": "MetricTemplate",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"provider": map[string]any{"type": provider, "address": "http://metrics.example:9090"},
			"query":    "sum(rate(http_requests_total[1m]))",
		},
	}}
	_, err = dyn.Resource(metricTemplates).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
	return err
}

// flaggerImage is the image of Flagger's Deployment (the release's name, as the chart names it).
func flaggerImage(t *testing.T, cfg *rest.Config, namespace, release string) string {
	t.Helper()
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := kc.AppsV1().Deployments(namespace).Get(context.Background(), release, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

func validateCRD(t *testing.T, p *proc, crd, body string) api.ValidationReport {
	t.Helper()
	var rep api.ValidationReport
	r := p.must("POST", "/api/v1/crds/"+crd+"/validate", p.d.token("victor", auth.Viewer), []byte(body), http.StatusOK)
	if err := json.Unmarshal(r.body, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestAcceptance_FlaggerPublishedLater: Flagger's chart served by a plain Helm HTTP repository
// (index.yaml); register it with 1.37.0 published, deploy 1.37.0, store a MetricTemplate in the
// cluster, publish 1.38.0 and see the refresh loop find it, validate 1.38.0's MetricTemplate CRD
// against the stored object (a compatible change: the enum gains keptn), upgrade (the upgrade's
// approval given by an Admin, as the default policy asks), then see the cluster accept what the
// new schema allows and validate the way back, which the new object breaks.
func TestAcceptance_FlaggerPublishedLater(t *testing.T) {
	older, newer := flaggerChart(t, "1.37.0"), flaggerChart(t, "1.38.0")
	target := fleet(t, 1).Servers[0]
	repo := charttest.ServeRepository(t)
	repo.AddArchive(t, older)
	p := newDeployment(t, "sqlite").serve("--insecure-http", "--operator-refresh-interval=1s")
	cluster, name := uniqueName("dev"), uniqueName("flagger")
	namespace := "ns-" + name
	registerCluster(t, p, cluster, "Dev", target.Kubeconfig)
	body, err := json.Marshal(map[string]any{"name": name, "namespace": namespace,
		"chart": map[string]string{"repository": repo.URL, "name": "flagger"}})
	if err != nil {
		t.Fatal(err)
	}
	p.must("POST", "/api/v1/operators", p.d.admin(), body, http.StatusCreated)
	if op := getOperator(t, p, name); !slices.Equal(op.Versions, []string{"1.37.0"}) {
		t.Fatalf("registered versions %v, want [1.37.0]", op.Versions)
	}

	olga, alice := p.d.token("olga", auth.Operator), p.d.admin()
	dep := postDeployment(t, p, olga, direct(name, "1.37.0", []string{cluster}))
	waitDeployment(t, p, dep.ID, "Completed", 3*time.Minute)
	if img := flaggerImage(t, target.Config, namespace, name); !strings.HasSuffix(img, ":1.37.0") {
		t.Fatalf("Flagger's Deployment runs %s, want 1.37.0", img)
	}
	if err := createMetricTemplate(target.Config, "default", name+"-latency", "prometheus"); err != nil {
		t.Fatal(err)
	}
	if err := createMetricTemplate(target.Config, "default", name+"-keptn", "keptn"); !apierrors.IsInvalid(err) {
		t.Fatalf("a keptn MetricTemplate under 1.37.0's schema: %v, want it refused as invalid", err)
	}

	repo.AddArchive(t, newer)
	t.Logf("the loop found 1.38.0 %s after it was published", waitVersion(t, p, name, "1.38.0", 30*time.Second).Round(time.Millisecond))

	const crd = "metrictemplates.flagger.app"
	rep := validateCRD(t, p, crd, fmt.Sprintf(`{"operator": %q, "version": "1.38.0", "clusters": [%q]}`, name, cluster))
	if rep.Breaking || rep.From == nil || rep.From.Version != "1.37.0" || len(rep.Clusters) != 1 ||
		!rep.Clusters[0].Installed || rep.Clusters[0].Objects < 1 || len(rep.Clusters[0].InvalidObjects) != 0 ||
		!slices.ContainsFunc(rep.Changes, func(c api.SchemaChange) bool {
			return c.Kind == "enumValuesAdded" && strings.Contains(c.Path, "provider.type") && !c.Breaking
		}) {
		t.Fatalf("validate 1.38.0 against the cluster: %+v", rep)
	}

	up := postDeployment(t, p, olga, direct(name, "1.38.0", []string{cluster}))
	waitDeployment(t, p, up.ID, "WaitingApproval", time.Minute)
	approval := pendingApproval(t, p, up.ID)
	p.must("POST", "/api/v1/approvals/"+approval.ID+"/approve", alice, []byte(`{"comment": "keptn support"}`), http.StatusOK)
	waitDeployment(t, p, up.ID, "Completed", 3*time.Minute)
	if img := flaggerImage(t, target.Config, namespace, name); !strings.HasSuffix(img, ":1.38.0") {
		t.Fatalf("Flagger's Deployment runs %s, want 1.38.0", img)
	}
	if err := createMetricTemplate(target.Config, "default", name+"-keptn", "keptn"); err != nil {
		t.Fatalf("a keptn MetricTemplate under 1.38.0's schema: %v", err)
	}

	// Back to 1.37.0 would refuse the keptn object now stored: validate names it.
	back := validateCRD(t, p, crd, fmt.Sprintf(`{"operator": %q, "version": "1.37.0", "baseVersion": "1.38.0", "clusters": [%q]}`, name, cluster))
	if !back.Breaking || len(back.Clusters) != 1 || !slices.ContainsFunc(back.Clusters[0].InvalidObjects, func(o api.InvalidObject) bool {
		return o.Name == name+"-keptn" && o.Namespace == "default"
	}) {
		t.Fatalf("validate the way back to 1.37.0: %+v", back)
	}
}
