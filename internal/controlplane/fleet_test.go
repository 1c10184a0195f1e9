package controlplane

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Two servers over one etcd are two clusters: an object made in one is absent from the other, a
// credential of one is refused by the other, and stopping one leaves the other serving.
func TestFleetServersAreIndependentClusters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, err := StartFleet(ctx, FleetOptions{Servers: 2, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	a, b := clientset(t, f.Servers[0].Kubeconfig), clientset(t, f.Servers[1].Kubeconfig)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-a"}}
	if _, err := a.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace made in cluster-0, read from cluster-1: want NotFound, got %v", err)
	}

	// cluster-0's admin credential against cluster-1's server: refused (TLS or 401).
	cfg := *f.Servers[0].Config
	cfg.Host = f.Servers[1].Config.Host
	cfg.TLSClientConfig.Insecure, cfg.TLSClientConfig.CAData = true, nil
	cross, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cross.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("cluster-0's credential on cluster-1: want 401, got %v", err)
	}

	if rss, err := f.Servers[0].RSS(); err != nil || rss < 10<<20 {
		t.Fatalf("kube-apiserver RSS %d bytes, %v", rss, err)
	}
	if rss, err := f.EtcdRSS(); err != nil || rss < 1<<20 {
		t.Fatalf("etcd RSS %d bytes, %v", rss, err)
	}
	if err := f.Servers[0].Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("cluster-1 after stopping cluster-0: %v", err)
	}
	if _, err := a.Discovery().ServerVersion(); err == nil {
		t.Fatal("cluster-0 answers after Stop")
	}
}

func clientset(t *testing.T, kubeconfig []byte) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
