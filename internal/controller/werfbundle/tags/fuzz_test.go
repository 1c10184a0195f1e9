package tags

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzSelect feeds random tag lists (one tag per line) and constraints. Select must not panic,
// must return one of the input tags, the tag must satisfy the constraint, no other satisfying tag
// may be higher, and the result must equal a brute-force search and not depend on tag order.
func FuzzSelect(f *testing.F) {
	f.Add("1.0.0\nv1.2.0\nlatest\n1.2.0+b1", "")
	f.Add("1.2.3\nv1.2.3\n1.2.3+a\n1.2.3+b", ">=1.0.0")
	f.Add("2.0.0-rc.1\n2.0.0-rc.10\n1.9.9\n2.0.0-beta", ">=1.0.0-0")
	f.Add("1.5.0\n1.6.0-rc.1\n3.0.0-rc.1", "^1.0.0 || >=3.0.0-0")
	f.Add("1.2.0\n1.4.5\n1.5.0", "1.2 - 1.4")
	f.Add("0.2.9\n0.3.0", "^0.2.3")
	f.Add("1.2.7\n1.3.0", "~1.2 || 1.x")
	f.Add("", "*")
	f.Fuzz(func(t *testing.T, list, constraint string) {
		c, err := ParseConstraint(constraint)
		if err != nil {
			if c != nil {
				t.Fatalf("ParseConstraint(%q) returned a constraint and an error", constraint)
			}
			if !strings.HasPrefix(err.Error(), "versionConstraint ") {
				t.Fatalf("ParseConstraint error %q does not name the field", err)
			}
			return
		}
		tags := strings.Split(list, "\n")
		sel, err := c.Select(tags)
		want, wantOK := bruteForce(c, tags)
		if !wantOK {
			if !errors.Is(err, ErrNoMatch) {
				t.Fatalf("Select(%q, %q) = %q, %v; want ErrNoMatch", tags, constraint, sel.Tag, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Select(%q, %q): %v; want %q", tags, constraint, err, want)
		}
		if !slices.Contains(tags, sel.Tag) {
			t.Fatalf("Select returned %q, not an input tag", sel.Tag)
		}
		if !c.Matches(sel.Tag) {
			t.Fatalf("Select returned %q, which does not satisfy %q", sel.Tag, constraint)
		}
		for _, other := range tags {
			if v, ok := ParseTag(other); ok && c.Matches(other) && v.GreaterThan(sel.Version) {
				t.Fatalf("Select returned %q but %q also matches %q and is higher", sel.Tag, other, constraint)
			}
		}
		if sel.Tag != want {
			t.Fatalf("Select returned %q, brute force %q", sel.Tag, want)
		}
		rev := slices.Clone(tags)
		slices.Reverse(rev)
		if sel2, err := c.Select(rev); err != nil || sel2.Tag != sel.Tag {
			t.Fatalf("Select on reversed tags = %q, %v; want %q", sel2.Tag, err, sel.Tag)
		}
	})
}
