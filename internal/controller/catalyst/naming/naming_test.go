package naming_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:naming.HashLength]
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"my-team", "my-team"},
		{"My_Team", "my-team"},
		{"my.team", "my-team"},
		{"my--team", "my-team"},
		{"--my team--", "my-team"},
		{"feature/login", "feature-login"},
		{"Café", "caf"},
		{"日本", "x"},
		{"", "x"},
		{"---", "x"},
		{"PR 123", "pr-123"},
		{"0day", "0day"},
		{"a\xffb", "a-b"},
	} {
		if got := naming.Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNamespaceName(t *testing.T) {
	long := strings.Repeat("team", 11)      // 44 characters: the cut at 45 falls on the '-' after it
	longFull := long + "-my-project-pr-123" // 62 characters; with "45" appended, 64
	for _, tc := range []struct {
		name                       string
		team, project, environment string
		want                       string
	}{
		{"the issue's example", "my-team", "my-project", "pr-123", "my-team-my-project-pr-123"},
		{"parts are normalised", "My_Team", "my.project", "PR 123", "my-team-my-project-pr-123"},
		{"exactly 63 characters stay whole", strings.Repeat("a", 21), strings.Repeat("b", 20), strings.Repeat("c", 20), strings.Repeat("a", 21) + "-" + strings.Repeat("b", 20) + "-" + strings.Repeat("c", 20)},
		{"64 characters are shortened", strings.Repeat("a", 22), strings.Repeat("b", 20), strings.Repeat("c", 20),
			strings.Repeat("a", 22) + "-" + strings.Repeat("b", 20) + "-c--" + sha(strings.Repeat("a", 22)+"-"+strings.Repeat("b", 20)+"-"+strings.Repeat("c", 20))},
		{"a dash at the cut is dropped", long, "my-project", "pr-12345", long + "--" + sha(longFull+"45")},
		{"empty parts stand as x", "", "", "", "x-x-x"},
		{"branch-like environment names", "t", "p", "feature/login", "t-p-feature-login"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := naming.NamespaceName(tc.team, tc.project, tc.environment)
			if got != tc.want {
				t.Errorf("NamespaceName(%q, %q, %q) = %q, want %q", tc.team, tc.project, tc.environment, got, tc.want)
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("%q is not a DNS-1123 label: %v", got, errs)
			}
		})
	}
}

func TestNamespaceName_LongNamesThatShareAPrefixDiffer(t *testing.T) {
	team, project := strings.Repeat("platform", 5), strings.Repeat("service", 5)
	seen := map[string]string{}
	for _, env := range []string{"pr-1", "pr-2", "pr-10", "pr-11", "staging", "production"} {
		ns := naming.NamespaceName(team, project, env)
		if len(ns) != naming.MaxNameLength {
			t.Errorf("%s: %q has %d characters, want %d", env, ns, len(ns), naming.MaxNameLength)
		}
		if other, dup := seen[ns]; dup {
			t.Errorf("%s and %s share the namespace %q", env, other, ns)
		}
		seen[ns] = env
	}
}

func TestNamespaceName_ShortNameCannotImitateAShortenedOne(t *testing.T) {
	long := naming.NamespaceName(strings.Repeat("a", 30), strings.Repeat("b", 30), "pr-1")
	prefix, hash, ok := strings.Cut(long, "--")
	if !ok {
		t.Fatalf("shortened name %q has no --", long)
	}
	// A tenant picking names that spell the shortened name exactly gets something else.
	imitation := naming.NamespaceName(prefix, "", hash)
	if imitation == long {
		t.Fatalf("%q was reproduced from short parts", long)
	}
}

func TestNamespaceName_DocumentedAmbiguity(t *testing.T) {
	// '-' inside parts makes <team>-<project>-<environment> ambiguous; MatchesEnvironment on the
	// namespace's labels is what tells these apart.
	a := naming.NamespaceName("a-b", "c", "d")
	b := naming.NamespaceName("a", "b-c", "d")
	if a != b {
		t.Fatalf("expected the documented clash, got %q and %q", a, b)
	}
	if naming.MatchesEnvironment(naming.Labels("a-b", "c", "d", ""), "a", "b-c", "d") {
		t.Error("labels of one environment match another")
	}
	if naming.ProjectNamespaceName("a", "b-c") != naming.NamespaceName("a", "b", "c") {
		t.Error("expected the project/environment namespace clash the package documents")
	}
	if naming.MatchesEnvironment(map[string]string{naming.LabelTeam: "a", naming.LabelProject: "b-c"}, "a", "b", "c") {
		t.Error("a project namespace's labels match an environment")
	}
}

