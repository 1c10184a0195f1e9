package health

import (
	"context"
	"net"
	"net/http/httptest"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// hostIP is a non-loopback IPv4 address of this machine: the API server refuses endpoints on
// loopback addresses, so a webhook reached through a Service must listen on another.
func hostIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	t.Fatal("no non-loopback IPv4 address to serve a webhook behind a Service on")
	return nil
}

// TestWebhookThroughService checks a webhook configured with clientConfig.service: it is called
// through the API server's service proxy (a Service without selector whose endpoints are the
// test's server), and its certificate is reported as not checked, never as passed.
func TestWebhookThroughService(t *testing.T) {
	ip := hostIP(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &webhookServer{}
	plain := newWebhookServer(t) // for its handler
	srv.Server = httptest.NewUnstartedServer(plain.Config.Handler)
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := int32(ln.Addr().(*net.TCPAddr).Port)

	ns := namespace(t)
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "op-webhook", Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(port)}}},
	}
	// The service proxy only forwards to endpoints that are pods with that IP: a pod no scheduler
	// or kwok takes, whose status the test writes.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "op-webhook-0", Namespace: ns},
		Spec:       corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "webhook", Image: "example.com/webhook:1"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip.String(), PodIPs: []corev1.PodIP{{IP: ip.String()}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "op-webhook-1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "op-webhook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port)}},
	}
	if err := env.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-op", Labels: map[string]string{InstanceLabel: "svc-op"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "mutate.health.test.slipway.dev",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "op-webhook", Path: ptr.To("/mutate")},
				CABundle: srv.caBundle(),
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"health.test.slipway.dev"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}},
			}},
		}},
	}
	if err := env.Client.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cfg) })

	c := NewChecker(Config{})
	target := Target{OperatorName: "svc-op", Namespace: ns, Release: "svc-op"}
	got := checkUntil(t, c, target, "the webhook answering through the service proxy",
		func(h Result) bool { return h.Webhooks.Healthy == 1 })
	r := got.Webhooks.Webhooks[0]
	if got.Webhooks.Health != api.Healthy || r.Kind != "Mutating" || r.Answer != api.VerdictPassed || r.Certificate != api.VerdictNotChecked ||
		r.Endpoint != "service "+ns+"/op-webhook:443/mutate" {
		t.Fatalf("webhook through a service = %+v", r)
	}

	plain.mode.Store(modeFail)
	r = checkOnce(t, c, target).Webhooks.Webhooks[0]
	if r.Answer != api.VerdictFailed || r.StatusCode != 500 || r.Certificate != api.VerdictNotChecked {
		t.Fatalf("failing webhook through a service = %+v, want answered 500", r)
	}
}
