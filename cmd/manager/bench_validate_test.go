//go:build e2e

package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// validateCRDs is the size of the benchmark's operator: the 50-CRD operator.
const validateCRDs = 50

// BenchmarkValidate measures POST /api/v1/crds/{name}/validate against the built binary: an
// operator whose chart ships 50 CRDs (versions 1.0.0 and 2.0.0, the second breaking every one)
// is registered from an HTTP chart repository, a Production cluster (a real kube-apiserver) holds
// the 50 CRDs of 1.0.0 with 4 objects each (one of which 2.0.0 refuses), and every CRD is
// validated for 2.0.0 against the stored schema and that cluster's objects. It reports p50/p99
// of one validate request and of validating all 50 (one request after another).
//
//	go test -tags e2e ./cmd/manager -run '^$' -bench Validate
func BenchmarkValidate(b *testing.B) {
	rounds := testenv.Sizes(b, "SLIPWAY_BENCH_VALIDATE_ROUNDS", 10)[0]
	f := fleet(b, 1)
	installThings(b, f.Servers[0].Config)
	repo := charttest.ServeRepository(b,
		charttest.ManyCRDs("many", "1.0.0", validateCRDs, charttest.Base),
		charttest.ManyCRDs("many", "2.0.0", validateCRDs, charttest.Breaking))
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			d := newDeployment(b, engine)
			p := d.serve("--insecure-http")
			admin := d.admin()
			p.must("POST", "/api/v1/clusters", admin, clusterBody(b, "prod", f.Servers[0].Kubeconfig), http.StatusCreated)
			p.must("POST", "/api/v1/operators", admin, []byte(fmt.Sprintf(
				`{"name":"many","namespace":"many-system","chart":{"repository":%q,"name":"many"}}`, repo.URL)), http.StatusCreated)
			viewer := d.token("bench", auth.Viewer)
			body := []byte(`{"operator":"many","version":"2.0.0"}`)
			validate := func(i int) time.Duration {
				start := time.Now()
				r := p.must("POST", "/api/v1/crds/"+charttest.ThingPlural(i)+"."+charttest.Group+"/validate", viewer, body, http.StatusOK)
				took := time.Since(start)
				var rep struct {
					Breaking bool
					Clusters []struct {
						Objects        int
						InvalidObjects []json.RawMessage
					}
				}
				if err := json.Unmarshal(r.body, &rep); err != nil {
					b.Fatal(err)
				}
				if !rep.Breaking || len(rep.Clusters) != 1 || rep.Clusters[0].Objects != 4 || len(rep.Clusters[0].InvalidObjects) != 1 {
					b.Fatalf("report for CRD %d: %s", i, r.body)
				}
				return took
			}
			validate(0) // warm
			var one, all []time.Duration
			b.ResetTimer()
			for b.Loop() {
				for range rounds {
					start := time.Now()
					for i := range validateCRDs {
						one = append(one, validate(i))
					}
					all = append(all, time.Since(start))
				}
			}
			b.StopTimer()
			reportPercentiles(b, one)
			slices.Sort(all)
			b.ReportMetric(float64(all[len(all)/2])/float64(time.Millisecond), "all50-p50-ms")
			b.ReportMetric(float64(all[len(all)-1])/float64(time.Millisecond), "all50-max-ms")
		})
	}
}

// installThings installs the 50 CRDs of ManyCRDs' base level in a cluster, with four objects
// each: three every level accepts and "blue", whose color the breaking level refuses.
func installThings(b *testing.B, cfg *rest.Config) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	testenv.Parallel(b, validateCRDs, 4, func(i int) error {
		crd := charttest.NewCRD(charttest.ThingPlural(i), charttest.ThingKind(i), charttest.Base)
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		gvr := schema.GroupVersionResource{Group: charttest.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
		for j, color := range []string{"red", "green", "red", "blue"} {
			name := fmt.Sprintf("obj-%d", j)
			if color == "blue" {
				name = "blue"
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": crd.Spec.Names.Kind,
				"metadata": map[string]any{"name": name, "namespace": "default"},
				"spec":     map[string]any{"size": int64(3), "color": color},
			}}
			// The resource is served a moment after the CRD is created: retry until it is.
			for {
				_, err := dyn.Resource(gvr).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
				if err == nil || apierrors.IsAlreadyExists(err) {
					break
				}
				if ctx.Err() != nil {
					return fmt.Errorf("creating %s %s: %w", crd.Name, name, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		return nil
	})
}
