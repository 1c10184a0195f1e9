package tags

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestParseConstraint_AcceptsMastermindsSyntax(t *testing.T) {
	for _, s := range []string{
		"", "  ", "*", "1.x", "1.2.*", "~1.2", "~>1.2.3", "^0.2.3", "^2", ">=1.2.0 <2.0.0",
		">= 1.2, < 1.4", "1.2 - 1.4", "^1 || ^2", "!=1.4.0", "=1.2.3", "v1.2.3", ">=1.0.0-0",
	} {
		c, err := ParseConstraint(s)
		if err != nil {
			t.Errorf("ParseConstraint(%q): %v", s, err)
			continue
		}
		if strings.TrimSpace(s) == "" && c.String() != "" {
			t.Errorf("ParseConstraint(%q).String() = %q, want empty", s, c.String())
		}
	}
}

func TestParseConstraint_RejectsGarbageWithClearError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"foo", `versionConstraint "foo": not a valid semver constraint`},
		{">>1.2", `versionConstraint ">>1.2": not a valid semver constraint`},
		{"latest", `versionConstraint "latest": not a valid semver constraint`},
		{"1.2.3 ||", `versionConstraint "1.2.3 ||": not a valid semver constraint`},
		{strings.Repeat("1", 600), `versionConstraint "1111111111111111111111111111111111111111111111111111111111111111"... (600 bytes): constraint string is too long`},
		{strings.Repeat("1||", 40) + "1", "too many constraint groups"},
	} {
		_, err := ParseConstraint(tc.in)
		if err == nil {
			t.Errorf("ParseConstraint(%q): no error", tc.in)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConstraint(%.20q) error %q, want it to contain %q", tc.in, err, tc.want)
		}
	}
}

func TestParseTag_OnlyFullSemverWithOptionalV(t *testing.T) {
	for _, tc := range []struct {
		tag string
		ok  bool
	}{
		{"1.2.3", true}, {"v1.2.3", true}, {"0.0.0", true}, {"1.2.3-rc.1", true},
		{"1.2.3+build.5", true}, {"v1.2.3-alpha.1+meta", true},
		{"", false}, {"v", false}, {"latest", false}, {"main", false}, {"sha-abc123", false},
		{"1", false}, {"1.2", false}, {"v1.2", false}, {"1.2.3.4", false}, {"01.2.3", false},
		{"1.02.3", false}, {"vv1.2.3", false}, {"V1.2.3", false}, {" 1.2.3", false},
		{"1.2.3-", false}, {"1.2.3+", false}, {"1.2.3-01", false}, {"1.2.3-a..b", false},
		{"1.2.3_build", false}, {"99999999999999999999.0.0", false},
	} {
		if _, ok := ParseTag(tc.tag); ok != tc.ok {
			t.Errorf("ParseTag(%q) ok = %v, want %v", tc.tag, ok, tc.ok)
		}
	}
}

