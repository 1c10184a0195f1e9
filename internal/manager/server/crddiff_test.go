package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

const cwidgets = "widgets." + charttest.Group

// TestCRDDiff: the definition a version ships, and the changes between two versions' revisions
// as validate reports them (the same checker): an operator's versions (breaking, identical, the
// other way round), a posted revision's labels, the operator needed when two operators' same
// version ships different revisions, and the refusals.
func TestCRDDiff(t *testing.T) {
	repo := charttest.ServeRepository(t,
		charttest.OperatorChart("diff-operator", "1.0.0", charttest.Base),
		charttest.OperatorChart("diff-operator", "2.0.0", charttest.Breaking))
	other := charttest.ServeRepository(t, charttest.OperatorChart("diff-operator", "1.0.0", charttest.Compatible))
	hist := charttest.ServeRepository(t, histCharts()...)
	forEngine(t, func(t *testing.T, engine string) {
		b := setup(t, engine)
		op := b.token("olga", auth.Operator)
		for name, u := range map[string]string{"diffop": repo.URL, "hist": hist.URL} {
			expect(t, "register "+name, b.do("POST", "/api/v1/operators", op, api.OperatorRequest{Name: name, Namespace: name + "-system",
				Chart: api.ChartRef{Repository: u, Name: map[string]string{"diffop": "diff-operator", "hist": "hist-operator"}[name]}}), http.StatusCreated)
		}
		testRevisionDefinition(t, b)
		testOperatorDiff(t, b)

		// A posted revision's labels.
		for label, level := range map[string]charttest.Level{"r1": charttest.Base, "r2": charttest.Compatible} {
			def, err := json.Marshal(charttest.NewCRD("pwidgets", "PWidget", level))
			if err != nil {
				t.Fatal(err)
			}
			expect(t, "post "+label, b.do("POST", "/api/v1/crds", op, api.CRDRequest{Definition: def, Version: label}), http.StatusCreated)
		}
		d := diff(t, b, "pwidgets."+charttest.Group, "from=r1&to=r2")
		if d.Breaking || d.Identical || len(d.Changes) == 0 || d.From.Version != "r1" || d.To.Version != "r2" || d.To.Operator != "" {
			t.Fatalf("posted labels: %+v", d)
		}

		// Two operators' 1.0.0 ship different revisions of widgets: name the operator.
		expect(t, "register diffop2", b.do("POST", "/api/v1/operators", op, api.OperatorRequest{Name: "diffop2", Namespace: "d2",
			Chart: api.ChartRef{Repository: other.URL, Name: "diff-operator"}}), http.StatusCreated)
		e := expectInvalid(t, "ambiguous", b.do("GET", "/api/v1/crds/"+cwidgets+"/revisions/1.0.0", b.viewer(), nil), "operator")
		if !strings.Contains(e.Message, "diffop and diffop2") {
			t.Fatalf("ambiguous: %s", e.Message)
		}
		d = diff(t, b, cwidgets, "from=1.0.0&to=2.0.0&operator=diffop")
		if !d.Breaking || d.From.Operator != "diffop" {
			t.Fatalf("with operator=diffop: %+v", d)
		}
		var rev api.CRDRevisionDefinition
		b.do("GET", "/api/v1/crds/"+cwidgets+"/revisions/1.0.0?operator=diffop2", b.viewer(), nil).json(t, &rev)
		if rev.Revision.Operator != "diffop2" || !strings.Contains(string(rev.Definition), "yellow") {
			t.Fatalf("diffop2's 1.0.0: %+v", rev.Revision)
		}
		expectInvalid(t, "unknown operator", b.do("GET", "/api/v1/crds/"+cwidgets+"/diff?from=1.0.0&to=2.0.0&operator=nope", b.viewer(), nil), "operator")
	})
}

func diff(t *testing.T, b *bundle, crd, query string) api.CRDDiff {
	t.Helper()
	r := b.do("GET", "/api/v1/crds/"+crd+"/diff?"+query, b.viewer(), nil)
	expect(t, "diff "+query, r, http.StatusOK)
	var d api.CRDDiff
	r.json(t, &d)
	return d
}

