package werfbundle

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// Tenant isolation, after Flux's multi-tenancy lockdown: whoever may create a WerfBundle in a
// namespace deploys into that namespace only, under its ServiceAccounts, with values from its
// ConfigMaps and Secrets. Another namespace takes bundles only from the namespaces its
// werf.io/accept-bundles-from annotation names; --werfbundle-allow-cross-namespace lifts the
// lockdown for single-tenant clusters.

// stepTenancy refuses a deploy into another namespace that does not accept bundles from the
// bundle's namespace: no poll, no Job, Ready=False with ReasonCrossNamespaceRefused. A change of
// the target namespace's annotation reconciles its bundles at once (see namespaceToBundles).
func (r *Reconciler) stepTenancy(ctx context.Context, s *scope) error {
	b := s.bundle
	if s.targetNS == b.Namespace {
		return nil
	}
	if r.AllowCrossNamespace {
		s.crossNamespace = true
		return nil
	}
	ns := metadataOf("Namespace")
	if err := r.Get(ctx, types.NamespacedName{Name: s.targetNS}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			s.fail(&failure{reason: ReasonTargetNamespaceAbsent, stalled: true, message: fmt.Sprintf(
				"target namespace %q does not exist; create it or fix spec.converge.targetNamespace", s.targetNS)})
			s.requeue(jitter(prerequisiteRetryPeriod))
			return stop("no namespace")
		}
		return err
	}
	if acceptsBundlesFrom(ns.Annotations[werfv1.AcceptBundlesFromAnnotation], b.Namespace) {
		s.crossNamespace = true
		return nil
	}
	msg := fmt.Sprintf("namespace %s does not accept bundles from namespace %s: annotate it with %s=%s (or %q), "+
		"or deploy into %s", s.targetNS, b.Namespace, werfv1.AcceptBundlesFromAnnotation, b.Namespace, "*", b.Namespace)
	if c := conditions.Get(b.Status.Conditions, conditions.Ready); c == nil || c.Reason != ReasonCrossNamespaceRefused {
		s.eventf(true, ReasonCrossNamespaceRefused, "Refused to deploy into another namespace: "+msg)
	}
	s.fail(&failure{reason: ReasonCrossNamespaceRefused, stalled: true, message: msg})
	return stop("cross-namespace deploy refused")
}

// acceptsBundlesFrom reads the annotation's value: "*", or namespaces separated by commas.
func acceptsBundlesFrom(value, namespace string) bool {
	for _, v := range strings.Split(value, ",") {
		if v = strings.TrimSpace(v); v != "" && (v == "*" || v == namespace) {
			return true
		}
	}
	return false
}

// valuesNamespaces are where valuesFrom sources are looked up, in order: the bundle's namespace,
// and the target namespace only when the bundle may deploy there (it accepted the bundle, or the
// operator allows every cross-namespace deploy).
func valuesNamespaces(s *scope) []string {
	if s.crossNamespace {
		return slices.Compact([]string{s.bundle.Namespace, s.targetNS})
	}
	return []string{s.bundle.Namespace}
}

// targetNamespaceKeys indexes a bundle by its target namespace.
func targetNamespaceKeys(o client.Object) []string {
	b := o.(*werfv1.WerfBundle)
	if t := b.Spec.Converge.TargetNamespace; t != "" && t != b.Namespace {
		return []string{t}
	}
	return nil
}

// namespaceToBundles maps a Namespace to the bundles of other namespaces deploying into it.
func (r *Reconciler) namespaceToBundles(ctx context.Context, o client.Object) []reconcile.Request {
	var list werfv1.WerfBundleList
	if err := r.List(ctx, &list, client.MatchingFields{indexTargetNamespace: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// namespaceChanges passes a Namespace's creation (bundles waiting for it go on) and a change of
// its werf.io/accept-bundles-from annotation (an opt-in or opt-out takes effect at once).
var namespaceChanges = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[werfv1.AcceptBundlesFromAnnotation] !=
			e.ObjectNew.GetAnnotations()[werfv1.AcceptBundlesFromAnnotation]
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
