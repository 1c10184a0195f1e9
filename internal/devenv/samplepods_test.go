package devenv

import (
	"flag"
	"io"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/sampleapp"
)

// TestRealNodeSamples_WebAppRunsTheSampleApp: with the real node, the WebApp sample runs the
// sample app's image listening on its own port ($PORT), its GREETING kept, in a namespace that
// sends its pods to the node; nothing else of config/samples changes.
func TestRealNodeSamples_WebAppRunsTheSampleApp(t *testing.T) {
	objs, err := config.Samples()
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, u := range objs {
		before[u.GetKind()+"/"+u.GetName()] = toJSON(t, u)
	}
	got, err := realNodeSamples(objs, sampleapp.Ref(SampleAppVersion))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(objs) {
		t.Fatalf("%d objects, want the %d of config/samples", len(got), len(objs))
	}
	seen := 0
	for _, u := range got {
		switch key := u.GetKind() + "/" + u.GetName(); key {
		case "WebApp/hello":
			seen++
			image, _, _ := unstructured.NestedString(u.Object, "spec", "image")
			env, _, _ := unstructured.NestedSlice(u.Object, "spec", "env")
			if image != sampleapp.Ref(SampleAppVersion) || !slices.ContainsFunc(env, envIs(sampleapp.EnvPort, "80")) ||
				!slices.ContainsFunc(env, envIs(sampleapp.EnvGreeting, "hello from make dev")) {
				t.Errorf("WebApp hello: image %q env %v", image, env)
			}
		case "Namespace/webapp-demo":
			seen++
			for k, v := range controlplane.RealNodeNamespaceAnnotations() {
				if u.GetAnnotations()[k] != v {
					t.Errorf("namespace webapp-demo: annotation %s = %q, want %q", k, u.GetAnnotations()[k], v)
				}
			}
		default:
			if toJSON(t, u) != before[key] {
				t.Errorf("%s changed:\n%s\nwas:\n%s", key, toJSON(t, u), before[key])
			}
		}
	}
	if seen != 2 {
		t.Errorf("saw %d of the WebApp and its namespace", seen)
	}

	// A WebApp whose namespace the samples do not hold gets one, annotated.
	lone := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "webapp.slipway.dev/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "x", "namespace": "elsewhere"}, "spec": map[string]any{"image": "nginx:1", "port": int64(8080)}}}
	got, err = realNodeSamples([]*unstructured.Unstructured{lone}, "img:1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].GetKind() != "Namespace" || got[0].GetName() != "elsewhere" || len(got[0].GetAnnotations()) == 0 {
		t.Fatalf("got %v", got)
	}
	if env, _, _ := unstructured.NestedSlice(got[1].Object, "spec", "env"); !slices.ContainsFunc(env, envIs(sampleapp.EnvPort, "8080")) {
		t.Errorf("env %v", env)
	}
}

// TestSampleOperatorArgs_AreTheOperatorsFlags: the arguments make dev gives the operator with the
// real node parse with the Catalyst system's flags.
func TestSampleOperatorArgs_AreTheOperatorsFlags(t *testing.T) {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	catalyst.Controller().BindFlags(fs)
	args := SampleOperatorArgs(true)
	if len(args) != len(controlplane.RealNodeNamespaceAnnotations()) {
		t.Fatalf("args %q", args)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if SampleOperatorArgs(false) != nil {
		t.Error("arguments without the real node")
	}
}

func envIs(name, value string) func(any) bool {
	return func(e any) bool {
		m, ok := e.(map[string]any)
		return ok && m["name"] == name && m["value"] == value
	}
}

func toJSON(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
