package webapp

import (
	"strings"
	"testing"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FuzzValidateImage checks the image rule on arbitrary input (seed corpus in
// testdata/fuzz/FuzzValidateImage): it never panics, refuses with exactly one spec.image error,
// and whatever it accepts names a tag or a digest, so the runtime adds no implicit "latest", and
// parses back to itself.
func FuzzValidateImage(f *testing.F) {
	path := field.NewPath("spec", "image")
	f.Fuzz(func(t *testing.T, image string) {
		errs := validateImage(image, path)
		named, err := parseImage(image)
		if (err == nil) != (len(errs) == 0) {
			t.Fatalf("parseImage error %v but validateImage %v", err, errs)
		}
		if err != nil {
			if len(errs) != 1 || errs[0].Field != "spec.image" || errs[0].Detail == "" && errs[0].Type != field.ErrorTypeRequired {
				t.Fatalf("refusal of %q: %v, want one spec.image error with a message", image, errs)
			}
			return
		}
		if !strings.ContainsAny(image, ":@") {
			t.Fatalf("accepted %q, which names neither a tag nor a digest", image)
		}
		if reference.TagNameOnly(named).String() != named.String() {
			t.Fatalf("accepted %q, which the runtime would complete with a default tag", image)
		}
		again, err := parseImage(named.String())
		if err != nil || again.String() != named.String() {
			t.Fatalf("%q normalised to %q, which parses to %v (%v)", image, named, again, err)
		}
		if strings.ContainsAny(image, " \t\n\r\x00") {
			t.Fatalf("accepted %q with whitespace or NUL", image)
		}
	})
}
