package webapp

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

type option func(*webappv1.WebApp)

func webApp(opts ...option) *webappv1.WebApp {
	w := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       webappv1.WebAppSpec{Image: "nginx:1.25", Replicas: ptr.To[int32](1), Port: 80},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

func withImage(s string) option   { return func(w *webappv1.WebApp) { w.Spec.Image = s } }
func withReplicas(n int32) option { return func(w *webappv1.WebApp) { w.Spec.Replicas = ptr.To(n) } }
func withPort(p int32) option     { return func(w *webappv1.WebApp) { w.Spec.Port = p } }

func TestValidateImage(t *testing.T) {
	tests := []struct {
		image string
		want  string // "" accepted, else part of the message
	}{
		{"nginx:1.25", ""},
		{"nginx:latest", ""},
		{"docker.io/library/nginx:1.25", ""},
		{"ghcr.io/org/team/app:v1.2.3-rc.1", ""},
		{"localhost:5000/app:dev", ""},
		{"registry:5000", ""}, // repository "registry", tag "5000"
		{"nginx@" + digest, ""},
		{"nginx:1.25@" + digest, ""},
		{"[::1]:5000/app:1", ""},
		{"nginx", "must name a tag or a digest"},
		{"ghcr.io/org/app", "must name a tag or a digest"},
		{"localhost:5000/app", "must name a tag or a digest"},
		{"", "Required value"},
		{"nginx:", "not a valid image reference"},
		{"Nginx:1.25", "not a valid image reference"},
		{"nginx:1.25 ", "not a valid image reference"},
		{"nginx@sha256:abc", "not a valid image reference"},
		{"nginx@" + digest + "@" + digest, "not a valid image reference"},
		{"https://ghcr.io/app:1", "not a valid image reference"},
		{"nginx:" + strings.Repeat("a", 129), "not a valid image reference"},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			errs := validateImage(tt.image, field.NewPath("spec", "image"))
			if tt.want == "" {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want) || !strings.HasPrefix(errs[0].Error(), "spec.image: ") {
				t.Fatalf("errors %v, want one spec.image error containing %q", errs, tt.want)
			}
		})
	}
}

func TestValidator_Create(t *testing.T) {
	v := &Validator{MaxReplicas: 100}
	tests := []struct {
		name string
		w    *webappv1.WebApp
		want []string // messages of the causes, in order
	}{
		{"valid", webApp(), nil},
		{"zero replicas", webApp(withReplicas(0)), nil},
		{"the bound", webApp(withReplicas(100)), nil},
		{"no replicas (defaulted later)", webApp(func(w *webappv1.WebApp) { w.Spec.Replicas = nil }), nil},
		{"above the bound", webApp(withReplicas(101)), []string{"spec.replicas: Invalid value: 101: must be between 0 and 100"}},
		{"negative", webApp(withReplicas(-1)), []string{"spec.replicas: Invalid value: -1: must be between 0 and 100"}},
		{"port 0", webApp(withPort(0)), []string{"spec.port: Invalid value: 0: must be between 1 and 65535"}},
		{"port 70000", webApp(withPort(70000)), []string{"spec.port: Invalid value: 70000: must be between 1 and 65535"}},
		{"port 65535", webApp(withPort(65535)), nil},
		{"everything wrong at once", webApp(withImage("nginx"), withReplicas(101), withPort(0)), []string{
			`spec.image: Invalid value: "nginx": must name a tag or a digest`,
			"spec.replicas: Invalid value: 101",
			"spec.port: Invalid value: 0",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.ValidateCreate(context.Background(), tt.w)
			assertInvalid(t, err, tt.want)
		})
	}
}

func TestValidator_UpdateHoldsOnlyChangedFieldsAgainstTheObject(t *testing.T) {
	v := &Validator{MaxReplicas: 10}
	stored := webApp(withImage("nginx"), withReplicas(50)) // stored before the webhook or the bound
	tests := []struct {
		name         string
		update       *webappv1.WebApp
		want         []string
		wantWarnings int
	}{
		{"relabelled only", webApp(withImage("nginx"), withReplicas(50)), nil, 2},
		{"replicas still above the bound", webApp(withImage("nginx"), withReplicas(40)), []string{"spec.replicas: Invalid value: 40: must be between 0 and 10"}, 1},
		{"image changed to another untagged one", webApp(withImage("httpd"), withReplicas(50)), []string{`spec.image: Invalid value: "httpd"`}, 1},
		{"both fixed", webApp(withReplicas(3)), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := v.ValidateUpdate(context.Background(), stored, tt.update)
			assertInvalid(t, err, tt.want)
			if len(warnings) != tt.wantWarnings {
				t.Errorf("warnings %q, want %d", warnings, tt.wantWarnings)
			}
		})
	}
	if _, err := v.ValidateUpdate(context.Background(), webApp(), webApp(withPort(0))); err == nil {
		t.Error("a valid WebApp updated to port 0 was accepted")
	}
	if w, err := v.ValidateDelete(context.Background(), stored); err != nil || w != nil {
		t.Errorf("delete refused: %v %v", w, err)
	}
}

func TestValidator_WarnsAboutAnExplicitLatest(t *testing.T) {
	warnings, err := (&Validator{MaxReplicas: 100}).ValidateCreate(context.Background(), webApp(withImage("nginx:latest")))
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], `the tag "latest" moves`) {
		t.Fatalf("warnings %q, error %v", warnings, err)
	}
}

func assertInvalid(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want Invalid", err)
	}
	causes := err.(apierrors.APIStatus).Status().Details.Causes
	if len(causes) != len(want) {
		t.Fatalf("%d causes (%v), want %d", len(causes), err, len(want))
	}
	for i, w := range want {
		if got := causes[i].Field + ": " + causes[i].Message; !strings.Contains(got, strings.SplitN(w, ": ", 2)[1]) || !strings.HasPrefix(w, causes[i].Field+": ") {
			t.Errorf("cause %d = %q, want %q", i, got, w)
		}
	}
	if !strings.Contains(err.Error(), `WebApp.webapp.slipway.dev "web" is invalid`) {
		t.Errorf("message %q does not name the WebApp", err)
	}
}
