package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FuzzParseManifests feeds arbitrary bytes to the manifest parser (the repository's files are
// outside input) and then to prepare, which injects into what was parsed. Neither may panic; an
// error is always ErrInvalidManifest (or ErrRefusedObject); parsed objects always have an
// apiVersion, a kind and a name; and writing them out and parsing them again gives the same
// objects (as JSON). The seed corpus is in testdata/fuzz.
func FuzzParseManifests(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := parseManifests("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("error %v is not ErrInvalidManifest", err)
			}
			return
		}
		for _, m := range ms {
			if r := m.ref(); r.APIVersion == "" || r.Kind == "" || r.Name == "" {
				t.Fatalf("parsed %+v", r)
			}
		}
		out, err := marshalManifests(ms)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseManifests("again.yaml", out.Bytes())
		if err != nil {
			t.Fatalf("the written objects do not parse: %v\n%s", err, out)
		}
		if len(again) != len(ms) {
			t.Fatalf("%d objects, %d after a round trip", len(ms), len(again))
		}
		for i := range ms {
			// Compared as JSON: -1e3 is read back as the integer -1000.
			a, _ := json.Marshal(ms[i].obj.Object)
			b, _ := json.Marshal(again[i].obj.Object)
			if !bytes.Equal(a, b) {
				t.Fatalf("object %d changed in a round trip:\n%s\n%s", i, a, b)
			}
		}
		req := Request{
			Namespace: "env-1", Release: "pr-1",
			Image:  Image{Repository: "registry.example.dev/org/app", Tag: "abc"},
			Env:    []corev1.EnvVar{{Name: "DEBUG", Value: "true"}},
			Labels: map[string]string{"catalyst.dev/environment": "pr-1"},
		}
		all := func(schema.GroupVersionKind) (bool, error) { return true, nil }
		_, err = prepare(ms, req, all, prepareOptions{inject: true, release: "pr-1"})
		if err != nil && !errors.Is(err, ErrInvalidManifest) && !errors.Is(err, ErrRefusedObject) {
			t.Fatalf("prepare: %v", err)
		}
		if err == nil {
			for _, m := range ms {
				if m.obj.GetNamespace() != "env-1" || m.obj.GetLabels()["catalyst.dev/environment"] != "pr-1" {
					t.Fatalf("%s: namespace %q labels %v", m.ref(), m.obj.GetNamespace(), m.obj.GetLabels())
				}
			}
		}
	})
}
