package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/slipway-dev/slipway/internal/joblog"
)

// The in-cluster verbs talk to the cluster through client-go's dynamic client, at the resources
// they know (no discovery), and decode into slipway's typed api/ types
// (runtime.DefaultUnstructuredConverter); pod logs come from joblog.PodLogs over a core/v1 REST
// client. Neither controller-runtime's client, client-go's typed clientset, its scheme of every
// API group, discovery nor cli-runtime is linked: they kept the binary at 30 MB and more
// (docs/cli.md; cmd/slipway's TestDeps_NoHeavyKubeClient guards it).

// kubeObject is what the in-cluster verbs read: a typed object with metadata.
type kubeObject interface {
	metav1.Object
	runtime.Object
}

// kubeConn is what an in-cluster verb talks to the cluster with.
type kubeConn struct {
	dyn  dynamic.Interface
	logs joblog.PodLogs
	// namespace is -n, else the kubeconfig context's, else "default".
	namespace string
}

// The built-in resources the verbs read; always served, so not looked up.
var (
	podsResource       = corev1.SchemeGroupVersion.WithResource("pods")
	configMapsResource = corev1.SchemeGroupVersion.WithResource("configmaps")
	namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")
	jobsResource       = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

// kubeConn connects to the cluster of the kubeconfig flags.
func (f *Factory) kubeConn() (*kubeConn, error) {
	errNone := errors.New("no kubeconfig: set KUBECONFIG or pass --kubeconfig, as for kubectl")
	// An empty kubeconfig would mean kubectl's last resort, localhost:8080, outside a pod.
	if raw, err := f.KubeConfig.ToRawKubeConfigLoader().RawConfig(); err == nil && len(raw.Contexts) == 0 &&
		os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return nil, errNone
	}
	cfg, err := f.KubeConfig.ToRESTConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errNone
		}
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg.UserAgent = "slipway/" + versionString()
	ns, _, err := f.KubeConfig.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig's namespace: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	logs, err := joblog.NewPodLogs(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return &kubeConn{dyn: dyn, logs: logs, namespace: ns}, nil
}

// resource is the dynamic client of a kind's resource. Its name is known (slipway's CRDs), so no
// discovery: a kind the cluster does not serve shows as errNotServed (served).
func (kc *kubeConn) resource(k *kubeKind) dynamic.NamespaceableResourceInterface {
	return kc.dyn.Resource(k.gvk.GroupVersion().WithResource(k.resource))
}

// errNotServed: the cluster serves no such resource (its CRD is not installed).
var errNotServed = errors.New("the cluster does not serve the resource")

// served tells a resource the cluster does not serve from an object that is not there: both
// answer NotFound, but only the first also answers NotFound to a list. It returns err, wrapped
// with errNotServed in the first case.
func (kc *kubeConn) served(ctx context.Context, k *kubeKind, namespace string, err error) error {
	if !apierrors.IsNotFound(err) {
		return err
	}
	if _, lerr := kc.resource(k).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1}); apierrors.IsNotFound(lerr) {
		return fmt.Errorf("%w: %w", errNotServed, err)
	}
	return err
}

// fromUnstructured decodes what the dynamic client read into a typed object.
func fromUnstructured(u *unstructured.Unstructured, into runtime.Object) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), into); err != nil {
		return fmt.Errorf("decoding %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// getInto reads one object of the resource into a typed object; API errors come back as they are.
func getInto(ctx context.Context, r dynamic.NamespaceableResourceInterface, namespace, name string, into runtime.Object) error {
	u, err := r.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return fromUnstructured(u, into)
}

// getObject reads the kind's object at namespace/name; API errors come back as they are.
func (kc *kubeConn) getObject(ctx context.Context, k *kubeKind, namespace, name string) (kubeObject, error) {
	o := k.newObj()
	return o, kc.served(ctx, k, namespace, getInto(ctx, kc.resource(k), namespace, name, o))
}

// listObjects reads the kind's objects in namespace ("" all).
func (kc *kubeConn) listObjects(ctx context.Context, k *kubeKind, namespace string) ([]kubeObject, error) {
	l, err := kc.resource(k).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, kc.served(ctx, k, namespace, err)
	}
	out := make([]kubeObject, 0, len(l.Items))
	for i := range l.Items {
		o := k.newObj()
		if err := fromUnstructured(&l.Items[i], o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// watchObjects watches the kind's objects in namespace; events carry typed objects (kubeObject),
// or the API's Status for errors.
func (kc *kubeConn) watchObjects(ctx context.Context, k *kubeKind, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := kc.resource(k).Namespace(namespace).Watch(ctx, opts)
	if err != nil {
		return nil, kc.served(ctx, k, namespace, err)
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Error {
			o := k.newObj()
			if err := fromUnstructured(u, o); err != nil {
				return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}}, true
			}
			ev.Object = o
		}
		return ev, true
	}), nil
}

// patchObject sends the changes from before to o as a JSON merge patch (controller-runtime's
// MergeFrom: no resourceVersion, the last writer wins on the fields it names) and reads the
// answer back into o.
func (kc *kubeConn) patchObject(ctx context.Context, k *kubeKind, before, o kubeObject) error {
	from, err := json.Marshal(before)
	if err != nil {
		return err
	}
	to, err := json.Marshal(o)
	if err != nil {
		return err
	}
	patch, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return fmt.Errorf("computing the patch: %w", err)
	}
	u, err := kc.resource(k).Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return kc.served(ctx, k, o.GetNamespace(), err)
	}
	return fromUnstructured(u, o)
}

// deleteObject deletes the kind's object if it still has that uid.
func (kc *kubeConn) deleteObject(ctx context.Context, k *kubeKind, o kubeObject) error {
	uid := o.GetUID()
	err := kc.resource(k).Namespace(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	return kc.served(ctx, k, o.GetNamespace(), err)
}

// ListPods implements joblog.PodLister.
func (kc *kubeConn) ListPods(ctx context.Context, namespace string, set map[string]string) ([]corev1.Pod, error) {
	l, err := kc.dyn.Resource(podsResource).Namespace(namespace).List(ctx,
		metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
	if err != nil {
		return nil, err
	}
	pods := make([]corev1.Pod, len(l.Items))
	for i := range l.Items {
		if err := fromUnstructured(&l.Items[i], &pods[i]); err != nil {
			return nil, err
		}
	}
	return pods, nil
}
