package webapp

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator"
)

// NameLabel is the standard label the defaulter sets to the WebApp's name unless it is set.
const NameLabel = "app.kubernetes.io/name"

// Defaults the defaulter fills in.
const (
	DefaultReplicas    int32 = 1
	DefaultPort        int32 = 80
	DefaultServiceType       = corev1.ServiceTypeClusterIP
	DefaultPodSecurity       = webappv1.PodSecurityBaseline
)

// Defaulter fills in the fields a WebApp leaves out and sets the standard labels.
type Defaulter struct{}

var _ admission.Defaulter[*webappv1.WebApp] = (*Defaulter)(nil)

// Default implements admission.Defaulter.
func (*Defaulter) Default(ctx context.Context, w *webappv1.WebApp) error {
	// An explicit port 0 must reach validation; the Go type cannot tell it from a missing port,
	// the request can.
	portGiven := false
	if req, err := admission.RequestFromContext(ctx); err == nil {
		portGiven = specHasPort(req.Object.Raw)
	}
	setDefaults(w, portGiven)
	return nil
}

func setDefaults(w *webappv1.WebApp, portGiven bool) {
	if w.Spec.Replicas == nil {
		w.Spec.Replicas = ptr.To(DefaultReplicas)
	}
	if w.Spec.Port == 0 && !portGiven {
		w.Spec.Port = DefaultPort
	}
	if w.Spec.ServiceType == "" {
		w.Spec.ServiceType = DefaultServiceType
	}
	if w.Spec.PodSecurity == "" {
		w.Spec.PodSecurity = DefaultPodSecurity
	}
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	// With generateName the API server names the object after admission; the label then waits
	// for the first update.
	if w.Labels[NameLabel] == "" && w.Name != "" {
		w.Labels[NameLabel] = w.Name
	}
	w.Labels[operator.ManagedByLabel] = operator.ManagedByValue
}

// specHasPort reports whether the raw object sets spec.port (to anything but null).
func specHasPort(raw []byte) bool {
	var obj struct {
		Spec struct {
			Port *json.RawMessage `json:"port"`
		} `json:"spec"`
	}
	return json.Unmarshal(raw, &obj) == nil && obj.Spec.Port != nil
}
