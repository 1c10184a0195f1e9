package deploy

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// Errors Deploy and Uninstall return, wrapped with details; test with errors.Is. The messages name
// files, kinds, object names and field paths, never the content of an object.
var (
	// ErrInvalidRequest: the Request itself is wrong (no namespace, a release name Helm refuses,
	// an unknown type, a path that leaves the repository, values for a type other than helm).
	ErrInvalidRequest = errors.New("invalid deploy request")
	// ErrPathNotFound: the path is missing from the checkout, or holds no chart (Chart.yaml), no
	// manifests (*.yaml, *.yml, *.json) or no kustomization.
	ErrPathNotFound = errors.New("deployment path not found")
	// ErrInvalidChart: the Helm chart does not load or render (a template error, a dependency
	// listed in Chart.yaml and missing from charts/, CRDs in crds/).
	ErrInvalidChart = errors.New("invalid Helm chart")
	// ErrInvalidManifest: a manifest file is not valid YAML, or a document is not a Kubernetes
	// object (no apiVersion, kind or name). The message names the file and the document.
	ErrInvalidManifest = errors.New("invalid manifest")
	// ErrKustomizeBuild: kustomize could not build the kustomization, or it refers to something
	// outside the repository (a remote base, an http URL).
	ErrKustomizeBuild = errors.New("kustomize build failed")
	// ErrRefusedObject: an object an environment may not hold: it is cluster-scoped (Namespace,
	// ClusterRole, CRD, ...), names another namespace, is a guard rail of the environment
	// (ResourceQuota, LimitRange, NetworkPolicy), takes a name the caller reserved, is of a kind
	// the cluster does not serve, or the API server's admission refuses it (at the dry run before
	// the first write, or at the write itself); such an error is ErrApplyRejected too.
	ErrRefusedObject = errors.New("object refused")
	// ErrApplyConflict: the API server answered 409 Conflict to an apply.
	ErrApplyConflict = errors.New("apply conflict")
	// ErrApplyRejected: the API server refused an object as invalid (a missing required field,
	// a change to an immutable field such as a Deployment's selector) or forbidden (quota,
	// admission). The message holds the server's reason and the field paths.
	ErrApplyRejected = errors.New("object rejected by the API server")
	// ErrHelmRelease: the Helm install, upgrade or uninstall failed for another reason.
	ErrHelmRelease = errors.New("helm release failed")
)

// Stalled reports whether err comes from the request or the repository's content: retrying the
// same commit with the same project gives the same error, so the controller should stop retrying
// until one of them changes. Other errors (the API server unreachable, a timeout) are transient.
func Stalled(err error) bool {
	for _, e := range []error{ErrInvalidRequest, ErrPathNotFound, ErrInvalidChart, ErrInvalidManifest,
		ErrKustomizeBuild, ErrRefusedObject, ErrApplyRejected} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Reason returns the DeploymentReady condition reason for err: DeploymentPathNotFound,
// ObjectRefused (an object the environment may not hold), RenderFailed (the chart, manifests
// or kustomization cannot be turned into objects) or DeploymentFailed (applying them failed).
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrPathNotFound):
		return catalystv1alpha1.DeploymentPathNotFoundReason
	case errors.Is(err, ErrRefusedObject):
		return catalystv1alpha1.ObjectRefusedReason
	case errors.Is(err, ErrInvalidRequest), errors.Is(err, ErrInvalidChart), errors.Is(err, ErrInvalidManifest),
		errors.Is(err, ErrKustomizeBuild):
		return catalystv1alpha1.RenderFailedReason
	}
	return catalystv1alpha1.DeploymentFailedReason
}

// applyError classifies an error of the API server about ref. For Secrets the server's message is
// replaced by its reason and field paths, so no value of the Secret can appear in a condition.
func applyError(verb string, ref ObjectRef, err error) error {
	switch {
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %s %s: %s", ErrApplyConflict, verb, ref, safeMessage(ref, err))
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err),
		apierrors.IsRequestEntityTooLargeError(err), apierrors.IsMethodNotSupported(err):
		return fmt.Errorf("%w: %s %s: %s", ErrApplyRejected, verb, ref, safeMessage(ref, err))
	case apierrors.IsInternalError(err) && undecodable(err):
		// Server-side apply answers 500 to a field of the wrong type or encoding.
		return fmt.Errorf("%w: %s %s: a field has the wrong type or encoding: %s", ErrApplyRejected, verb, ref, safeMessage(ref, err))
	}
	return fmt.Errorf("%s %s: %s", verb, ref, safeMessage(ref, err))
}

// undecodable reports whether an internal error of the API server is its failure to read the
// object sent, rather than a failure of the server.
func undecodable(err error) bool {
	msg := err.Error()
	for _, m := range []string{"typed patch object", "illegal base64", "cannot unmarshal", "unable to decode", "unrecognized type"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// safeMessage is err's message, or for a Secret (and for a kind the client cannot tell) only the
// reason and the field paths of an API status.
func safeMessage(ref ObjectRef, err error) string {
	if ref.Kind != "Secret" {
		return err.Error()
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return "request failed (details withheld for a Secret)"
	}
	st := status.Status()
	msg := string(st.Reason)
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d", st.Code)
	}
	if st.Details != nil {
		var fields []string
		for _, c := range st.Details.Causes {
			if c.Field != "" {
				fields = append(fields, c.Field+" ("+string(causeType(c))+")")
			}
		}
		if len(fields) > 0 {
			msg += ": " + strings.Join(fields, ", ")
		}
	}
	if rule := admissionRule(st.Message); rule != "" {
		msg += ": " + rule
	}
	return msg + " (details withheld for a Secret)"
}

// admissionNames match, in an API server's message, the admission policy or webhook that refused
// a request and the rule our policies end their messages with: names, never an object's values.
var admissionNames = regexp.MustCompile(`(ValidatingAdmissionPolicy '[^']+'( with binding '[^']+')?|admission webhook "[^"]+") denied|\(rule [a-z0-9-]+\)$`)

// admissionRule is what of msg names the admission rule that refused a request, "" for none.
func admissionRule(msg string) string {
	found := admissionNames.FindAllString(msg, -1)
	return strings.Join(found, " ... ")
}

func causeType(c metav1.StatusCause) metav1.CauseType {
	if c.Type == "" {
		return "Invalid"
	}
	return c.Type
}
