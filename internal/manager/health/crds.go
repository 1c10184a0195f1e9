package health

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resourceState is one custom resource's reconciliation state.
type resourceState int

const (
	stateReady resourceState = iota
	stateFailing
	stateStale
	statePending
)

// checkCRDs lists the custom resources of every CRD of the target and judges their Ready
// conditions.
func (c *Checker) checkCRDs(ctx context.Context, cl *clients, t Target) CRDStatus {
	st := CRDStatus{Health: Healthy, Messages: []string{}}
	if len(t.CRDs) == 0 {
		st.Messages = append(st.Messages, "the operator has no CRDs: nothing to reconcile")
		return st
	}
	now := c.cfg.Now()
	for _, name := range t.CRDs {
		crd, err := cl.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			st.Health = Degraded
			st.Messages = append(st.Messages, notChecked(fmt.Sprintf("CRD %s: %v", name, err)))
			continue
		}
		st.CRDs++
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: storageVersion(crd), Resource: crd.Spec.Names.Plural}
		var counts [4]int
		var examples [4][]string
		cont := ""
		for {
			list, err := cl.dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if err != nil {
				st.Health = Degraded
				st.Messages = append(st.Messages, notChecked(fmt.Sprintf("listing %s: %v", name, err)))
				break
			}
			for i := range list.Items {
				s := c.classify(&list.Items[i], now)
				counts[s]++
				if len(examples[s]) < 3 {
					examples[s] = append(examples[s], objectName(&list.Items[i]))
				}
			}
			if cont = list.GetContinue(); cont == "" {
				break
			}
		}
		st.Resources += counts[stateReady] + counts[stateFailing] + counts[stateStale] + counts[statePending]
		st.Ready += counts[stateReady]
		st.Failing += counts[stateFailing]
		st.Stale += counts[stateStale]
		st.Pending += counts[statePending]
		if n := counts[stateFailing]; n > 0 {
			st.Messages = append(st.Messages, fmt.Sprintf("%s: %d Ready=False (%v)", name, n, examples[stateFailing]))
		}
		if n := counts[stateStale]; n > 0 {
			st.Messages = append(st.Messages, fmt.Sprintf("%s: %d not reconciled within %s (%v)", name, n, c.cfg.FreshFor, examples[stateStale]))
		}
	}
	if st.Resources > 0 {
		st.ErrorRate = float64(st.Failing) / float64(st.Resources)
		staleRate := float64(st.Stale) / float64(st.Resources)
		switch {
		case st.ErrorRate >= c.cfg.MaxErrorRate || staleRate >= c.cfg.MaxErrorRate:
			st.Health = Unhealthy
		case st.Failing > 0 || st.Stale > 0:
			st.Health = worst(st.Health, Degraded)
		}
	}
	return st
}

// classify judges one custom resource at now: Failing when Ready=False; Ready when Ready=True and
// fresh (observedGeneration, top-level or the condition's, equals metadata.generation, or the
// condition changed within FreshFor); Pending when it has no Ready condition yet but was created
// within FreshFor, or Ready=Unknown and fresh; Stale otherwise.
func (c *Checker) classify(u *unstructured.Unstructured, now time.Time) resourceState {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var ready map[string]any
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok && m["type"] == "Ready" {
			ready = m
		}
	}
	recent := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) <= c.cfg.FreshFor }
	if ready == nil {
		if recent(u.GetCreationTimestamp().Time) {
			return statePending
		}
		return stateStale
	}
	if ready["status"] == "False" {
		return stateFailing
	}
	gen := u.GetGeneration()
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if og, ok := ready["observedGeneration"].(int64); ok && og > observed {
		observed = og
	}
	var ltt time.Time
	if s, ok := ready["lastTransitionTime"].(string); ok {
		ltt, _ = time.Parse(time.RFC3339, s)
	}
	fresh := (observed != 0 && observed == gen) || recent(ltt)
	switch {
	case !fresh:
		return stateStale
	case ready["status"] == "True":
		return stateReady
	default:
		return statePending
	}
}

// storageVersion is the CRD's storage version (the first served one if none is marked).
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			return v.Name
		}
	}
	return ""
}

func objectName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}
