package health

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// resourceState is one custom resource's reconciliation state, and who it blames.
type resourceState int

const (
	stateReady   resourceState = iota // Ready=True, or reconciled without a Ready condition
	statePending                      // being reconciled within the grace period
	// the operator's failures
	stateNotReconciling // the operator is not reconciling it (see judge)
	stateNewlyFailing   // Ready in the baseline, unchanged by its user, not Ready now
	// the tenant's failures: Ready=False while the operator reconciles it
	stateFailingBefore     // failing in the baseline already
	stateFailingReconciled // failing, created or changed by its user since the baseline (or no baseline)
	nStates
)

// The words of ResourceExample.Why, by state.
var stateWhy = [nStates]string{"", "", "notReconciling", "newlyFailing", "failingBefore", "failingReconciled"}

// verdict is the judgement of one resource: its state, the reason it reports (and reported in
// the baseline), and for a resource not reconciled, why.
type verdict struct {
	state              resourceState
	reason, baseReason string
	detail             string
	ready              bool
	generation         int64
	name, uid          string
}

// maxExamples bounds the examples per CRD and state in the health detail.
const maxExamples = 3

// checkCRDs lists the custom resources of every CRD of the target and judges each against the
// target's baseline (see judge).
func (c *Checker) checkCRDs(ctx context.Context, cl *clients, t Target) (api.ReconciliationStatus, map[string][]BaselineResource) {
	st := &crdPart{ReconciliationStatus: api.ReconciliationStatus{Health: api.Healthy, Messages: []string{},
		Examples: []api.ResourceExample{}, Baseline: t.Baseline.Summary()}}
	if len(t.CRDs) == 0 {
		st.Messages = append(st.Messages, "the operator has no CRDs: nothing to reconcile")
		return st.ReconciliationStatus, map[string][]BaselineResource{}
	}
	seen := map[string][]BaselineResource{}
	complete := true
	now := c.cfg.Now()
	for _, name := range t.CRDs {
		crd, err := cl.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			// A CRD not installed (yet) has no resources: what was seen is still complete.
			complete = complete && apierrors.IsNotFound(err)
			st.Health = api.Degraded
			st.Messages = append(st.Messages, notChecked(fmt.Sprintf("CRD %s: %v", name, err)))
			continue
		}
		st.CRDs++
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: storageVersion(crd), Resource: crd.Spec.Names.Plural}
		var counts [nStates]int
		cont := ""
		for {
			list, err := cl.dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if err != nil {
				st.Health, complete = api.Degraded, false
				st.Messages = append(st.Messages, notChecked(fmt.Sprintf("listing %s: %v", name, err)))
				break
			}
			for i := range list.Items {
				v := c.judge(&list.Items[i], now, t.Baseline)
				counts[v.state]++
				seen[name] = append(seen[name], BaselineResource{Name: v.name, UID: v.uid, Generation: v.generation, Ready: v.ready, Reason: v.reason})
				if v.state > statePending && st.examples(name, v.state) < maxExamples {
					st.Examples = append(st.Examples, v.example(name))
				}
			}
			if cont = list.GetContinue(); cont == "" {
				break
			}
		}
		st.add(name, counts, c.cfg.FreshFor)
	}
	st.judge(c.cfg.MaxErrorRate, t.Baseline == nil)
	if !complete {
		seen = nil
	}
	return st.ReconciliationStatus, seen
}

// crdPart is the reconciliation part while the checker builds it.
type crdPart struct {
	api.ReconciliationStatus
	notes []string // messages about the tenants' failures, after the operator's
}

// add counts one CRD's resources and says what counts against the operator.
func (st *crdPart) add(crd string, counts [nStates]int, grace time.Duration) {
	for _, n := range counts {
		st.Resources += n
	}
	st.Ready += counts[stateReady]
	st.Pending += counts[statePending]
	st.Stale += counts[stateNotReconciling]
	st.Failing += counts[stateNewlyFailing] + counts[stateFailingBefore] + counts[stateFailingReconciled]
	st.OperatorFailures.NotReconciling += counts[stateNotReconciling]
	st.OperatorFailures.NewlyFailing += counts[stateNewlyFailing]
	st.TenantFailures.FailingBefore += counts[stateFailingBefore]
	st.TenantFailures.FailingReconciled += counts[stateFailingReconciled]
	if n := counts[stateNotReconciling]; n > 0 {
		st.Messages = append(st.Messages, fmt.Sprintf("%s: %d not reconciled within %s (%v)", crd, n, grace, st.names(crd, stateNotReconciling)))
	}
	if n := counts[stateNewlyFailing]; n > 0 {
		st.Messages = append(st.Messages, fmt.Sprintf("%s: %d Ready before, not Ready now (%v)", crd, n, st.names(crd, stateNewlyFailing)))
	}
	if n := counts[stateFailingBefore] + counts[stateFailingReconciled]; n > 0 {
		st.notes = append(st.notes, fmt.Sprintf("%s: %d Ready=False while reconciled: the tenants' (%d failing before, %d since)",
			crd, n, counts[stateFailingBefore], counts[stateFailingReconciled]))
	}
}

// judge sets the part's health from the operator's failures only: the tenants' never count.
func (st *crdPart) judge(maxRate float64, noBaseline bool) {
	// What does not count against the operator comes after what does (a summary shows the first).
	st.Messages = append(st.Messages, st.notes...)
	st.notes = nil
	if noBaseline {
		st.Messages = append(st.Messages, "no baseline: resources Ready=False while reconciled count as the tenants', none as newly failing")
	}
	if st.Resources == 0 {
		return
	}
	ops := st.OperatorFailures.NotReconciling + st.OperatorFailures.NewlyFailing
	st.ErrorRate = float64(ops) / float64(st.Resources)
	switch {
	case st.ErrorRate >= maxRate:
		st.Health = api.Unhealthy
	case ops > 0:
		st.Health = worst(st.Health, api.Degraded)
	}
}

func (st *crdPart) examples(crd string, s resourceState) int {
	n := 0
	for _, e := range st.Examples {
		if e.CRD == crd && e.Why == stateWhy[s] {
			n++
		}
	}
	return n
}

func (st *crdPart) names(crd string, s resourceState) []string {
	var out []string
	for _, e := range st.Examples {
		if e.CRD == crd && e.Why == stateWhy[s] {
			out = append(out, e.Name)
		}
	}
	return out
}

func (v verdict) example(crd string) api.ResourceExample {
	blame := BlameTenant
	if v.state == stateNotReconciling || v.state == stateNewlyFailing {
		blame = BlameOperator
	}
	return api.ResourceExample{CRD: crd, Name: v.name, Blame: blame, Why: stateWhy[v.state], Reason: v.reason, BaselineReason: v.baseReason, Detail: v.detail}
}
