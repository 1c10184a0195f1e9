package catalyst

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// LimitRangeName is the LimitRange made in every environment namespace that has a quota.
const LimitRangeName = "catalyst-defaults"

// Derived container defaults: a container that sets no limits gets a quarter of the quota, one
// that sets no requests a tenth. A quarter leaves room for two replicas and a rolling update's
// surge pod; a tenth keeps the scheduler's view of a container small.
const (
	defaultLimitDivisor   = 4
	defaultRequestDivisor = 10
)

// errContainerDefaults marks container defaults that cannot be applied.
var errContainerDefaults = errors.New("invalid container defaults")

// effectiveQuota is the environment's quota, else the Project's default, nil for none.
func effectiveQuota(env *catalystv1alpha1.Environment, project *catalystv1alpha1.Project) *catalystv1alpha1.Quota {
	if q := env.Spec.Resources.Quota; q != nil {
		return q
	}
	return project.Spec.Resources.DefaultQuota
}

// desiredLimitRange is the namespace's LimitRange: the Project's containerDefaults, the values
// they leave empty derived from the quota. nil when there is nothing to default. A request above
// its limit, or a limit above the quota, is an errContainerDefaults.
func desiredLimitRange(env *catalystv1alpha1.Environment, project *catalystv1alpha1.Project, ns string) (*corev1.LimitRange, error) {
	q := effectiveQuota(env, project)
	var set catalystv1alpha1.ContainerDefaults
	if d := project.Spec.Resources.ContainerDefaults; d != nil {
		set = *d
	}
	limits, requests := corev1.ResourceList{}, corev1.ResourceList{}
	for _, r := range []struct {
		name           corev1.ResourceName
		quota          *resource.Quantity
		request, limit *resource.Quantity
	}{
		{corev1.ResourceCPU, quotaOf(q, corev1.ResourceCPU), amountOf(set.Requests, corev1.ResourceCPU), amountOf(set.Limits, corev1.ResourceCPU)},
		{corev1.ResourceMemory, quotaOf(q, corev1.ResourceMemory), amountOf(set.Requests, corev1.ResourceMemory), amountOf(set.Limits, corev1.ResourceMemory)},
	} {
		limit, request := r.limit, r.request
		if limit == nil && r.quota != nil {
			limit = fraction(*r.quota, defaultLimitDivisor)
		}
		if request == nil && r.quota != nil {
			request = fraction(*r.quota, defaultRequestDivisor)
		}
		if limit != nil && request != nil && request.Cmp(*limit) > 0 {
			if r.request == nil {
				// The derived request does not fit an explicit small limit: follow the limit.
				request = limit
			} else {
				return nil, fmt.Errorf("%w: the default %s request %s is above the default limit %s", errContainerDefaults, r.name, request, limit)
			}
		}
		if limit != nil && r.quota != nil && limit.Cmp(*r.quota) > 0 {
			return nil, fmt.Errorf("%w: the default %s limit %s is above the environment's quota of %s", errContainerDefaults, r.name, limit, r.quota)
		}
		if limit != nil && request == nil {
			// What the API server would default it to; said here so the live object matches.
			request = limit
		}
		if limit != nil {
			limits[r.name] = *limit
		}
		if request != nil {
			requests[r.name] = *request
		}
	}
	if len(limits) == 0 && len(requests) == 0 {
		return nil, nil
	}
	item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer}
	if len(limits) > 0 {
		item.Default = limits
	}
	if len(requests) > 0 {
		item.DefaultRequest = requests
	}
	return &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: LimitRangeName, Namespace: ns, Labels: ownerLabels(env, ComponentEnvironment)},
		Spec:       corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}},
	}, nil
}

func quotaOf(q *catalystv1alpha1.Quota, name corev1.ResourceName) *resource.Quantity {
	if q == nil {
		return nil
	}
	if name == corev1.ResourceCPU {
		return q.CPU
	}
	return q.Memory
}

func amountOf(a *catalystv1alpha1.ComputeResources, name corev1.ResourceName) *resource.Quantity {
	if a == nil {
		return nil
	}
	if name == corev1.ResourceCPU {
		return a.CPU
	}
	return a.Memory
}

// fraction is q/n: binary amounts (memory in Ki, Mi, Gi) rounded down to whole Mi from 1Mi up,
// others in thousandths.
func fraction(q resource.Quantity, n int64) *resource.Quantity {
	if q.Format == resource.BinarySI {
		const mi = 1 << 20
		v := q.Value() / n
		if v >= mi {
			v = v / mi * mi
		}
		return resource.NewQuantity(v, resource.BinarySI)
	}
	return resource.NewMilliQuantity(q.MilliValue()/n, q.Format)
}

// describeLimitRange is the LimitRange's defaults in a line, for the NamespaceReady message.
func describeLimitRange(lr *corev1.LimitRange) string {
	if lr == nil || len(lr.Spec.Limits) == 0 {
		return ""
	}
	item := lr.Spec.Limits[0]
	var parts []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := item.DefaultRequest[r]
		lim, hasLim := item.Default[r]
		switch {
		case hasReq && hasLim:
			parts = append(parts, fmt.Sprintf("%s %s/%s", r, req.String(), lim.String()))
		case hasReq:
			parts = append(parts, fmt.Sprintf("%s request %s", r, req.String()))
		case hasLim:
			parts = append(parts, fmt.Sprintf("%s limit %s", r, lim.String()))
		}
	}
	return "container defaults (request/limit) " + strings.Join(parts, ", ")
}

// stepLimitRange keeps the namespace's LimitRange at desiredLimitRange; without one, a LimitRange
// the controller made before is deleted.
func (r *EnvironmentReconciler) stepLimitRange(ctx context.Context, s *envScope) error {
	want, err := desiredLimitRange(s.env, s.project, s.nsName)
	if err != nil {
		s.fail(&failure{condition: catalystv1alpha1.NamespaceReadyCondition, reason: catalystv1alpha1.InvalidContainerDefaultsReason,
			phase: catalystv1alpha1.PhaseFailed, stalled: true, message: err.Error() + "; fix the Project's spec.resources.containerDefaults"})
		return errStop
	}
	s.limits = describeLimitRange(want)
	live := &corev1.LimitRange{}
	key := types.NamespacedName{Namespace: s.nsName, Name: LimitRangeName}
	err = r.Get(ctx, key, live)
	if want == nil {
		if err == nil && live.Labels[LabelEnvironmentName] != "" {
			if err := r.Delete(ctx, live); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting LimitRange %s/%s: %w", s.nsName, LimitRangeName, err)
			}
		}
		return client.IgnoreNotFound(err)
	}
	if apierrors.IsNotFound(err) {
		if err = r.Create(ctx, want); err == nil || !apierrors.IsAlreadyExists(err) {
			return wrapf(err, "creating LimitRange %s/%s", s.nsName, LimitRangeName)
		}
		err = r.APIReader.Get(ctx, key, live)
	}
	if err != nil {
		return fmt.Errorf("reading LimitRange %s/%s: %w", s.nsName, LimitRangeName, err)
	}
	if equality.Semantic.DeepEqual(live.Spec, want.Spec) && hasAll(live.Labels, want.Labels) {
		return nil
	}
	base := live.DeepCopy()
	live.Labels = mergeMaps(live.Labels, want.Labels)
	live.Spec = want.Spec
	return wrapf(r.Patch(ctx, live, client.MergeFrom(base)), "updating LimitRange %s/%s", s.nsName, LimitRangeName)
}