func TestSelect_HighestMatchingTag(t *testing.T) {
	for _, tc := range []struct {
		name       string
		constraint string
		tags       []string
		want       string // "" means ErrNoMatch
	}{
		{"empty constraint takes highest release", "", []string{"1.0.0", "1.10.0", "1.9.0"}, "1.10.0"},
		{"leading v kept as in registry", "", []string{"v1.0.0", "v1.2.0", "v1.1.0"}, "v1.2.0"},
		{"leading v and plain mixed", ">=1.0.0", []string{"v2.0.0", "1.5.0", "v1.9.9"}, "v2.0.0"},
		{"same version with and without v prefers plain", "", []string{"v1.2.3", "1.2.3"}, "1.2.3"},
		{"same version with and without v prefers plain reversed", "", []string{"1.2.3", "v1.2.3"}, "1.2.3"},
		{"build metadata ignored for precedence", "", []string{"1.2.3+zzz", "1.2.2+aaa"}, "1.2.3+zzz"},
		{"build metadata tie prefers none", "", []string{"1.2.3+b1", "1.2.3", "1.2.3+b0"}, "1.2.3"},
		{"build metadata tie prefers none over v", "", []string{"1.2.3+b1", "v1.2.3"}, "v1.2.3"},
		{"build metadata tie is lexical", "", []string{"1.2.3+b2", "1.2.3+b10", "1.2.3+b1"}, "1.2.3+b1"},
		{"garbage ignored", "", []string{"latest", "main", "sha-deadbeef", "1.0.0", "2.0", "v3", "01.5.0"}, "1.0.0"},
		{"partial versions are not tags", "^2", []string{"2", "2.1", "2.0.1"}, "2.0.1"},
		{"empty constraint never picks prerelease", "", []string{"1.0.0", "2.0.0-rc.1", "1.1.0-beta"}, "1.0.0"},
		{"plain constraint skips prerelease", ">=1.0.0", []string{"1.0.0", "2.0.0-rc.1"}, "1.0.0"},
		{"prerelease constraint admits prerelease", ">=1.0.0-0", []string{"1.0.0", "2.0.0-rc.1"}, "2.0.0-rc.1"},
		{"release outranks its prerelease", ">=1.0.0-0", []string{"2.0.0-rc.1", "2.0.0", "2.0.0-rc.2"}, "2.0.0"},
		{"prerelease numeric ordering", ">=2.0.0-0", []string{"2.0.0-rc.2", "2.0.0-rc.10", "2.0.0-rc.9"}, "2.0.0-rc.10"},
		{"prerelease admitted beyond the named version", "~1.2.0-0", []string{"1.2.5-beta.1", "1.2.4"}, "1.2.5-beta.1"},
		{"prerelease only in its own OR group", "^1.0.0 || >=3.0.0-0", []string{"1.5.0", "1.6.0-rc.1", "2.5.0"}, "1.5.0"},
		{"prerelease group admits its own", "^1.0.0 || >=3.0.0-0", []string{"1.5.0", "3.0.0-rc.1"}, "3.0.0-rc.1"},
		{"OR picks highest across groups", "^1.2 || ~3.1", []string{"1.9.0", "2.0.0", "3.1.4", "3.2.0"}, "3.1.4"},
		{"tilde", "~1.2", []string{"1.2.0", "1.2.9", "1.3.0"}, "1.2.9"},
		{"tilde with patch", "~1.2.3", []string{"1.2.2", "1.2.8", "1.3.0"}, "1.2.8"},
		{"caret", "^1.2", []string{"1.1.0", "1.9.9", "2.0.0"}, "1.9.9"},
		{"caret zero major", "^0.2.3", []string{"0.2.9", "0.3.0", "1.0.0"}, "0.2.9"},
		{"caret zero minor", "^0.0.3", []string{"0.0.3", "0.0.4"}, "0.0.3"},
		{"wildcard x", "1.x", []string{"1.4.0", "2.0.0", "0.9.0"}, "1.4.0"},
		{"wildcard star patch", "1.2.*", []string{"1.2.7", "1.3.0"}, "1.2.7"},
		{"star", "*", []string{"0.1.0", "4.0.0", "5.0.0-rc.1"}, "4.0.0"},
		{"hyphen range", "1.2 - 1.4", []string{"1.1.9", "1.4.5", "1.5.0"}, "1.4.5"},
		{"hyphen range full", "1.2.3 - 2.3.4", []string{"2.3.4", "2.3.5"}, "2.3.4"},
		{"and with comma", ">= 1.2, < 1.4", []string{"1.3.9", "1.4.0"}, "1.3.9"},
		{"not equal", ">=1.0.0, !=1.4.0", []string{"1.4.0", "1.3.0"}, "1.3.0"},
		{"exact", "=1.2.3", []string{"1.2.3", "1.2.4"}, "1.2.3"},
		{"exact matches v tag", "1.2.3", []string{"v1.2.3"}, "v1.2.3"},
		{"constraint with v", ">=v1.2.0", []string{"1.2.0"}, "1.2.0"},
		{"numeric not lexical", ">=0.0.0", []string{"0.9.0", "0.10.0", "0.2.0"}, "0.10.0"},
		{"duplicate tags", "", []string{"1.0.0", "1.0.0"}, "1.0.0"},
		{"empty list", "", nil, ""},
		{"only garbage", "", []string{"latest", "main"}, ""},
		{"only prereleases", "", []string{"1.0.0-rc.1"}, ""},
		{"nothing in range", ">=2.0.0", []string{"1.0.0", "1.4.0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConstraint(tc.constraint)
			if err != nil {
				t.Fatal(err)
			}
			sel, err := c.Select(tc.tags)
			if tc.want == "" {
				if !errors.Is(err, ErrNoMatch) {
					t.Fatalf("Select(%q) = %+v, %v; want ErrNoMatch", tc.tags, sel, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Select(%q): %v", tc.tags, err)
			}
			if sel.Tag != tc.want {
				t.Fatalf("Select(%q) = %q, want %q", tc.tags, sel.Tag, tc.want)
			}
			if got, _ := ParseTag(sel.Tag); !got.Equal(sel.Version) || got.Metadata() != sel.Version.Metadata() {
				t.Errorf("Selection.Version = %v, want the version of %q", sel.Version, sel.Tag)
			}
			if !c.Matches(sel.Tag) {
				t.Errorf("Matches(%q) = false for the selected tag", sel.Tag)
			}
			// The result never depends on the order the registry lists tags in.
			rev := slices.Clone(tc.tags)
			slices.Reverse(rev)
			if sel2, err := c.Select(rev); err != nil || sel2.Tag != sel.Tag {
				t.Errorf("Select(reversed) = %q, %v; want %q", sel2.Tag, err, sel.Tag)
			}
		})
	}
}

func TestSelect_CountsTags(t *testing.T) {
	c, _ := ParseConstraint("^1")
	sel, err := c.Select([]string{"latest", "1.0.0", "v1.1.0", "1.2", "2.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if sel.Tags != 5 || sel.SemverTags != 3 {
		t.Errorf("Tags, SemverTags = %d, %d; want 5, 3", sel.Tags, sel.SemverTags)
	}
}

func TestSelect_NoMatchErrorSaysWhatWasSeen(t *testing.T) {
	tags := []string{
		"1.0.0", "1.1.0", "1.2.0", "1.3.0", "v1.4.0", "1.4.0", "0.1.0", "0.2.0", "0.3.0",
		"latest", "main", "1.5",
	}
	for _, tc := range []struct {
		constraint string
		tags       []string
		want       string
	}{
		{">=2.0.0", tags, `no tag matches ">=2.0.0" (12 tags, 9 semver; highest semver 1.4.0)`},
		{"", []string{"latest", "2.0.0-rc.1", "1.0.0-rc.1"}, `no tag matches any stable version (3 tags, 2 semver; highest semver 2.0.0-rc.1)`},
		{"^3", nil, `no tag matches "^3" (0 tags, 0 semver)`},
		{"^3", []string{"latest"}, `no tag matches "^3" (1 tags, 0 semver)`},
	} {
		c, err := ParseConstraint(tc.constraint)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Select(tc.tags)
		if !errors.Is(err, ErrNoMatch) {
			t.Fatalf("Select: %v, want ErrNoMatch", err)
		}
		if err.Error() != tc.want {
			t.Errorf("error = %q\n want %q", err, tc.want)
		}
		var nm *NoMatchError
		if !errors.As(err, &nm) || nm.Tags != len(tc.tags) {
			t.Errorf("errors.As(*NoMatchError) = %+v", nm)
		}
	}
}

func TestSelect_ZeroAndNilConstraintMeanAnyStable(t *testing.T) {
	tags := []string{"1.0.0", "2.0.0-rc.1"}
	var zero Constraint
	var nilC *Constraint
	for _, c := range []*Constraint{&zero, nilC} {
		sel, err := c.Select(tags)
		if err != nil || sel.Tag != "1.0.0" {
			t.Errorf("Select = %q, %v; want 1.0.0", sel.Tag, err)
		}
	}
}

func TestSelect_HugeListAgreesWithBruteForce(t *testing.T) {
	tags := registryTags(10_000)
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range []string{"", "^4", ">=2.0.0 <3.0.0 || ~5.1", ">=8.0.0-0", ">=100.0.0", "~3.7", "<1.0.0", "2.x || 6.x"} {
		c, err := ParseConstraint(s)
		if err != nil {
			t.Fatal(err)
		}
		want, wantOK := bruteForce(c, tags)
		sel, err := c.Select(tags)
		if wantOK != (err == nil) || (wantOK && sel.Tag != want) {
			t.Errorf("Select(%q) = %q, %v; want %q (found %v)", s, sel.Tag, err, want, wantOK)
		}
		shuffled := slices.Clone(tags)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if sel2, _ := c.Select(shuffled); sel2.Tag != sel.Tag {
			t.Errorf("Select(%q) on shuffled tags = %q, want %q", s, sel2.Tag, sel.Tag)
		}
	}
}

// bruteForce is the obvious quadratic-free reference: check every tag against the Masterminds
// constraint directly (without the prerelease shortcut) and keep the best under compare.
func bruteForce(c *Constraint, tags []string) (string, bool) {
	var best *candidate
	for _, t := range tags {
		v, ok := ParseTag(t)
		if !ok {
			continue
		}
		var match bool
		if c.c == nil {
			match = v.Prerelease() == ""
		} else {
			match = c.c.Check(v)
		}
		if !match {
			continue
		}
		if cand := (candidate{tag: t, v: v}); best == nil || compare(cand, *best) > 0 {
			best = &cand
		}
	}
	if best == nil {
		return "", false
	}
	return best.tag, true
}
