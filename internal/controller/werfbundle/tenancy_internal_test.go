package werfbundle

import (
	"flag"
	"testing"
)

func TestAcceptsBundlesFrom(t *testing.T) {
	for _, tc := range []struct {
		value, namespace string
		want             bool
	}{
		{"", "team-a", false},
		{"*", "team-a", true},
		{"team-a", "team-a", true},
		{"team-a,team-b", "team-b", true},
		{" team-a , team-b ", "team-b", true},
		{"team-a,team-b", "team-c", false},
		{"team", "team-a", false},
		{"team-a*", "team-ab", false},
		{",", "", false},
	} {
		if got := acceptsBundlesFrom(tc.value, tc.namespace); got != tc.want {
			t.Errorf("acceptsBundlesFrom(%q, %q) = %t, want %t", tc.value, tc.namespace, got, tc.want)
		}
	}
}

func TestController_AllowCrossNamespaceFlagIsOffByDefault(t *testing.T) {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	Controller().BindFlags(fs)
	f := fs.Lookup("werfbundle-allow-cross-namespace")
	if f == nil {
		t.Fatal("no --werfbundle-allow-cross-namespace flag")
	}
	if f.DefValue != "false" {
		t.Errorf("--werfbundle-allow-cross-namespace defaults to %s, want false", f.DefValue)
	}
}
