package webhookcert

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOptions_Validate(t *testing.T) {
	base := Options{Namespace: "ns", ServiceName: "svc"}
	tests := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"defaults", func(*Options) {}, ""},
		{"no namespace", func(o *Options) { o.Namespace = "" }, "namespace is required"},
		{"no names", func(o *Options) { o.ServiceName = "" }, "a Service name or at least one DNS name"},
		{"DNS names only", func(o *Options) { o.ServiceName, o.DNSNames = "", []string{"localhost"} }, ""},
		{"validity within the lookahead", func(o *Options) { o.CertValidity, o.RotateBefore = time.Hour, time.Hour }, "certificate validity"},
		{"CA within twice the lookahead", func(o *Options) { o.CAValidity, o.CertValidity, o.RotateBefore = 2*time.Hour, 2*time.Hour, time.Hour }, "CA validity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.mod(&o)
			err := o.withDefaults().validate()
			if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestOptions_HostNamesStartWithTheNameTheAPIServerDials(t *testing.T) {
	got := Options{Namespace: "ns", ServiceName: "svc", DNSNames: []string{"localhost"}}.hostNames()
	want := []string{"svc.ns.svc", "svc", "svc.ns", "svc.ns.svc.cluster.local", "localhost"}
	if !slices.Equal(got, want) {
		t.Errorf("hostNames() = %v, want %v", got, want)
	}
}
