package charttest

import (
	"bytes"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

// TestOperatorChartRenders loads every fixture chart with Helm's loader, renders it and checks
// it holds the objects an operator install needs.
func TestOperatorChartRenders(t *testing.T) {
	for _, v := range Versions {
		t.Run(v.Version, func(t *testing.T) {
			archive, err := Archive(OperatorChart("widget-operator", v.Version, v.Level, WithTemplateCRD(), WithWebhook()))
			if err != nil {
				t.Fatal(err)
			}
			ch, err := loader.LoadArchive(bytes.NewReader(archive))
			if err != nil {
				t.Fatal(err)
			}
			if ch.Metadata.Version != v.Version || len(ch.CRDObjects()) != 1 {
				t.Fatalf("chart version %s with %d CRD files, want %s with 1", ch.Metadata.Version, len(ch.CRDObjects()), v.Version)
			}
			vals, err := chartutil.ToRenderValues(ch, nil, common.ReleaseOptions{Name: "rel", Namespace: "ops", IsInstall: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			out, err := engine.Render(ch, vals)
			if err != nil {
				t.Fatal(err)
			}
			var all strings.Builder
			for _, s := range out {
				all.WriteString(s)
			}
			for _, kind := range []string{"kind: Deployment", "kind: ServiceAccount", "kind: ClusterRole", "kind: ClusterRoleBinding",
				"kind: ValidatingWebhookConfiguration", "kind: Service", "kind: CustomResourceDefinition", "image: registry.example/widget-operator:v" + v.Version} {
				if !strings.Contains(all.String(), kind) {
					t.Fatalf("rendered chart lacks %q", kind)
				}
			}
		})
	}
}

func TestManyCRDs(t *testing.T) {
	files := ManyCRDs("many", "1.0.0", 50, Base)
	n := 0
	for p := range files {
		if strings.HasPrefix(p, "crds/") {
			n++
		}
	}
	if n != 50 || !strings.Contains(files["crds/thing049.yaml"], "kind: Thing049") {
		t.Fatalf("%d CRD files, want 50 ending with Thing049", n)
	}
}
