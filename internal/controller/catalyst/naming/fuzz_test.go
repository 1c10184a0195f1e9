package naming_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
)

// FuzzNamespaceName checks, for two arbitrary inputs: each name is a DNS-1123 label; the same
// input gives the same name; the name is the full name when that fits and otherwise the
// documented shortened form; and two inputs share a name exactly when their full names (the
// normalised parts joined with '-') are equal. The seed corpus is in testdata/fuzz.
func FuzzNamespaceName(f *testing.F) {
	f.Fuzz(func(t *testing.T, team1, project1, env1, team2, project2, env2 string) {
		n1 := checkName(t, team1, project1, env1)
		n2 := checkName(t, team2, project2, env2)
		full1 := naming.FullName(team1, project1, env1)
		full2 := naming.FullName(team2, project2, env2)
		if (full1 == full2) != (n1 == n2) {
			t.Fatalf("full names %q and %q, namespace names %q and %q", full1, full2, n1, n2)
		}
	})
}

func checkName(t *testing.T, team, project, env string) string {
	t.Helper()
	name := naming.NamespaceName(team, project, env)
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		t.Fatalf("NamespaceName(%q, %q, %q) = %q: %v", team, project, env, name, errs)
	}
	if again := naming.NamespaceName(team, project, env); again != name {
		t.Fatalf("NamespaceName(%q, %q, %q) gave %q then %q", team, project, env, name, again)
	}
	full := naming.FullName(team, project, env)
	if full != naming.FullName(naming.Normalize(team), naming.Normalize(project), naming.Normalize(env)) {
		t.Fatalf("normalisation of %q, %q, %q is not idempotent", team, project, env)
	}
	if len(full) <= naming.MaxNameLength {
		if name != full || strings.Contains(name, "--") {
			t.Fatalf("short full name %q became %q", full, name)
		}
		return name
	}
	prefix, hash, ok := strings.Cut(name, "--")
	if !ok || hash != sha(full) || !strings.HasPrefix(full, prefix) || strings.Contains(hash, "-") {
		t.Fatalf("long full name %q became %q, want <prefix>--%s", full, name, sha(full))
	}
	return name
}

// FuzzLabelValue checks that any string becomes a valid label value, deterministically, and that
// valid label values are kept as they are.
func FuzzLabelValue(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		v := naming.LabelValue(s)
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Fatalf("LabelValue(%q) = %q: %v", s, v, errs)
		}
		if naming.LabelValue(s) != v {
			t.Fatalf("LabelValue(%q) is not deterministic", s)
		}
		if (v == "") != (s == "") {
			t.Fatalf("LabelValue(%q) = %q", s, v)
		}
		if len(validation.IsValidLabelValue(s)) == 0 && v != s {
			t.Fatalf("valid label value %q changed to %q", s, v)
		}
	})
}

// FuzzIngressHost checks that a host is either refused or a DNS subdomain made of one label for
// the environment and the lowercased domain.
func FuzzIngressHost(f *testing.F) {
	f.Fuzz(func(t *testing.T, env, domain string) {
		host, err := naming.IngressHost(env, domain)
		if err != nil {
			return
		}
		if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
			t.Fatalf("IngressHost(%q, %q) = %q: %v", env, domain, host, errs)
		}
		label, rest, _ := strings.Cut(host, ".")
		if errs := validation.IsDNS1123Label(label); len(errs) > 0 {
			t.Fatalf("IngressHost(%q, %q) = %q: first label: %v", env, domain, host, errs)
		}
		if rest != strings.TrimSuffix(strings.ToLower(domain), ".") {
			t.Fatalf("IngressHost(%q, %q) = %q does not end in the domain", env, domain, host)
		}
	})
}
