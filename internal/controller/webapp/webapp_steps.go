package webapp

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reasons used in conditions and events.
const (
	ReasonAvailable                = "Available"
	ReasonCreating                 = "Creating"
	ReasonRollingOut               = "RollingOut"
	ReasonScaling                  = "Scaling"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonInvalidSpec              = "InvalidSpec"
	ReasonNameConflict             = "NameConflict"
	ReasonWriteRefused             = "WriteRefused"
	ReasonWriteRetrying            = "WriteRetrying"
	ReasonDeleting                 = "Deleting"
	ReasonPending                  = "Pending"
)

// stepDeployment applies the Deployment when the live one lacks something the WebApp asks for.
func (r *Reconciler) stepDeployment(ctx context.Context, s *scope) error {
	app, live := s.app, s.liveDeployment
	desired, err := desiredDeployment(app, r.progressDeadlineSeconds())
	if err != nil {
		return s.fail(ReasonInvalidSpec, err.Error())
	}
	if err := s.controlled("Deployment", live); err != nil {
		return err
	}
	change, err := difference(desired, live)
	if err != nil || change == "" {
		return err
	}
	if s.deployment != nil {
		s.replicasChanged = live.Spec.Replicas == nil || *live.Spec.Replicas != replicasOf(app)
		s.templateChanged = live.Annotations[AnnotationSpecHash] != desired.Annotations[AnnotationSpecHash] ||
			strings.HasPrefix(change, ".spec.template")
	}
	if err := r.Apply(ctx, desired, fieldOwner, client.ForceOwnership); err != nil {
		return s.writeFailed("Deployment", err)
	}
	applied := &appsv1.Deployment{}
	if err := convert(desired, applied); err != nil {
		return err
	}
	r.writes.Record("Deployment", applied)
	ctrl.LoggerFrom(ctx).Info("Applied Deployment", "deployment", app.Name, "field", change, "created", s.deployment == nil)
	applies.WithLabelValues("Deployment").Inc()
	s.deployment, s.wroteDeployment = applied, true
	return nil
}

// stepService applies the Service when the live one lacks something the WebApp asks for.
func (r *Reconciler) stepService(ctx context.Context, s *scope) error {
	app, live := s.app, s.liveService
	desired, err := desiredService(app)
	if err != nil {
		return s.fail(ReasonInvalidSpec, err.Error())
	}
	if err := s.controlled("Service", live); err != nil {
		return err
	}
	change, err := difference(desired, live)
	if err != nil || change == "" {
		return err
	}
	if err := r.Apply(ctx, desired, fieldOwner, client.ForceOwnership); err != nil {
		return s.writeFailed("Service", err)
	}
	applied := &corev1.Service{}
	if err := convert(desired, applied); err != nil {
		return err
	}
	r.writes.Record("Service", applied)
	ctrl.LoggerFrom(ctx).Info("Applied Service", "service", app.Name, "field", change, "created", s.service == nil)
	applies.WithLabelValues("Service").Inc()
	s.service = applied
	return nil
}

// controlled sets the scope's object from live when it exists and fails the WebApp when another
// owner, or none, controls it: the operator does not take over what it did not create.
func (s *scope) controlled(kind string, live client.Object) error {
	app := s.app
	if live.GetUID() == "" {
		return nil
	}
	if !metav1.IsControlledBy(live, app) {
		owner := "nothing"
		if ref := metav1.GetControllerOf(live); ref != nil {
			owner = fmt.Sprintf("%s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
		}
		return s.fail(ReasonNameConflict, fmt.Sprintf(
			"%s %s/%s already exists and is controlled by %s, not by this WebApp; delete it or rename the WebApp",
			kind, app.Namespace, app.Name, owner))
	}
	switch o := live.(type) {
	case *appsv1.Deployment:
		s.deployment = o
	case *corev1.Service:
		s.service = o
	}
	return nil
}

// difference is the first field of desired the live object lacks ("" when none; "(absent)" when
// there is no live object, which was then left empty by Get).
func difference(desired runtime.ApplyConfiguration, live client.Object) (string, error) {
	if live.GetUID() == "" {
		return "(absent)", nil
	}
	want, err := toMap(desired)
	if err != nil {
		return "", err
	}
	have, err := toMap(live)
	if err != nil {
		return "", err
	}
	delete(want, "apiVersion")
	delete(want, "kind")
	return firstDifference(want, have, ""), nil
}

// writeFailed sorts a refused write: a request the API server will refuse again until something
// changes makes the WebApp Failed and Stalled with what to fix; anything else is retried with
// backoff.
func (s *scope) writeFailed(kind string, err error) error {
	name := s.app.Namespace + "/" + s.app.Name
	var hint string
	switch {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsRequestEntityTooLargeError(err):
		hint = "fix the WebApp spec; the field is named above (the WebApp's name is also a label value " +
			"and a Service name: at most 63 characters)"
	case apierrors.IsForbidden(err):
		hint = "grant the operator the rights in config/rbac/webapp/role.yaml, or lift the admission policy or quota named above"
	default:
		s.retrying = fmt.Sprintf("Writing %s %s failed, retrying with backoff: %v", kind, name, err)
		return fmt.Errorf("applying %s %s: %w", kind, name, err)
	}
	return s.fail(ReasonWriteRefused, fmt.Sprintf("%s %s could not be written: %v; %s", kind, name, err, hint))
}
