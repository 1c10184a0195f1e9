package crds

import (
	"context"
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// A dropped CRD. An operator version that no longer ships a CRD an earlier version shipped
// leaves the CRD's objects without a controller, and Helm deletes a CRD it installed from the
// chart's templates on upgrade, with every object of it. Dropping a CRD is therefore breaking
// exactly when a cluster stores objects of it; with no object stored anywhere it is compatible.

// maxNamedDropped bounds the objects StoredObjects names (it counts them all).
const maxNamedDropped = 100

// StoredObjects lists the objects a cluster stores of CRD name, for a version that drops the
// CRD: Installed is whether the cluster has the CRD, Objects how many objects it stores, and
// Invalid names them (at most maxNamedDropped), each with reason as its error.
func StoredObjects(ctx context.Context, dyn dynamic.Interface, name, reason string) (*Existing, error) {
	res := &Existing{Invalid: []InvalidObject{}}
	u, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return res, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	current := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), current); err != nil {
		return nil, fmt.Errorf("decoding CRD %s: %w", name, err)
	}
	res.Installed = true
	version := servedVersion(current, "")
	if version == "" {
		return res, nil
	}
	gvr := schema.GroupVersionResource{Group: current.Spec.Group, Version: version, Resource: current.Spec.Names.Plural}
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		list, err := dyn.Resource(gvr).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		res.Objects += len(list.Items)
		for i := range list.Items {
			if len(res.Invalid) < maxNamedDropped {
				res.Invalid = append(res.Invalid, InvalidObject{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName(),
					Version: version, Errors: []string{reason}})
			}
		}
		if list.GetContinue() == "" {
			break
		}
		opts.Continue = list.GetContinue()
	}
	sort.Slice(res.Invalid, func(i, j int) bool {
		if res.Invalid[i].Namespace != res.Invalid[j].Namespace {
			return res.Invalid[i].Namespace < res.Invalid[j].Namespace
		}
		return res.Invalid[i].Name < res.Invalid[j].Name
	})
	return res, nil
}
