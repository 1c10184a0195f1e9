package crds

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// env is the package's control plane: a real etcd and kube-apiserver.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e }) }

// cluster holds the clients a test uses against env.
type cluster struct {
	dyn  dynamic.Interface
	ext  apiextensionsclient.Interface
	kube kubernetes.Interface
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := apiextensionsclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{dyn: dyn, ext: ext, kube: kube}
}

// installCRD creates crd, waits until it is established and deletes it when the test ends.
func (c *cluster) installCRD(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if err := c.tryInstallCRD(t, crd); err != nil {
		t.Fatal(err)
	}
}

// tryInstallCRD is installCRD for goroutines other than the test's: it returns what failed.
func (c *cluster) tryInstallCRD(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	crd = crd.DeepCopy()
	crd.ResourceVersion = ""
	if _, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	t.Cleanup(func() {
		err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting CRD %s: %v", crd.Name, err)
		}
	})
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established: %w", crd.Name, err)
	}
	return nil
}

func (c *cluster) namespace(t testing.TB, name string) {
	t.Helper()
	_, err := c.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// create makes a custom resource of crd's first version with spec. The API server validates
// it against the schema installed now.
func (c *cluster) create(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition, namespace, name string, spec map[string]any) {
	t.Helper()
	if err := c.tryCreate(crd, namespace, name, spec); err != nil {
		t.Fatal(err)
	}
}

// tryCreate is create for goroutines other than the test's.
func (c *cluster) tryCreate(crd *apiextensionsv1.CustomResourceDefinition, namespace, name string, spec map[string]any) error {
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       crd.Spec.Names.Kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       spec,
	}}
	if _, err := c.dyn.Resource(gvr).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", crd.Spec.Names.Kind, namespace, name, err)
	}
	return nil
}
