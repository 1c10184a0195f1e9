package deploy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestRefusalBy_TellsRefusalsFromTransientFailures(t *testing.T) {
	svc := ObjectRef{APIVersion: "v1", Kind: "Service", Name: "web"}
	gr := schema.GroupResource{Resource: "services"}
	policy := apierrors.NewForbidden(gr, "web", errors.New("ValidatingAdmissionPolicy 'p' with binding 'p' denied request: ClusterIP only"))
	invalidPolicy := apierrors.NewForbidden(gr, "web", errors.New("ValidatingAdmissionPolicy 'p' denied request: no"))
	invalidPolicy.ErrStatus.Reason, invalidPolicy.ErrStatus.Code = metav1.StatusReasonInvalid, 422
	for _, tc := range []struct {
		name    string
		err     error
		refusal bool
	}{
		{"policy (Forbidden)", policy, true},
		{"policy (Invalid)", invalidPolicy, true},
		{"schema", apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web", field.ErrorList{field.Required(field.NewPath("spec", "ports"), "")}), true},
		{"quota beyond its limit", apierrors.NewForbidden(gr, "web", errors.New("exceeded quota: q, requested: requests.cpu=2,services=1, used: requests.cpu=0,services=0, limited: requests.cpu=1,services=5")), true},
		{"quota in use", apierrors.NewForbidden(gr, "web", errors.New("exceeded quota: q, requested: requests.cpu=500m, used: requests.cpu=800m, limited: requests.cpu=1")), false},
		{"quota not counted yet", apierrors.NewForbidden(gr, "web", errors.New("status unknown for quota: q, resources: services")), false},
		{"quota must specify", apierrors.NewForbidden(gr, "web", errors.New("failed quota: q: must specify limits.cpu for: app")), true},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), false},
		{"timeout", apierrors.NewServerTimeout(gr, "patch", 1), false},
		{"unreachable", errors.New("dial tcp: connection refused"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, refusal := refusalBy(fmt.Errorf("wrapped: %w", tc.err), svc)
			if refusal != tc.refusal {
				t.Fatalf("refusal %v, want %v (%s)", refusal, tc.refusal, why)
			}
			if refusal && !strings.Contains(why, "refused by the API server: ") {
				t.Errorf("why %q", why)
			}
		})
	}
}

// A refusal while Helm writes the release (after the dry run admitted everything) is reported
// like the dry run's: the object, its template and the rule; Helm's wrapping does not hide it.
func TestHelmApplyError_NamesTheObjectAHelmWriteWasRefusedFor(t *testing.T) {
	obj := func(apiVersion, kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		return u
	}
	ms := []manifest{
		{obj: obj("v1", "Service", "web"), origin: "app/templates/service.yaml"},
		{obj: obj("networking.k8s.io/v1", "Ingress", "web"), origin: "app/templates/ingress.yaml"},
		{obj: obj("networking.k8s.io/v1", "NetworkPolicy", "open"), origin: "app/templates/policy.yaml"},
	}
	deny := errors.New("ValidatingAdmissionPolicy 'slipway-preview-ingress' with binding 'b' denied request: the host is not the environment's")
	raced := fmt.Errorf("failed to create resource: %w", apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, "web", deny))
	err := helmApplyError("installing", "pr-1", raced, ms)
	if !errors.Is(err, ErrRefusedObject) || !errors.Is(err, ErrApplyRejected) ||
		!strings.Contains(err.Error(), "Ingress.networking.k8s.io/web (app/templates/ingress.yaml): refused by the API server: ingresses.networking.k8s.io \"web\" is forbidden") ||
		!strings.Contains(err.Error(), "slipway-preview-ingress") {
		t.Errorf("got %v", err)
	}
	// Not an object of the release, or not a refusal: Helm's error as before.
	other := fmt.Errorf("x: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "db", deny))
	if err := helmApplyError("installing", "pr-1", other, ms); errors.Is(err, ErrRefusedObject) || !errors.Is(err, ErrApplyRejected) {
		t.Errorf("got %v", err)
	}
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "services"}, "web", errors.New("changed"))
	if err := helmApplyError("upgrading", "pr-1", conflict, ms); !errors.Is(err, ErrApplyConflict) {
		t.Errorf("got %v", err)
	}
}

func TestSameKind(t *testing.T) {
	for _, tc := range []struct {
		kind, named string
		want        bool
	}{
		{"Service", "services", true}, {"Ingress", "ingresses", true}, {"NetworkPolicy", "networkpolicies", true},
		{"Ingress", "Ingress", true}, {"Service", "secrets", false}, {"Pod", "podtemplates", false},
	} {
		if got := sameKind(tc.kind, tc.named); got != tc.want {
			t.Errorf("sameKind(%s, %s) = %v", tc.kind, tc.named, got)
		}
	}
}

// A Secret's refusal keeps the policy and the rule that refused it, and nothing of its values.
func TestSafeMessage_KeepsTheRuleOfASecretsRefusal(t *testing.T) {
	secret := ObjectRef{APIVersion: "v1", Kind: "Secret", Name: "token"}
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "token",
		errors.New("ValidatingAdmissionPolicy 'catalyst-secrets' with binding 'catalyst-secrets' denied request: value s3cr3t is bad (rule secret-token)"))
	got := safeMessage(secret, err)
	want := "Forbidden: ValidatingAdmissionPolicy 'catalyst-secrets' with binding 'catalyst-secrets' denied ... (rule secret-token) (details withheld for a Secret)"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	plain := apierrors.NewBadRequest("data[password]: illegal base64 s3cr3t")
	if got := safeMessage(secret, plain); strings.Contains(got, "s3cr3t") {
		t.Errorf("got %q", got)
	}
}
