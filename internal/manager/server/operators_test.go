package server

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// widgetCharts are the widget operator's chart versions: 1.0.0 base, 1.1.0 compatible, 2.0.0
// breaking (charttest.Versions).
func widgetCharts() []charttest.ChartFiles {
	var out []charttest.ChartFiles
	for _, v := range charttest.Versions {
		out = append(out, charttest.OperatorChart("widget-operator", v.Version, v.Level))
	}
	return out
}

func TestOperators(t *testing.T) {
	repo := charttest.ServeRepository(t, widgetCharts()...)
	reg := registrytest.StartDistribution(t)
	ociRepo := charttest.PushOCI(t, reg, "charts", widgetCharts()...)
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			b := setup(t, engine, withPlainHTTP(reg.Host))
			op := b.token("olga", auth.Operator)

			r := b.do("POST", "/api/v1/operators", op, api.OperatorRequest{Name: "widgets", Namespace: "widget-system",
				Chart: api.ChartRef{Repository: repo.URL, Name: "widget-operator"}})
			expect(t, "register from an HTTP repository", r, http.StatusCreated)
			var got api.Operator
			r.json(t, &got)
			if got.ID == "" || !slices.Equal(got.Versions, []string{"2.0.0", "1.1.0", "1.0.0"}) || got.Chart.Name != "widget-operator" {
				t.Fatalf("registered operator: %+v", got)
			}
			r = b.do("POST", "/api/v1/operators", op, api.OperatorRequest{Name: "widgets-oci", Namespace: "widget-system",
				Chart: api.ChartRef{Repository: ociRepo, Name: "widget-operator"}, Versions: "<2.0.0"})
			expect(t, "register from OCI with a filter", r, http.StatusCreated)
			r.json(t, &got)
			if !slices.Equal(got.Versions, []string{"1.1.0", "1.0.0"}) || got.VersionFilter != "<2.0.0" {
				t.Fatalf("OCI operator: %+v", got)
			}

			before := b.counts()
			bad := []struct {
				name  string
				req   api.OperatorRequest
				field string
			}{
				{"bad name", api.OperatorRequest{Name: "Widgets!", Namespace: "ns", Chart: api.ChartRef{Repository: repo.URL, Name: "widget-operator"}}, "name"},
				{"bad namespace", api.OperatorRequest{Name: "w2", Namespace: "NS", Chart: api.ChartRef{Repository: repo.URL, Name: "widget-operator"}}, "namespace"},
				{"bad scheme", api.OperatorRequest{Name: "w2", Namespace: "ns", Chart: api.ChartRef{Repository: "ftp://example.com", Name: "widget-operator"}}, "chart.repository"},
				{"no chart name", api.OperatorRequest{Name: "w2", Namespace: "ns", Chart: api.ChartRef{Repository: repo.URL}}, "chart.name"},
				{"unknown chart", api.OperatorRequest{Name: "w2", Namespace: "ns", Chart: api.ChartRef{Repository: repo.URL, Name: "nope"}}, "chart.name"},
				{"unreachable repository", api.OperatorRequest{Name: "w2", Namespace: "ns", Chart: api.ChartRef{Repository: "http://127.0.0.1:1/charts", Name: "x"}}, "chart.repository"},
				{"bad filter", api.OperatorRequest{Name: "w2", Namespace: "ns", Chart: api.ChartRef{Repository: repo.URL, Name: "widget-operator"}, Versions: ">>1"}, "versions"},
				{"filter keeps none", api.OperatorRequest{Name: "w2", Namespace: "ns", Chart: api.ChartRef{Repository: repo.URL, Name: "widget-operator"}, Versions: ">=9"}, "versions"},
			}
			for _, tt := range bad {
				expectInvalid(t, tt.name, b.do("POST", "/api/v1/operators", op, tt.req), tt.field)
			}
			expect(t, "duplicate", b.do("POST", "/api/v1/operators", op, api.OperatorRequest{Name: "widgets", Namespace: "widget-system",
				Chart: api.ChartRef{Repository: repo.URL, Name: "widget-operator"}}), http.StatusConflict)
			expect(t, "register as viewer", b.do("POST", "/api/v1/operators", b.viewer(), api.OperatorRequest{Name: "w3", Namespace: "ns",
				Chart: api.ChartRef{Repository: repo.URL, Name: "widget-operator"}}), http.StatusForbidden)
			if after := b.counts(); after != before {
				t.Fatalf("rejected registrations wrote to the store: %+v, then %+v", before, after)
			}

			var list api.OperatorList
			b.do("GET", "/api/v1/operators?limit=1", b.viewer(), nil).json(t, &list)
			if len(list.Items) != 1 || list.Items[0].Name != "widgets" || list.Continue == "" {
				t.Fatalf("first page: %+v", list)
			}
			b.do("GET", "/api/v1/operators?limit=1&continue="+list.Continue, b.viewer(), nil).json(t, &list)
			if len(list.Items) != 1 || list.Items[0].Name != "widgets-oci" {
				t.Fatalf("second page: %+v", list)
			}
			expect(t, "get", b.do("GET", "/api/v1/operators/widgets", b.viewer(), nil), http.StatusOK)
			expect(t, "get unknown", b.do("GET", "/api/v1/operators/nope", b.viewer(), nil), http.StatusNotFound)

			testCRDs(t, b, engine)
		})
	}
}