func testRevisionDefinition(t *testing.T, b *bundle) {
	r := b.do("GET", "/api/v1/crds/"+cwidgets+"/revisions/"+url.PathEscape("1.0.0"), b.viewer(), nil)
	expect(t, "revision", r, http.StatusOK)
	var rev api.CRDRevisionDefinition
	r.json(t, &rev)
	var def map[string]any
	if err := json.Unmarshal(rev.Definition, &def); err != nil || def["kind"] != "CustomResourceDefinition" {
		t.Fatalf("definition is not a CRD object: %s", rev.Definition)
	}
	if rev.CRD != cwidgets || rev.Revision.Version != "1.0.0" || rev.Revision.Operator != "diffop" || !strings.HasPrefix(rev.Revision.Digest, "sha256:") ||
		!strings.Contains(string(rev.Definition), `"legacy"`) {
		t.Fatalf("revision: %+v", rev.Revision)
	}
	var two api.CRDRevisionDefinition
	b.do("GET", "/api/v1/crds/"+cwidgets+"/revisions/2.0.0", b.viewer(), nil).json(t, &two)
	if two.Revision.Digest == rev.Revision.Digest || strings.Contains(string(two.Definition), `"legacy"`) {
		t.Fatalf("2.0.0 (legacy removed): %+v", two.Revision)
	}
	for path, want := range map[string]int{
		"/api/v1/crds/" + cwidgets + "/revisions/9.9.9":     http.StatusNotFound,
		"/api/v1/crds/nothings.example.com/revisions/1.0.0": http.StatusNotFound,
		"/api/v1/crds/" + swidgets + "/revisions/4.0.0":     http.StatusNotFound,
	} {
		r := b.do("GET", path, b.viewer(), nil)
		expect(t, path, r, want)
		if strings.HasSuffix(path, "4.0.0") && !strings.Contains(r.apiError(t).Message, "version \"4.0.0\" of hist does not ship CRD") {
			t.Fatalf("a version that drops the CRD: %s", r.body)
		}
	}
	expect(t, "no token", b.do("GET", "/api/v1/crds/"+cwidgets+"/revisions/1.0.0", "", nil), http.StatusUnauthorized)
}

func testOperatorDiff(t *testing.T, b *bundle) {
	d := diff(t, b, cwidgets, "from=1.0.0&to=2.0.0")
	if !d.Breaking || d.Identical || d.From.Version != "1.0.0" || d.To.Version != "2.0.0" || d.From.Operator != "diffop" {
		t.Fatalf("1.0.0 → 2.0.0: %+v", d)
	}
	var breaking []string
	for _, c := range d.Changes {
		if c.Breaking {
			breaking = append(breaking, c.Path)
		}
	}
	if !slices.Contains(breaking, "spec.legacy") || !slices.Contains(breaking, "spec.count") {
		t.Fatalf("breaking changes %v, want spec.legacy and spec.count among them: %+v", breaking, d.Changes)
	}
	// The same checker as validate: the very changes it reports for 2.0.0 against 1.0.0.
	var rep api.ValidationReport
	r := b.do("POST", "/api/v1/crds/"+cwidgets+"/validate", b.viewer(), api.ValidateRequest{Operator: "diffop", Version: "2.0.0", BaseVersion: "1.0.0"})
	expect(t, "validate", r, http.StatusOK)
	r.json(t, &rep)
	if diffs := cmp.Diff(rep.Changes, d.Changes); diffs != "" {
		t.Fatalf("diff and validate disagree (-validate +diff):\n%s", diffs)
	}
	back := diff(t, b, cwidgets, "from=2.0.0&to=1.0.0")
	if len(back.Changes) == 0 || back.From.Version != "2.0.0" {
		t.Fatalf("2.0.0 → 1.0.0: %+v", back)
	}
	same := diff(t, b, swidgets, "from=1.0.0&to=3.0.0")
	if !same.Identical || same.Breaking || len(same.Changes) != 0 || same.From.Digest != same.To.Digest {
		t.Fatalf("1.0.0 and 3.0.0 ship one revision: %+v", same)
	}
	expectInvalid(t, "no to", b.do("GET", "/api/v1/crds/"+cwidgets+"/diff?from=1.0.0", b.viewer(), nil), "to")
	expectInvalid(t, "no from", b.do("GET", "/api/v1/crds/"+cwidgets+"/diff?to=1.0.0", b.viewer(), nil), "from")
	r = b.do("GET", "/api/v1/crds/"+cwidgets+"/diff?from=1.0.0&to=7.0.0", b.viewer(), nil)
	expect(t, "unknown to", r, http.StatusNotFound)
	if e := r.apiError(t); e.Details["field"] != "to" {
		t.Fatalf("unknown to: %s", r.body)
	}
}
