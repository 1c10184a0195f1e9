package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/gitsource"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// BenchmarkDeploy_Manifest deploys a small manifest application (a Deployment, a Service and a
// ConfigMap) against the real kube-apiserver: per round, into 20 new namespaces, then again into
// each with a new image tag. It reports the mean time of a first deploy and of an update, and the
// API requests each makes. The repository is checked out once; fetching is not measured.
//
//	make bench BENCH=BenchmarkDeploy_Manifest TEST_PKGS=./internal/controller/catalyst/deploy/...
func BenchmarkDeploy_Manifest(b *testing.B) {
	benchDeploy(b, manifestType, "deploy", gittest.Merge(gittest.Manifests("deploy"), gittest.Files{
		"deploy/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-settings}\ndata: {color: blue}\n"),
	}))
}

// BenchmarkDeploy_Helm is BenchmarkDeploy_Manifest for the sample Helm chart (a Deployment and a
// Service): each deploy renders the chart's templates in a renderer process (its start included)
// and installs or upgrades the release as the environment's ServiceAccount.
//
//	make bench BENCH=BenchmarkDeploy_Helm TEST_PKGS=./internal/controller/catalyst/deploy/...
func BenchmarkDeploy_Helm(b *testing.B) {
	benchDeploy(b, helmType, "charts/app", gittest.HelmChart("charts/app", "app"))
}

// BenchmarkDeploy_Kustomize is BenchmarkDeploy_Manifest for the sample overlay (a Deployment
// and a Service): each deploy builds the kustomization in a renderer process (its start and the
// copy of the repository included).
//
//	make bench BENCH=BenchmarkDeploy_Kustomize TEST_PKGS=./internal/controller/catalyst/deploy/...
func BenchmarkDeploy_Kustomize(b *testing.B) {
	benchDeploy(b, kustomizeType, "deploy/kustomize/overlays/preview", gittest.Kustomization("deploy/kustomize"))
}

func benchDeploy(b *testing.B, typ catalystv1alpha1.DeploymentType, dir string, files gittest.Files) {
	needEnv(b)
	const n = 20
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	srv := gittest.NewServer(b)
	repo := srv.NewRepository(b, "app")
	sha, err := repo.Commit("app", files)
	if err != nil {
		b.Fatal(err)
	}
	snap, err := gitsource.Fetch(ctx, gitsource.Options{URL: repo.URL, Branch: "main", Commit: sha})
	if err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(b.TempDir(), "checkout")
	if err := snap.CheckoutDir(src); err != nil {
		b.Fatal(err)
	}

	var requests atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, -1 // no client-side throttling: measure the deployer and the server
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	}
	engine, err := deploy.New(cfg, deploy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	request := func(ns, tag string) deploy.Request {
		return deploy.Request{
			Namespace: ns, Release: "pr-1", Type: typ, Source: src, Path: dir, ServiceAccount: deployerOf(ns),
			Image: deploy.Image{Repository: "registry.example.dev/org/app", Tag: tag},
			Host:  "pr-1.preview.example.dev", Env: testEnv,
			Labels: map[string]string{"catalyst.dev/environment": "pr-1"},
		}
	}
	newNamespace := func() string {
		ns := "bench-" + rand.String(8)
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		bindDeployer(ctx, b, env.Client, ns, deployerRole)
		return ns
	}
	// Warm the REST mapper's discovery cache, as a running operator has it.
	if _, err := engine.Deploy(ctx, request(newNamespace(), "warm")); err != nil {
		b.Fatal(err)
	}

	var first, update time.Duration
	var firstReqs, updateReqs int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		namespaces := make([]string, n)
		for i := range namespaces {
			namespaces[i] = newNamespace()
		}
		b.StartTimer()
		for round, tag := range []string{"one", "two"} {
			for _, ns := range namespaces {
				before := requests.Load()
				start := time.Now()
				res, err := engine.Deploy(ctx, request(ns, tag))
				if err != nil {
					b.Fatal(err)
				}
				if res.Revision != fmt.Sprint(round+1) {
					b.Fatalf("revision %s in round %d", res.Revision, round+1)
				}
				if round == 0 {
					first += time.Since(start)
					firstReqs += requests.Load() - before
				} else {
					update += time.Since(start)
					updateReqs += requests.Load() - before
				}
			}
		}
	}
	b.StopTimer()
	deploys := float64(b.N * n)
	b.ReportMetric(float64(first.Microseconds())/1000/deploys, "ms/first-deploy")
	b.ReportMetric(float64(update.Microseconds())/1000/deploys, "ms/update-deploy")
	b.ReportMetric(float64(firstReqs)/deploys, "req/first-deploy")
	b.ReportMetric(float64(updateReqs)/deploys, "req/update-deploy")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