// testCRDs runs the CRD endpoints on the operators TestOperators registered: the widget CRD's
// history from the chart, validation against the stored schema and a cluster's existing objects,
// approval.
func testCRDs(t *testing.T, b *bundle, engine string) {
	const name = "widgets." + charttest.Group
	admin := b.admin()
	var list api.CRDList
	b.do("GET", "/api/v1/crds", b.viewer(), nil).json(t, &list)
	// Three revisions from widgets (1.0.0, 1.1.0, 2.0.0), two from widgets-oci (filtered to < 2).
	if len(list.Items) != 1 || list.Items[0].Name != name || list.Items[0].Revisions != 5 ||
		list.Items[0].Latest.Version != "1.1.0" || list.Items[0].Latest.Operator != "widgets-oci" {
		t.Fatalf("CRD list: %+v", list)
	}
	var crd api.CRD
	b.do("GET", "/api/v1/crds/"+name, b.viewer(), nil).json(t, &crd)
	if len(crd.Revisions) != 5 || crd.Kind != "Widget" || crd.Revisions[0].Operator != "widgets" || crd.Revisions[0].Version != "1.0.0" {
		t.Fatalf("CRD history: %+v", crd)
	}
	expect(t, "unknown CRD", b.do("GET", "/api/v1/crds/nopes.example.com", b.viewer(), nil), http.StatusNotFound)

	// A Production cluster holding widgets that the breaking version refuses.
	f := fleet(t)
	installWidgets(t, f.Servers[0].Config, engine)
	expect(t, "register prod", b.do("POST", "/api/v1/clusters", admin,
		api.ClusterRequest{Name: "prod", Environment: "Production", Kubeconfig: string(f.Servers[0].Kubeconfig)}), http.StatusCreated)

	var rep api.ValidationReport
	r := b.do("POST", "/api/v1/crds/"+name+"/validate", b.viewer(), api.ValidateRequest{Operator: "widgets", Version: "1.1.0"})
	expect(t, "validate 1.1.0", r, http.StatusOK)
	r.json(t, &rep)
	if rep.Breaking || rep.From == nil || rep.From.Version != "1.0.0" || len(rep.Changes) == 0 || rep.ApprovalRequired {
		t.Fatalf("compatible version: %s", r.body)
	}
	r = b.do("POST", "/api/v1/crds/"+name+"/validate", b.viewer(), api.ValidateRequest{Operator: "widgets", Version: "2.0.0"})
	expect(t, "validate 2.0.0", r, http.StatusOK)
	rep = api.ValidationReport{}
	r.json(t, &rep)
	if !rep.Breaking || !rep.ApprovalRequired || rep.Approved || rep.From.Version != "1.1.0" {
		t.Fatalf("breaking version: %s", r.body)
	}
	kinds := map[string]bool{}
	for _, c := range rep.Changes {
		if c.Breaking {
			kinds[c.Kind] = true
		}
		if c.Path == "" {
			t.Fatalf("change without a path: %+v", c)
		}
	}
	if len(kinds) < 3 {
		t.Fatalf("breaking change kinds: %v", kinds)
	}
	if len(rep.Clusters) != 1 || !rep.Clusters[0].Installed {
		t.Fatalf("cluster check: %+v", rep.Clusters)
	}
	var invalidNames []string
	for _, o := range rep.Clusters[0].InvalidObjects {
		invalidNames = append(invalidNames, o.Name)
	}
	slices.Sort(invalidNames)
	if !slices.Equal(invalidNames, []string{"blue", "counted"}) {
		t.Fatalf("invalid objects: %v (%s)", invalidNames, r.body)
	}

	for _, tt := range []struct {
		name  string
		req   api.ValidateRequest
		field string
	}{
		{"nothing", api.ValidateRequest{}, "definition"},
		{"unknown operator", api.ValidateRequest{Operator: "nope", Version: "1.0.0"}, "operator"},
		{"unknown version", api.ValidateRequest{Operator: "widgets", Version: "9.9.9"}, "version"},
		{"no version", api.ValidateRequest{Operator: "widgets"}, "version"},
		{"unknown cluster", api.ValidateRequest{Operator: "widgets", Version: "2.0.0", Clusters: []string{"nope"}}, "clusters[0]"},
		{"not a CRD", api.ValidateRequest{Definition: []byte(`"kind: ConfigMap"`)}, "definition"},
		{"other CRD", api.ValidateRequest{Definition: []byte(quoted(charttest.YAML(charttest.Gadget(charttest.Base))))}, "definition.metadata.name"},
	} {
		expectInvalid(t, tt.name, b.do("POST", "/api/v1/crds/"+name+"/validate", b.viewer(), tt.req), tt.field)
	}

	// Approval: Admin only, with a reason; afterwards validate says approved.
	approve := api.ApproveRequest{Operator: "widgets", Version: "2.0.0", Reason: "widgets migrated by hand"}
	expect(t, "approve as operator", b.do("POST", "/api/v1/crds/"+name+"/approve", b.token("olga", auth.Operator), approve), http.StatusForbidden)
	expectInvalid(t, "approve without reason", b.do("POST", "/api/v1/crds/"+name+"/approve", admin, api.ApproveRequest{Operator: "widgets", Version: "2.0.0"}), "reason")
	r = b.do("POST", "/api/v1/crds/"+name+"/approve", admin, approve)
	expect(t, "approve", r, http.StatusCreated)
	var a api.Approval
	r.json(t, &a)
	if a.ApprovedBy != "alice" || a.ToVersion != "2.0.0" || a.FromDigest == "" || a.RequestID == "" {
		t.Fatalf("approval: %+v", a)
	}
	rep = api.ValidationReport{}
	b.do("POST", "/api/v1/crds/"+name+"/validate", b.viewer(), api.ValidateRequest{Operator: "widgets", Version: "2.0.0"}).json(t, &rep)
	if !rep.Approved {
		t.Fatalf("validate after approval: %+v", rep)
	}
	crd = api.CRD{}
	b.do("GET", "/api/v1/crds/"+name, b.viewer(), nil).json(t, &crd)
	if len(crd.Approvals) != 1 || crd.Approvals[0].Reason != approve.Reason {
		t.Fatalf("approvals kept: %+v", crd.Approvals)
	}

	// A definition posted directly, as YAML text or a JSON object; the same twice is a conflict.
	gadget := quoted(charttest.YAML(charttest.Gadget(charttest.Base)))
	expect(t, "post CRD", b.do("POST", "/api/v1/crds", b.token("olga", auth.Operator),
		`{"definition": `+gadget+`, "version": "r1"}`), http.StatusCreated)
	expect(t, "post CRD again", b.do("POST", "/api/v1/crds", admin, `{"definition": `+gadget+`, "version": "r1"}`), http.StatusConflict)
	expectInvalid(t, "post CRD without version", b.do("POST", "/api/v1/crds", admin, `{"definition": `+gadget+`}`), "version")
	expectInvalid(t, "post not a CRD", b.do("POST", "/api/v1/crds", admin, `{"definition": {"apiVersion": "v1", "kind": "ConfigMap"}, "version": "r1"}`), "definition")
	r = b.do("POST", "/api/v1/crds/gadgets."+charttest.Group+"/validate", b.viewer(),
		`{"definition": `+quoted(charttest.YAML(charttest.Gadget(charttest.Breaking)))+`}`)
	expect(t, "validate a posted definition", r, http.StatusOK)
	rep = api.ValidationReport{}
	r.json(t, &rep)
	if !rep.Breaking || rep.From == nil || rep.From.Version != "r1" {
		t.Fatalf("posted definition: %s", r.body)
	}
}

func quoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var widgetsOnce sync.Once

// installWidgets installs the base widget CRD in a cluster with three widgets: "ok", which every
// version accepts, and "blue" and "counted", which the breaking version refuses.
func installWidgets(t *testing.T, cfg *rest.Config, _ string) {
	t.Helper()
	var err error
	widgetsOnce.Do(func() { err = doInstallWidgets(cfg) })
	if err != nil {
		t.Fatalf("installing widgets: %v", err)
	}
}

func doInstallWidgets(cfg *rest.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crd := charttest.Widget(charttest.Base)
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if established(got) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: charttest.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
	for name, spec := range map[string]map[string]any{
		"ok":      {"size": int64(3), "color": "red"},
		"blue":    {"size": int64(3), "color": "blue"},
		"counted": {"size": int64(3), "count": int64(5)},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": crd.Spec.Names.Kind,
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec,
		}}
		if _, err := dyn.Resource(gvr).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