func TestProjectNamespaceName(t *testing.T) {
	if got := naming.ProjectNamespaceName("my-team", "my-project"); got != "my-team-my-project" {
		t.Errorf("got %q", got)
	}
	if got := naming.ProjectNamespaceName(strings.Repeat("t", 40), strings.Repeat("p", 40)); len(got) > 63 || !strings.Contains(got, "--") {
		t.Errorf("long project namespace %q not shortened", got)
	}
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("feature/", 10) + "login" // 85 characters
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"main", "main"},
		{"Release_1.2", "Release_1.2"},
		{"feature/login", "feature-login"},
		{"feature/Login-", "feature-Login"},
		{"/refs/heads/x", "refs-heads-x"},
		{"fix: ünïcode", "fix----n--code"},
		{"///", sha("///")},
		{"_._", sha("_._")},
		{strings.Repeat("a", 63), strings.Repeat("a", 63)},
		{strings.Repeat("a", 64), strings.Repeat("a", 46) + "-" + sha(strings.Repeat("a", 64))},
		{long, strings.TrimRight(strings.ReplaceAll(long, "/", "-")[:46], "-") + "-" + sha(long)},
	} {
		got := naming.LabelValue(tc.in)
		if got != tc.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("LabelValue(%q) = %q is not a label value: %v", tc.in, got, errs)
		}
	}
}

func TestLabelsAndAnnotations_KeepTheRawBranch(t *testing.T) {
	l := naming.Labels("my-team", "my-project", "pr-123", "feature/login")
	want := map[string]string{
		"catalyst.dev/team": "my-team", "catalyst.dev/project": "my-project",
		"catalyst.dev/environment": "pr-123", "catalyst.dev/branch": "feature-login",
	}
	if len(l) != len(want) {
		t.Errorf("labels %v, want %v", l, want)
	}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q", k, l[k], v)
		}
	}
	if a := naming.Annotations("feature/login"); a["catalyst.dev/branch"] != "feature/login" {
		t.Errorf("annotations %v do not keep the raw branch", a)
	}
	if _, ok := naming.Labels("t", "p", "e", "")[naming.LabelBranch]; ok {
		t.Error("empty branch produced a label")
	}
	if len(naming.Annotations("")) != 0 {
		t.Error("empty branch produced an annotation")
	}
	if !naming.MatchesEnvironment(l, "my-team", "my-project", "pr-123") {
		t.Error("labels do not match their own environment")
	}
	if naming.MatchesEnvironment(l, "my-team", "my-project", "pr-124") {
		t.Error("labels match another environment")
	}
}

func TestIngressHost(t *testing.T) {
	for _, tc := range []struct {
		env, domain, want, err string
	}{
		{env: "pr-123", domain: "preview.example.dev", want: "pr-123.preview.example.dev"},
		{env: "pr-123", domain: "Preview.Example.dev.", want: "pr-123.preview.example.dev"},
		{env: "Feature/Login", domain: "preview.example.dev", want: "feature-login.preview.example.dev"},
		{env: "release.1", domain: "p.dev", want: "release-1.p.dev"},
		{env: strings.Repeat("e", 70), domain: "p.dev", want: strings.Repeat("e", 45) + "--" + sha(strings.Repeat("e", 70)) + ".p.dev"},
		{env: "pr-1", domain: "", err: "empty"},
		{env: "pr-1", domain: "under_score.dev", err: "not a DNS subdomain"},
		{env: "pr-1", domain: strings.Repeat("l", 64) + ".dev", err: "label"},
		{env: "pr-1", domain: strings.Repeat(strings.Repeat("d", 61)+".", 4) + "dev", err: "not a valid host name"},
	} {
		got, err := naming.IngressHost(tc.env, tc.domain)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("IngressHost(%q, %q) = %q, %v; want an error saying %q", tc.env, tc.domain, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("IngressHost(%q, %q) = %q, %v; want %q", tc.env, tc.domain, got, err, tc.want)
		}
	}
	if got := naming.WildcardHost("Preview.Example.dev."); got != "*.preview.example.dev" {
		t.Errorf("WildcardHost = %q", got)
	}
}

func TestNamespaceName_DocumentedExample(t *testing.T) {
	got := naming.NamespaceName("a-very-long-team-name", "with-a-very-long-project-name-and", "pr-12345")
	if want := "a-very-long-team-name-with-a-very-long-projec--08b52a15945f26d0"; got != want {
		t.Errorf("got %q, want %q (doc.go)", got, want)
	}
}
