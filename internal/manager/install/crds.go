package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// chartCRDs decodes the CRDs of the chart's crds/ directory, in file order.
func chartCRDs(ch *chart.Chart) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range ch.CRDObjects() {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(f.File.Data), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, invalid.Reasoned("chart", "format", err, "chart %s: %s is not YAML: %v", ch.Name(), f.Filename, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.GroupVersionKind() != apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition") {
				return nil, invalid.Field("chart", "chart %s: %s holds a %s, not a CustomResourceDefinition", ch.Name(), f.Filename, u.GroupVersionKind().Kind)
			}
			if u.GetName() == "" {
				return nil, invalid.Field("chart", "chart %s: a CustomResourceDefinition in %s has no name", ch.Name(), f.Filename)
			}
			out = append(out, &u)
		}
	}
	return out, nil
}

// applyCRDs applies crds server-side (FieldManager, conflicts forced) and waits until each is
// Established and its names accepted, at most until ctx ends. It returns their names.
func applyCRDs(ctx context.Context, s *session, crds []*unstructured.Unstructured) ([]string, error) {
	client := s.dynamic.Resource(crdResource)
	names := make([]string, 0, len(crds))
	for _, c := range crds {
		body, err := json.Marshal(c.Object)
		if err != nil {
			return nil, err
		}
		force := true
		if _, err := client.Patch(ctx, c.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
			return nil, fmt.Errorf("applying CustomResourceDefinition %s: %w", c.GetName(), err)
		}
		names = append(names, c.GetName())
	}
	for _, name := range names {
		var last string
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			u, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			var crd apiextensionsv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
				return false, err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
					return false, fmt.Errorf("CustomResourceDefinition %s: names not accepted: %s", name, cond.Message)
				}
				if cond.Type == apiextensionsv1.Established {
					if cond.Status == apiextensionsv1.ConditionTrue {
						return true, nil
					}
					last = cond.Message
				}
			}
			return false, nil
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("CustomResourceDefinition %s not Established in time (%s): %w", name, last, err)
			}
			return nil, err
		}
	}
	return names, nil
}
