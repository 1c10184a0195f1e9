package werfbundle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/values"
)

type mergedValues struct {
	yaml []byte
	hash string
}

// loadValues reads spec.converge.valuesFrom in order, from the bundle's namespace or else, when
// the bundle may deploy there, the target namespace (valuesNamespaces), and merges them. Returns nil (and records a failure) when a required source
// is missing or unreadable as values.
func (r *Reconciler) loadValues(ctx context.Context, s *scope) (*mergedValues, error) {
	b := s.bundle
	var layers []map[string]any
	for i, ref := range b.Spec.Converge.ValuesFrom {
		kind, src := "ConfigMap", ref.ConfigMapRef
		if ref.SecretRef != nil {
			kind, src = "Secret", ref.SecretRef
		}
		if src == nil {
			continue
		}
		namespaces := valuesNamespaces(s)
		data, ns, err := r.readValuesSource(ctx, kind, src.Name, namespaces...)
		if err != nil {
			return nil, err
		}
		if data == nil {
			if src.Optional {
				continue
			}
			s.fail(&failure{reason: ReasonValuesInvalid, stalled: true, message: fmt.Sprintf(
				"valuesFrom[%d]: %s %q not found in namespace %s; create it or mark it optional",
				i, kind, src.Name, strings.Join(namespaces, " or "))})
			return nil, nil
		}
		layer, err := values.FromSource(values.Source{Kind: kind, Namespace: ns, Name: src.Name, Key: src.Key, Data: data})
		if err != nil {
			if src.Optional && errors.Is(err, values.ErrKeyNotFound) {
				continue
			}
			s.fail(&failure{reason: ReasonValuesInvalid, stalled: true, message: fmt.Sprintf("valuesFrom[%d]: %v", i, err)})
			return nil, nil
		}
		layers = append(layers, layer)
	}
	if len(layers) == 0 {
		return &mergedValues{}, nil
	}
	out, hash, err := values.Render(values.Merge(layers...))
	if err != nil {
		s.fail(&failure{reason: ReasonValuesInvalid, stalled: true, message: err.Error()})
		return nil, nil
	}
	return &mergedValues{yaml: out, hash: hash}, nil
}

// readValuesSource returns the data of a ConfigMap or Secret from the first namespace that has
// it, read uncached (Secrets are never cached by the operator). nil data means not found.
func (r *Reconciler) readValuesSource(ctx context.Context, kind, name string, namespaces ...string) (map[string][]byte, string, error) {
	for _, ns := range slices.Compact(slices.Clone(namespaces)) {
		key := types.NamespacedName{Namespace: ns, Name: name}
		switch kind {
		case "Secret":
			var sec corev1.Secret
			err := r.APIReader.Get(ctx, key, &sec)
			if err == nil {
				return sec.Data, ns, nil
			}
			if !apierrors.IsNotFound(err) {
				return nil, "", fmt.Errorf("reading Secret %s: %w", key, err)
			}
		default:
			var cm corev1.ConfigMap
			err := r.APIReader.Get(ctx, key, &cm)
			if err == nil {
				data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
				for k, v := range cm.BinaryData {
					data[k] = v
				}
				for k, v := range cm.Data {
					data[k] = []byte(v)
				}
				return data, ns, nil
			}
			if !apierrors.IsNotFound(err) {
				return nil, "", fmt.Errorf("reading ConfigMap %s: %w", key, err)
			}
		}
	}
	return nil, "", nil
}

// valuesSourceKeys indexes a bundle by the ConfigMaps and Secrets it reads values from, in both
// namespaces it looks in: "ConfigMap/<ns>/<name>".
func valuesSourceKeys(o client.Object) []string {
	b := o.(*werfv1.WerfBundle)
	target := b.Spec.Converge.TargetNamespace
	if target == "" {
		target = b.Namespace
	}
	var keys []string
	for _, ref := range b.Spec.Converge.ValuesFrom {
		kind, src := "ConfigMap", ref.ConfigMapRef
		if ref.SecretRef != nil {
			kind, src = "Secret", ref.SecretRef
		}
		if src == nil {
			continue
		}
		for _, ns := range slices.Compact([]string{b.Namespace, target}) {
			keys = append(keys, kind+"/"+ns+"/"+src.Name)
		}
	}
	return keys
}

// valuesSourceToBundles maps a ConfigMap or Secret change to the bundles reading values from it.
func (r *Reconciler) valuesSourceToBundles(kind string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list werfv1.WerfBundleList
		if err := r.List(ctx, &list, client.MatchingFields{indexValuesSource: kind + "/" + o.GetNamespace() + "/" + o.GetName()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, b := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
		return reqs
	}
}
