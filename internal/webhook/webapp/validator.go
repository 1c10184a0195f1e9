package webapp

import (
	"context"
	"errors"
	"fmt"

	"github.com/distribution/reference"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
)

// Validator checks a WebApp's spec on create and update.
type Validator struct {
	// MaxReplicas is the highest spec.replicas accepted.
	MaxReplicas int32
}

var _ admission.Validator[*webappv1.WebApp] = (*Validator)(nil)

// ValidateCreate implements admission.Validator.
func (v *Validator) ValidateCreate(_ context.Context, w *webappv1.WebApp) (admission.Warnings, error) {
	return v.result(w, nil)
}

// ValidateUpdate implements admission.Validator.
func (v *Validator) ValidateUpdate(_ context.Context, old, w *webappv1.WebApp) (admission.Warnings, error) {
	return v.result(w, old)
}

// ValidateDelete implements admission.Validator; deletion is never refused.
func (v *Validator) ValidateDelete(context.Context, *webappv1.WebApp) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) result(w, old *webappv1.WebApp) (admission.Warnings, error) {
	errs, warnings := v.validate(w, old)
	if len(errs) == 0 {
		return warnings, nil
	}
	return warnings, apierrors.NewInvalid(groupKind, w.Name, errs)
}

// validate returns every problem of w's spec. With old (an update), a problem in a field that did
// not change becomes a warning instead: the object was stored before the rule (or the bound)
// changed, and refusing every later write to it would also block relabelling and finalizer removal.
func (v *Validator) validate(w, old *webappv1.WebApp) (field.ErrorList, admission.Warnings) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	var warnings admission.Warnings
	add := func(changed bool, found field.ErrorList) {
		if changed {
			errs = append(errs, found...)
			return
		}
		for _, e := range found {
			warnings = append(warnings, e.Error()+" (tolerated: unchanged)")
		}
	}
	imageChanged := old == nil || old.Spec.Image != w.Spec.Image
	add(imageChanged, validateImage(w.Spec.Image, spec.Child("image")))
	add(old == nil || !ptr.Equal(old.Spec.Replicas, w.Spec.Replicas), validateReplicas(w.Spec.Replicas, v.MaxReplicas, spec.Child("replicas")))
	add(old == nil || old.Spec.Port != w.Spec.Port, validatePort(w.Spec.Port, spec.Child("port")))
	if imageChanged {
		if movingTag(w.Spec.Image) {
			warnings = append(warnings, fmt.Sprintf("%s: the tag %q moves; pin a version or a digest so every pod runs the same image",
				spec.Child("image"), latest))
		}
	}
	return errs, warnings
}

var errNoTag = errors.New(`must name a tag or a digest (for example nginx:1.25 or nginx@sha256:...); an implicit "latest" is not allowed`)

// parseImage parses image with the grammar container runtimes use (docker/distribution) and
// requires a tag or a digest: a bare name would mean "latest" and move under the pods' feet.
func parseImage(image string) (reference.Named, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil, err
	}
	if _, ok := named.(reference.Digested); ok {
		return named, nil
	}
	if _, ok := named.(reference.Tagged); ok {
		return named, nil
	}
	return nil, errNoTag
}

// movingTag reports whether image names the "latest" tag explicitly and no digest.
func movingTag(image string) bool {
	named, err := parseImage(image)
	if err != nil {
		return false
	}
	_, digested := named.(reference.Digested)
	tagged, ok := named.(reference.Tagged)
	return ok && !digested && tagged.Tag() == latest
}

const latest = "latest"

func validateImage(image string, path *field.Path) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(path, "an image with a tag or a digest, for example nginx:1.25")}
	}
	_, err := parseImage(image)
	switch {
	case errors.Is(err, errNoTag):
		return field.ErrorList{field.Invalid(path, image, err.Error())}
	case err != nil:
		return field.ErrorList{field.Invalid(path, image, "is not a valid image reference: "+err.Error())}
	}
	return nil
}

func validateReplicas(replicas *int32, limit int32, path *field.Path) field.ErrorList {
	if replicas == nil || (*replicas >= 0 && *replicas <= limit) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, *replicas, fmt.Sprintf("must be between 0 and %d", limit))}
}

func validatePort(port int32, path *field.Path) field.ErrorList {
	if port >= 1 && port <= 65535 {
		return nil
	}
	return field.ErrorList{field.Invalid(path, port, "must be between 1 and 65535")}
}
