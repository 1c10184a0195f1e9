package webapp

import (
	"context"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// scaleValidator applies the replica bound to updates of webapps/scale (kubectl scale,
// autoscalers), which carry an autoscaling/v1 Scale and never reach the WebApp validator.
type scaleValidator struct {
	maxReplicas int32
	decoder     admission.Decoder
}

func (s *scaleValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	scale := &autoscalingv1.Scale{}
	if err := s.decoder.DecodeRaw(req.Object, scale); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if len(req.OldObject.Raw) > 0 {
		old := &autoscalingv1.Scale{}
		if err := s.decoder.DecodeRaw(req.OldObject, old); err == nil && old.Spec.Replicas == scale.Spec.Replicas {
			return admission.Allowed("")
		}
	}
	errs := validateReplicas(&scale.Spec.Replicas, s.maxReplicas, field.NewPath("spec", "replicas"))
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	st := apierrors.NewInvalid(groupKind, req.Name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &st}}
}
