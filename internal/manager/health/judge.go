package health

import (
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// judge says whether one custom resource counts against the operator at now, given the baseline
// (nil when there is none). The operator is blamed when it is not reconciling the resource:
//
//   - no status at all, FreshFor after its creation;
//   - status.observedGeneration (or its Ready condition's) behind metadata.generation FreshFor
//     after the spec last changed (the newest managedFields entry that is not the status
//     subresource's; the Ready condition's lastTransitionTime, then creation, without them);
//   - without any observedGeneration: a spec changed after the status was last written, and
//     FreshFor ago (both from managedFields);
//   - a Reconciling condition True for longer than FreshFor;
//
// or when the resource fails newly: Ready (and at the same generation) in the baseline, Ready=False
// now. A resource Ready=False while reconciled is otherwise the tenant's: failing in the baseline
// already (whatever its reason now; both are shown), or created or changed by its user since.
func (c *Checker) judge(u *unstructured.Unstructured, now time.Time, base *Baseline) verdict {
	v := verdict{name: objectName(u), uid: string(u.GetUID()), generation: u.GetGeneration()}
	ready, reconciling := conditions(u)
	if ready != nil {
		v.reason, _ = ready["reason"].(string)
	}
	v.ready = ready == nil || ready["status"] == "True"
	if s := c.notReconciling(u, now, ready, reconciling); s != "" {
		v.state, v.detail, v.ready = stateNotReconciling, s, false
		return v
	}
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	switch {
	case len(status) == 0 || lagging(u, ready):
		v.state, v.ready = statePending, false
		return v
	case ready == nil || ready["status"] == "True":
		v.state = stateReady
		return v
	case ready["status"] != "False":
		v.state = statePending // Unknown: being reconciled
		return v
	}
	v.state = stateFailingReconciled
	if base == nil {
		return v
	}
	b := base.resource(v.uid)
	switch {
	case b == nil:
		// created after the baseline: its failure, reported by a reconciling operator, is its user's
	case !b.Ready:
		v.state, v.baseReason = stateFailingBefore, b.Reason
	case b.Generation == v.generation && base.Source == BaselineDeploymentStart:
		// Ready when the deployment started, failing under the version it installed.
		v.state, v.baseReason = stateNewlyFailing, "Ready"
	}
	// Against the last Healthy check (no version changed since), a resource that turned
	// Ready=False while its operator reconciles it reports its own trouble: its tenant's.
	return v
}

// notReconciling says why the operator is not reconciling u ("" when it is, or it is too soon
// to tell).
func (c *Checker) notReconciling(u *unstructured.Unstructured, now time.Time, ready, reconciling map[string]any) string {
	late := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) > c.cfg.FreshFor }
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	specAt, statusAt := fieldTimes(u)
	switch gen, observed := u.GetGeneration(), observedGeneration(u, ready); {
	case len(status) == 0:
		if created := u.GetCreationTimestamp().Time; late(created) {
			return fmt.Sprintf("no status %s after its creation", now.Sub(created).Round(time.Second))
		}
	case observed > 0 && observed < gen:
		since := firstOf(specAt, condTime(ready), u.GetCreationTimestamp().Time)
		if late(since) {
			return fmt.Sprintf("observedGeneration %d behind generation %d for %s", observed, gen, now.Sub(since).Round(time.Second))
		}
	case observed == 0 && !specAt.IsZero() && !statusAt.IsZero() && specAt.After(statusAt) && late(specAt):
		return fmt.Sprintf("spec changed %s ago, status not written since", now.Sub(specAt).Round(time.Second))
	}
	if reconciling != nil && reconciling["status"] == "True" {
		if since := condTime(reconciling); late(since) {
			return fmt.Sprintf("Reconciling for %s", now.Sub(since).Round(time.Second))
		}
	}
	return ""
}

// lagging reports whether u's observed generation is behind its generation (within the grace
// period when notReconciling passed it).
func lagging(u *unstructured.Unstructured, ready map[string]any) bool {
	observed := observedGeneration(u, ready)
	return observed > 0 && observed < u.GetGeneration()
}

// conditions are u's Ready and Reconciling conditions (nil when absent).
func conditions(u *unstructured.Unstructured) (ready, reconciling map[string]any) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok {
			switch m["type"] {
			case "Ready":
				ready = m
			case "Reconciling":
				reconciling = m
			}
		}
	}
	return ready, reconciling
}

// observedGeneration is the newest of status.observedGeneration and the Ready condition's.
func observedGeneration(u *unstructured.Unstructured, ready map[string]any) int64 {
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if og, ok := ready["observedGeneration"].(int64); ok && og > observed {
		observed = og
	}
	return observed
}

func condTime(cond map[string]any) time.Time {
	s, _ := cond["lastTransitionTime"].(string)
	t, _ := time.Parse(time.RFC3339, s)
	return t
}

// fieldTimes are when u's spec (or metadata) and its status were last written, from
// managedFields (zero when it has none).
func fieldTimes(u *unstructured.Unstructured) (spec, status time.Time) {
	for _, mf := range u.GetManagedFields() {
		if mf.Time == nil {
			continue
		}
		t := mf.Time.Time
		if mf.Subresource == "status" {
			status = later(status, t)
		} else {
			spec = later(spec, t)
		}
	}
	return spec, status
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func firstOf(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
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
