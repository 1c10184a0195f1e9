package operators

import (
	"context"
	"reflect"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/slipway-dev/slipway/internal/manager/invalid"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

func loadFixture(t *testing.T, files charttest.ChartFiles) *chart.Chart {
	t.Helper()
	archive, err := charttest.Archive(files)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := LoadArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestExtractCRDs(t *testing.T) {
	for _, v := range charttest.Versions {
		t.Run(v.Version, func(t *testing.T) {
			ch := loadFixture(t, charttest.OperatorChart(chartName, v.Version, v.Level, charttest.WithTemplateCRD(), charttest.WithWebhook()))
			crds, err := ExtractCRDs(ch)
			if err != nil {
				t.Fatal(err)
			}
			if len(crds) != 2 || crds[0].Name != "gadgets.charttest.slipway.dev" || crds[1].Name != "widgets.charttest.slipway.dev" {
				t.Fatalf("extracted %d CRDs %v, want gadgets (templates/) and widgets (crds/)", len(crds), names(crds))
			}
			// The template CRD was rendered: the release name is in its label.
			if got := crds[0].Labels["app.kubernetes.io/instance"]; got != chartName {
				t.Fatalf("template CRD label %q, want the release name %q", got, chartName)
			}
			for _, crd := range crds {
				want := charttest.Schema(v.Level)
				if got := crd.Spec.Versions[0].Schema.OpenAPIV3Schema; !reflect.DeepEqual(got, want) {
					t.Fatalf("%s schema differs from level %d's", crd.Name, v.Level)
				}
			}
		})
	}
}

func TestExtractCRDsWithoutTemplateCRD(t *testing.T) {
	crds, err := ExtractCRDs(loadFixture(t, charttest.OperatorChart(chartName, "1.0.0", charttest.Base)))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 || crds[0].Name != "widgets.charttest.slipway.dev" {
		t.Fatalf("extracted %v, want widgets only", names(crds))
	}
}

func TestExtractCRDsErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch func(charttest.ChartFiles)
	}{
		{"v1beta1 CRD in crds/", func(f charttest.ChartFiles) {
			f["crds/old.yaml"] = "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata:\n  name: olds.example.com\n"
		}},
		{"not a CRD in crds/", func(f charttest.ChartFiles) {
			f["crds/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
		}},
		{"CRD without a name", func(f charttest.ChartFiles) {
			f["crds/anon.yaml"] = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  group: example.com\n"
		}},
		{"template that does not render", func(f charttest.ChartFiles) {
			f["templates/broken.yaml"] = "{{ .Values.nothing.deeper }}\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := charttest.OperatorChart(chartName, "1.0.0", charttest.Base)
			tc.patch(files)
			if crds, err := ExtractCRDs(loadFixture(t, files)); err == nil {
				t.Fatalf("extracted %v, want an error", names(crds))
			}
		})
	}
}

func TestInspect(t *testing.T) {
	repo := charttest.ServeRepository(t, allVersions()...)
	c := newCharts(t, Options{})
	got, err := c.Inspect(context.Background(), ChartRef{Repository: repo.URL, Name: chartName}, ">=1.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Versions) != 2 || len(got.CRDs) != 2 {
		t.Fatalf("inspected %d versions with %d CRD sets, want 2 and 2", len(got.Versions), len(got.CRDs))
	}
	for i, vc := range got.CRDs {
		if vc.Version.Version != got.Versions[i].Version || len(vc.CRDs) != 2 {
			t.Fatalf("CRD set %d is for %s with %d CRDs, want %s with 2", i, vc.Version.Version, len(vc.CRDs), got.Versions[i].Version)
		}
	}
	if _, ok := got.CRDs[0].CRDs[1].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["legacy"]; ok {
		t.Fatal("2.0.0's widgets CRD still has spec.legacy")
	}

	broken := charttest.OperatorChart(chartName, "3.0.0", charttest.Base)
	broken["templates/broken.yaml"] = "{{ .Values.nothing.deeper }}\n"
	repo.Add(t, broken)
	_, err = c.Inspect(context.Background(), ChartRef{Repository: repo.URL, Name: chartName}, "")
	wantInvalid(t, err, "versions", "badChart")
}

func TestValidateNames(t *testing.T) {
	for _, ok := range []string{"cert-manager", "a", "op1"} {
		if err := ValidateName("name", ok); err != nil {
			t.Errorf("ValidateName(%q): %v", ok, err)
		}
	}
	if err := ValidateName("name", strings.Repeat("a", 54)); err == nil {
		t.Error("ValidateName accepts a name longer than a Helm release name")
	}
	for _, bad := range []string{"", "Cert", "a_b", "-a", "a.b", string(make([]byte, 64))} {
		err := ValidateNamespace("namespace", bad)
		e, ok := invalid.As(err)
		if !ok || e.Field != "namespace" {
			t.Errorf("ValidateNamespace(%q) = %v, want an invalid namespace", bad, err)
		}
	}
}

func names[T interface{ GetName() string }](objs []T) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetName()
	}
	return out
}
