package webapp

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
)

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name      string
		w         *webappv1.WebApp
		portGiven bool
		replicas  int32
		port      int32
		svc       corev1.ServiceType
		nameLabel string
	}{
		{"empty spec", webApp(func(w *webappv1.WebApp) { w.Spec = webappv1.WebAppSpec{Image: "nginx:1"} }), false, 1, 80, corev1.ServiceTypeClusterIP, "web"},
		{"set values kept", webApp(withReplicas(0), withPort(8080), func(w *webappv1.WebApp) {
			w.Spec.ServiceType = corev1.ServiceTypeNodePort
			w.Labels = map[string]string{NameLabel: "shop"}
		}), true, 0, 8080, corev1.ServiceTypeNodePort, "shop"},
		{"explicit port 0 left for validation", webApp(withPort(0)), true, 1, 0, corev1.ServiceTypeClusterIP, "web"},
		{"no name yet (generateName)", webApp(func(w *webappv1.WebApp) { w.Name = "" }), false, 1, 80, corev1.ServiceTypeClusterIP, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setDefaults(tt.w, tt.portGiven)
			s := tt.w.Spec
			if *s.Replicas != tt.replicas || s.Port != tt.port || s.ServiceType != tt.svc {
				t.Errorf("spec replicas=%d port=%d serviceType=%s, want %d %d %s", *s.Replicas, s.Port, s.ServiceType, tt.replicas, tt.port, tt.svc)
			}
			if tt.w.Labels[NameLabel] != tt.nameLabel || tt.w.Labels["app.kubernetes.io/managed-by"] != "slipway" {
				t.Errorf("labels %v", tt.w.Labels)
			}
		})
	}
}

func TestDefaulter_ReadsWhetherTheRequestSetsPort(t *testing.T) {
	tests := []struct {
		raw  string
		port int32
	}{
		{`{"spec":{"image":"nginx:1","port":0}}`, 0},
		{`{"spec":{"image":"nginx:1","port":null}}`, 80},
		{`{"spec":{"image":"nginx:1"}}`, 80},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Object: runtime.RawExtension{Raw: []byte(tt.raw)}}}
			w := webApp(withPort(0), func(w *webappv1.WebApp) { w.Spec.Replicas = ptr.To[int32](2) })
			if err := (&Defaulter{}).Default(admission.NewContextWithRequest(context.Background(), req), w); err != nil {
				t.Fatal(err)
			}
			if w.Spec.Port != tt.port {
				t.Errorf("port %d, want %d", w.Spec.Port, tt.port)
			}
		})
	}
}
