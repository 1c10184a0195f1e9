package webapp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/webhook/webapp"
)

type option func(*webappv1.WebApp)

func webApp(ns, name string, opts ...option) *webappv1.WebApp {
	w := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       webappv1.WebAppSpec{Image: "nginx:1.25"},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

func image(s string) option   { return func(w *webappv1.WebApp) { w.Spec.Image = s } }
func replicas(n int32) option { return func(w *webappv1.WebApp) { w.Spec.Replicas = ptr.To(n) } }

// createWithPort creates a WebApp as unstructured JSON, so a port the Go type would omit when
// zero is sent.
func createWithPort(ctx context.Context, ns, name string, port int64) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "webapp.slipway.dev/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"image": "nginx:1.25", "port": port},
	}}
	return env.Client.Create(ctx, u)
}

// wantRefused fails unless err is an Invalid error whose causes are exactly the given fields and
// whose message holds every fragment.
func wantRefused(t *testing.T, err error, fields []string, fragments ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want Invalid", err)
	}
	var got []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		got = append(got, c.Field)
	}
	if strings.Join(got, ",") != strings.Join(fields, ",") {
		t.Errorf("causes on %v, want %v (%v)", got, fields, err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("message %q lacks %q", err, f)
		}
	}
}

const byWebhook = `admission webhook "vwebapp.slipway.dev" denied the request`

func TestWebhooks_AdmissionThroughTheAPIServer(t *testing.T) {
	startOperator(t, "admission", operator.WebhookCertOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := env.Client
	ns := namespace(ctx, t)

	t.Run("defaults and standard labels", func(t *testing.T) {
		w := webApp(ns, "defaults")
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		got := &webappv1.WebApp{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			t.Fatal(err)
		}
		s := got.Spec
		if s.Replicas == nil || *s.Replicas != 1 || s.Port != 80 || s.ServiceType != corev1.ServiceTypeClusterIP {
			t.Errorf("spec %+v, want replicas 1, port 80, ClusterIP", s)
		}
		if got.Labels[webapp.NameLabel] != "defaults" || got.Labels[operator.ManagedByLabel] != operator.ManagedByValue {
			t.Errorf("labels %v", got.Labels)
		}

		generated := webApp(ns, "", func(w *webappv1.WebApp) { w.GenerateName = "generated-" })
		if err := c.Create(ctx, generated); err != nil {
			t.Fatal(err)
		}
		// The API server generates the name after admission: the label follows on the first update.
		if l := generated.Labels[webapp.NameLabel]; l != "" && l != generated.Name {
			t.Errorf("generateName: name label %q, want empty or %q", l, generated.Name)
		}
		generated.Spec.Replicas = ptr.To[int32](2)
		if err := c.Update(ctx, generated); err != nil {
			t.Fatal(err)
		}
		if l := generated.Labels[webapp.NameLabel]; l != generated.Name {
			t.Errorf("generateName: after an update the name label is %q, want %q", l, generated.Name)
		}

		own := webApp(ns, "own-name", func(w *webappv1.WebApp) { w.Labels = map[string]string{webapp.NameLabel: "shop"} })
		if err := c.Create(ctx, own); err != nil {
			t.Fatal(err)
		}
		if own.Labels[webapp.NameLabel] != "shop" {
			t.Errorf("a set name label became %q", own.Labels[webapp.NameLabel])
		}
	})

	t.Run("an image without a tag or digest is refused", func(t *testing.T) {
		err := c.Create(ctx, webApp(ns, "no-tag", image("nginx")))
		wantRefused(t, err, []string{"spec.image"}, byWebhook,
			`spec.image: Invalid value: "nginx": must name a tag or a digest`, `an implicit "latest" is not allowed`)
	})

	t.Run("a digest is accepted", func(t *testing.T) {
		img := "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		if err := c.Create(ctx, webApp(ns, "digest", image(img))); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("replicas above the bound are refused", func(t *testing.T) {
		err := c.Create(ctx, webApp(ns, "too-many", replicas(101)))
		wantRefused(t, err, []string{"spec.replicas"}, byWebhook, "spec.replicas: Invalid value: 101: must be between 0 and 100")
		if err := c.Create(ctx, webApp(ns, "at-bound", replicas(100))); err != nil {
			t.Errorf("100 replicas refused: %v", err)
		}
	})

	t.Run("ports outside 1..65535 are refused by the schema before the webhook", func(t *testing.T) {
		// The mutating webhook leaves an explicit 0 alone (it must not become 80); the CRD schema
		// runs after mutation and before validating webhooks, so it refuses first. The validator's
		// own port rule is covered by TestValidator_Create.
		for _, p := range []int64{0, 70000} {
			err := createWithPort(ctx, ns, fmt.Sprintf("port-%d", p), p)
			wantRefused(t, err, []string{"spec.port"}, "spec.port")
			if strings.Contains(err.Error(), "admission webhook") {
				t.Errorf("port %d: refused by a webhook, expected the schema: %v", p, err)
			}
		}
	})

	t.Run("every problem is reported at once", func(t *testing.T) {
		err := c.Create(ctx, webApp(ns, "all-wrong", image("ghcr.io/org/app"), replicas(500)))
		wantRefused(t, err, []string{"spec.image", "spec.replicas"}, byWebhook,
			`spec.image: Invalid value: "ghcr.io/org/app"`, "spec.replicas: Invalid value: 500")
	})

	t.Run("updates are validated, the scale subresource too", func(t *testing.T) {
		w := webApp(ns, "update", replicas(2))
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		bad := w.DeepCopy()
		bad.Spec.Image = "nginx"
		bad.Spec.Replicas = ptr.To[int32](101)
		wantRefused(t, c.Update(ctx, bad), []string{"spec.image", "spec.replicas"}, byWebhook)

		w.Spec.Replicas = ptr.To[int32](3)
		if err := c.Update(ctx, w); err != nil {
			t.Fatalf("a valid update was refused: %v", err)
		}

		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 101}}
		err := c.SubResource("scale").Update(ctx, w, client.WithSubResourceBody(scale))
		wantRefused(t, err, []string{"spec.replicas"}, `admission webhook "vwebapp-scale.slipway.dev" denied the request`,
			"must be between 0 and 100")
		scale.Spec.Replicas = 5
		if err := c.SubResource("scale").Update(ctx, w, client.WithSubResourceBody(scale)); err != nil {
			t.Fatalf("scaling to 5 was refused: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil || *w.Spec.Replicas != 5 {
			t.Errorf("replicas %v after scaling to 5 (%v)", w.Spec.Replicas, err)
		}
	})
}
