package install

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// crdPage is how many CRDs a switch reads at a time: a cluster's CRDs with their schemas can
// weigh tens of megabytes. A variable for tests.
var crdPage int64 = 100

// eachCRD calls fn with every CRD of the cluster, crdPage at a time.
func eachCRD(ctx context.Context, s *session, fn func(*unstructured.Unstructured) error) error {
	opts := metav1.ListOptions{Limit: crdPage}
	for {
		list, err := s.dynamic.Resource(crdResource).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing CustomResourceDefinitions: %w", err)
		}
		for i := range list.Items {
			if err := fn(&list.Items[i]); err != nil {
				return err
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// conversionClientConfig is the CRD's conversion webhook clientConfig, nil without one.
func conversionClientConfig(u *unstructured.Unstructured) map[string]any {
	cc, _, _ := unstructured.NestedMap(u.Object, "spec", "conversion", "webhook", "clientConfig")
	return cc
}

// conversionPatch is the patch giving u's conversion webhook clientConfig want, exactly, and
// setting (or with nil removing) its SwitchedFromAnnotation.
func conversionPatch(u *unstructured.Unstructured, want map[string]any, annotation any) change {
	cc := conversionClientConfig(u)
	c := change{gvr: crdResource, name: u.GetName(), patch: map[string]any{
		"metadata": metaPatch(u, SwitchedFromAnnotation, annotation),
		"spec":     map[string]any{"conversion": map[string]any{"webhook": map[string]any{"clientConfig": replacing(cc, want)}}},
	}}
	if !jsonEqual(cc, want) {
		c.crds = 1
	}
	return c
}

// switchConversions are the patches re-pointing to green the conversion webhooks that call a
// Service of blue's release in blue's namespace (or that an earlier switch from blue re-pointed).
func (g *greenTargets) switchConversions(ctx context.Context, s *session) ([]change, error) {
	blueServices := map[string]bool{}
	var out []change
	err := eachCRD(ctx, s, func(u *unstructured.Unstructured) error {
		rec, err := readRecord(u)
		if err != nil {
			return err
		}
		cc := conversionClientConfig(u)
		from := cc
		if rec != nil {
			if rec.Blue != g.blue || rec.Conversion == nil {
				return nil
			}
			from = rec.Conversion
		} else {
			strategy, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "strategy")
			svc, _ := cc["service"].(map[string]any)
			if strategy != "Webhook" || svc == nil || svc["namespace"] != g.blue.Namespace {
				return nil
			}
			name, _ := svc["name"].(string)
			owned, known := blueServices[name]
			if !known {
				if owned, err = g.blueService(ctx, s, name); err != nil {
					return err
				}
				blueServices[name] = owned
			}
			if !owned {
				return nil
			}
			rec = &switchRecord{Conversion: runtime.DeepCopyJSON(cc)}
		}
		before, _ := json.Marshal(rec)
		rec.Blue, rec.Green = g.blue, g.green
		after, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		want, ok, err := g.retarget(ctx, s, "the conversion webhook of CustomResourceDefinition "+u.GetName(), from)
		if err != nil || !ok || (jsonEqual(cc, want) && string(before) == string(after)) {
			return err
		}
		out = append(out, conversionPatch(u, want, string(after)))
		return nil
	})
	return out, err
}

// blueService tells whether blue's namespace has a Service name of blue's release.
func (g *greenTargets) blueService(ctx context.Context, s *session, name string) (bool, error) {
	svc, err := s.clientset.CoreV1().Services(g.blue.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading blue's Service %s/%s: %w", g.blue.Namespace, name, err)
	}
	return owns(g.blue, svc), nil
}

// restoreConversions are the patches giving the CRDs switched from blue their original
// conversion webhook clientConfig back and removing the annotation.
func restoreConversions(ctx context.Context, s *session, blue Side) ([]change, error) {
	var out []change
	err := eachCRD(ctx, s, func(u *unstructured.Unstructured) error {
		rec, err := readRecord(u)
		if err != nil || rec == nil || rec.Blue != blue {
			return err
		}
		if rec.Conversion == nil {
			out = append(out, change{gvr: crdResource, name: u.GetName(), patch: map[string]any{"metadata": metaPatch(u, SwitchedFromAnnotation, nil)}})
			return nil
		}
		out = append(out, conversionPatch(u, rec.Conversion, nil))
		return nil
	})
	return out, err
}

// replacing is the merge patch turning cur into want: want, with null for every key (at any
// depth) cur has and want lacks.
func replacing(cur, want map[string]any) map[string]any {
	out := make(map[string]any, len(want))
	for k, v := range want {
		cm, cok := cur[k].(map[string]any)
		wm, wok := v.(map[string]any)
		if cok && wok {
			out[k] = replacing(cm, wm)
			continue
		}
		out[k] = v
	}
	for k := range cur {
		if _, ok := want[k]; !ok {
			out[k] = nil
		}
	}
	return out
}
