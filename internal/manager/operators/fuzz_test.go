package operators

import (
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// FuzzValidateRef checks that any chart reference is either accepted or refused with
// *invalid.Error naming one of the chart fields, and never panics.
func FuzzValidateRef(f *testing.F) {
	for _, seed := range [][2]string{
		{"https://charts.example.com", "op"},
		{"oci://ghcr.io/org/charts", "op"},
		{"oci://host:5000/a:1.0", "op"},
		{"ftp://x", "op"},
		{"http://[::1", "op"},
		{"https://u:p@h/c", "a/b"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, repository, name string) {
		err := ValidateRef(ChartRef{Repository: repository, Name: name})
		if err == nil {
			return
		}
		e, ok := invalid.As(err)
		if !ok || (e.Field != "chart.repository" && e.Field != "chart.name") || e.Message == "" {
			t.Fatalf("ValidateRef(%q, %q) = %v, want *invalid.Error on a chart field", repository, name, err)
		}
	})
}
