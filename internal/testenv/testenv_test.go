package testenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1alpha1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e })
}

func TestLight_InstallsEveryProjectCRD(t *testing.T) {
	ctx := context.Background()
	crds, err := config.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) == 0 {
		t.Fatal("config/crd/bases holds no CRDs")
	}
	for _, want := range crds {
		var got apiextensionsv1.CustomResourceDefinition
		if err := env.Client.Get(ctx, client.ObjectKey{Name: want.Name}, &got); err != nil {
			t.Fatalf("CRD %s not installed: %v", want.Name, err)
		}
		if !established(&got) {
			t.Errorf("CRD %s is not Established", want.Name)
		}
	}
}

func TestLight_KubeconfigFileReachesTheAPIServer(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", env.Kubeconfig, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var nss corev1.NamespaceList
	if err := c.List(context.Background(), &nss); err != nil {
		t.Fatalf("listing namespaces through the kubeconfig file: %v", err)
	}
	if len(nss.Items) == 0 {
		t.Error("no namespaces listed")
	}
}

func TestLight_SchemaRejectsBadWerfBundle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bad := &werfv1alpha1.WerfBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"},
		Spec: werfv1alpha1.WerfBundleSpec{
			Registry: werfv1alpha1.RegistrySpec{URL: "https://ghcr.io/org/bundle:1.0.0"},
			Converge: werfv1alpha1.ConvergeSpec{ServiceAccountName: "deployer"},
		},
	}
	err := env.Client.Create(ctx, bad)
	if err == nil {
		t.Fatal("a WerfBundle with a scheme and a tag in its URL was accepted")
	}
	for _, want := range []string{"without a scheme", "must not carry a tag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
