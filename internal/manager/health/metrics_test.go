package health

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// metricsServer plays metrics-server for the namespace ns: every container of every pod there
// uses cpu (an atomic string, "500m") and 100Mi of memory.
func metricsServer(t *testing.T, ns string, cpu *atomic.Value) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/apis/metrics.k8s.io/v1beta1":
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "metrics.k8s.io/v1beta1",
				APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}}},
			})
		case r.URL.Path == "/apis/metrics.k8s.io/v1beta1/namespaces/"+ns+"/pods":
			var pods corev1.PodList
			sel, _ := metav1.ParseToLabelSelector(r.URL.Query().Get("labelSelector"))
			ls, _ := metav1.LabelSelectorAsSelector(sel)
			if err := env.Client.List(r.Context(), &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: ls}); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			var items []any
			for _, p := range pods.Items {
				var cs []any
				for _, c := range p.Spec.Containers {
					cs = append(cs, map[string]any{"name": c.Name, "usage": map[string]string{"cpu": cpu.Load().(string), "memory": "100Mi"}})
				}
				items = append(items, map[string]any{"metadata": map[string]string{"name": p.Name, "namespace": ns}, "containers": cs})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "items": items})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestPodResources serves metrics.k8s.io through the API server's aggregation layer (an
// APIService whose Service is an ExternalName for the test's server) and checks usage against
// the controller's limits. The APIService is cluster-wide, so this test does not run in parallel.
func TestPodResources(t *testing.T) {
	ns := namespace(t)
	var cpu atomic.Value
	cpu.Store("500m")
	srv := metricsServer(t, ns, &cpu)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	portNum, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-server", Namespace: ns},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if err := env.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	metricsAPI := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"service": map[string]any{"namespace": ns, "name": "metrics-server", "port": portNum},
		},
	}}
	if err := env.Client.Create(ctx, metricsAPI); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), metricsAPI)
		// Other tests expect metrics.k8s.io not served: wait until it is gone.
		dc := discovery.NewDiscoveryClientForConfigOrDie(env.Config)
		testenv.Eventually(testCtx(t), t, "metrics.k8s.io no longer served", func() (bool, error) {
			_, err := dc.ServerResourcesForGroupVersion(metricsGroupVersion)
			return apierrors.IsNotFound(err), err
		})
	})

	operatorDeployment(t, ns, "limited", 1, nil, nil, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	})
	c := NewChecker(Config{})
	target := Target{OperatorName: "limited", Namespace: ns, Release: "limited"}
	got := checkUntil(t, c, target, "resources checked", func(h Result) bool {
		return h.Pods.Resources != api.VerdictNotChecked && h.Pods.Ready == 1 && h.Pods.Total == 1
	})
	if p := got.Pods; p.Resources != api.VerdictPassed || p.OverLimit != 0 || p.Health != api.Healthy {
		t.Fatalf("within limits: %+v, want resources Passed, Healthy", p)
	}

	cpu.Store("1500m")
	got = checkOnce(t, c, target)
	if p := got.Pods; p.Resources != api.VerdictFailed || p.OverLimit != 1 || p.Health != api.Degraded ||
		!hasMessage(p.Messages, "container manager uses 1500m cpu over its limit 1") {
		t.Fatalf("over the cpu limit: %+v, want resources Failed, Degraded", p)
	}
}
