//go:build e2e

package chaos

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/controlplane"
)

// podOutcome is what kwok does with a pod: fail it (exit code 1) and/or keep it running for a
// while first.
type podOutcome struct {
	fail     bool
	duration time.Duration
}

// podHook is a mutating admission webhook served by the test: it puts kwok's outcome controls
// (controlplane.FailLabel, controlplane.DurationAnnotation) on the pods the Job controller
// creates for the operator's Jobs, as decide says. The operator binary cannot be told to do that
// itself (in-process tests use the reconcilers' DecoratePod), and this leaves it untouched: its
// Jobs are exactly what it made, only their pods behave like a slow or broken release.
type podHook struct {
	decide func(*corev1.Pod) podOutcome
	failed atomic.Int64
}

// installPodHook serves the webhook and registers it for pods matching selector. Failure policy
// Fail: a pod is never created without its outcome.
func installPodHook(ctx context.Context, t *testing.T, c client.Client, name string, selector *metav1.LabelSelector,
	decide func(*corev1.Pod) podOutcome) *podHook {
	t.Helper()
	h := &podHook{decide: decide}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    name + ".chaos.slipway.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/mutate"), CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			ObjectSelector:          selector,
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	if err := c.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cfg) })
	return h
}

func (h *podHook) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	var review admissionv1.AdmissionReview
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	if err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("bad AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	var pod corev1.Pod
	if err := json.Unmarshal(review.Request.Object.Raw, &pod); err == nil {
		if patch := h.patch(&pod); patch != nil {
			resp.Patch = patch
			resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
		}
	}
	review.Response = resp
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// patch is the JSON patch giving pod its outcome, nil for none.
func (h *podHook) patch(pod *corev1.Pod) []byte {
	out := h.decide(pod)
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var ops []op
	escape := func(k string) string { return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1") }
	if out.fail {
		h.failed.Add(1)
		if pod.Labels == nil {
			ops = append(ops, op{"add", "/metadata/labels", map[string]string{}})
		}
		ops = append(ops, op{"add", "/metadata/labels/" + escape(controlplane.FailLabel), "true"})
	}
	if out.duration > 0 {
		if pod.Annotations == nil {
			ops = append(ops, op{"add", "/metadata/annotations", map[string]string{}})
		}
		ops = append(ops, op{"add", "/metadata/annotations/" + escape(controlplane.DurationAnnotation), out.duration.String()})
	}
	if len(ops) == 0 {
		return nil
	}
	data, _ := json.Marshal(ops)
	return data
}
