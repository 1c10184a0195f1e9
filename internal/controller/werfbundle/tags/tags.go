package tags

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// ErrNoMatch is matched by the error Select returns when no tag satisfies the constraint
// (errors.Is(err, ErrNoMatch)). The error itself is a *NoMatchError.
var ErrNoMatch = errors.New("no tag matches the version constraint")

// maxQuoted bounds how much of a rejected constraint an error message repeats.
const maxQuoted = 64

// Constraint is a parsed spec.registry.versionConstraint. The zero value, like a nil
// *Constraint, admits any stable version. A Constraint is immutable and safe for concurrent use.
type Constraint struct {
	raw string
	c   *semver.Constraints // nil: any stable version
	// pre is false when no version in the constraint names a prerelease (the string has no
	// "-" at all), so no prerelease can satisfy it and check skips them without asking c, which
	// is costly for a version it rejects.
	pre bool
}

// ParseConstraint parses a version constraint in Masterminds semver syntax. An empty or
// all-blank string means any stable (non-prerelease) version.
func ParseConstraint(s string) (*Constraint, error) {
	if strings.TrimSpace(s) == "" {
		return &Constraint{}, nil
	}
	c, err := semver.NewConstraint(s)
	if err != nil {
		q := quote(s)
		if errors.Is(err, semver.ErrConstraintTooLong) || errors.Is(err, semver.ErrTooManyConstraintGroups) {
			return nil, fmt.Errorf("versionConstraint %s: %w", q, err)
		}
		return nil, fmt.Errorf("versionConstraint %s: not a valid semver constraint "+
			`(examples: ">=1.2.0 <2.0.0", "~1.4", "^2", "1.x", "1.2 - 1.5", "^1 || ^2")`, q)
	}
	return &Constraint{raw: s, c: c, pre: strings.Contains(s, "-")}, nil
}

// quote renders s for an error message, shortened when long.
func quote(s string) string {
	if len(s) > maxQuoted {
		return fmt.Sprintf("%q... (%d bytes)", s[:maxQuoted], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// String returns the constraint as written, or "" for any stable version.
func (c *Constraint) String() string {
	if c == nil {
		return ""
	}
	return c.raw
}

// check reports whether the version satisfies the constraint.
func (c *Constraint) check(v *semver.Version) bool {
	if v.Prerelease() != "" && (c == nil || !c.pre) {
		return false
	}
	return c == nil || c.c == nil || c.c.Check(v)
}

// Matches reports whether tag is a version tag (see the package documentation) that satisfies
// the constraint.
func (c *Constraint) Matches(tag string) bool {
	v, ok := ParseTag(tag)
	return ok && c.check(v)
}

// ParseTag parses a tag as a version: a full MAJOR.MINOR.PATCH semantic version with optional
// prerelease and build metadata, optionally preceded by one "v". It reports false for any other
// tag.
func ParseTag(tag string) (*semver.Version, bool) {
	s := strings.TrimPrefix(tag, "v")
	// Cheap rejection of the common non-version tags (latest, main, sha-...) before the
	// parser allocates.
	if s == "" || s[0] < '0' || s[0] > '9' {
		return nil, false
	}
	v, err := semver.StrictNewVersion(s)
	if err != nil {
		return nil, false
	}
	return v, true
}

// Selection is the outcome of a successful Select.
type Selection struct {
	// Tag is the selected tag exactly as the registry lists it (v1.2.3 stays v1.2.3).
	Tag string
	// Version is the parsed version of Tag.
	Version *semver.Version
	// Tags is how many tags were considered, SemverTags how many of them were versions.
	Tags, SemverTags int
}

// NoMatchError is returned by Select when no tag satisfies the constraint. It matches
// ErrNoMatch under errors.Is.
type NoMatchError struct {
	// Constraint is the constraint as written, "" for any stable version.
	Constraint string
	// Tags is how many tags were considered, SemverTags how many of them were versions.
	Tags, SemverTags int
	// Highest is the highest version tag, whether or not it is a prerelease, or "" when there
	// was none.
	Highest string
}

// Error implements error.
func (e *NoMatchError) Error() string {
	what := "any stable version"
	if e.Constraint != "" {
		what = quote(e.Constraint)
	}
	msg := fmt.Sprintf("no tag matches %s (%d tags, %d semver", what, e.Tags, e.SemverTags)
	if e.Highest != "" {
		msg += "; highest semver " + e.Highest
	}
	return msg + ")"
}

// Is makes errors.Is(err, ErrNoMatch) true.
func (e *NoMatchError) Is(target error) bool { return target == ErrNoMatch }

// candidate is a version tag.
type candidate struct {
	tag string
	v   *semver.Version
}

// compare orders candidates by precedence, then by preference among tags of equal precedence,
// lower preference first: build metadata ranks below none, a leading "v" below none, and a
// lexically larger tag below a smaller one.
func compare(a, b candidate) int {
	if d := a.v.Compare(b.v); d != 0 {
		return d
	}
	if d := cmp.Compare(bool2int(b.v.Metadata() != ""), bool2int(a.v.Metadata() != "")); d != 0 {
		return d
	}
	if d := cmp.Compare(bool2int(strings.HasPrefix(b.tag, "v")), bool2int(strings.HasPrefix(a.tag, "v"))); d != 0 {
		return d
	}
	return strings.Compare(b.tag, a.tag)
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Select returns the highest version tag that satisfies the constraint; see the package
// documentation for what counts as a version and how ties are broken. When none does, the error
// is a *NoMatchError and matches ErrNoMatch.
//
// For n tags it parses each once, builds a max-heap in O(n) and checks the constraint against
// candidates highest first, stopping at the first match: O(n + k log n) when the match is the
// k-th highest version, O(n log n) at worst.
func (c *Constraint) Select(tags []string) (Selection, error) {
	h := make(maxHeap, 0, len(tags))
	for _, t := range tags {
		if v, ok := ParseTag(t); ok {
			h = append(h, candidate{tag: t, v: v})
		}
	}
	semverTags := len(h)
	var highest string
	// Checking the constraint is what costs (Masterminds allocates an error for each version
	// it rejects), comparing versions does not: visit candidates from the top down.
	h.init()
	for i := 0; len(h) > 0; i++ {
		cand := h.pop()
		if i == 0 {
			highest = cand.tag
		}
		if c.check(cand.v) {
			return Selection{Tag: cand.tag, Version: cand.v, Tags: len(tags), SemverTags: semverTags}, nil
		}
	}
	return Selection{}, &NoMatchError{
		Constraint: c.String(), Tags: len(tags), SemverTags: semverTags, Highest: highest,
	}
}

// maxHeap is a binary max-heap of candidates under compare.
type maxHeap []candidate

func (h maxHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// pop removes and returns the greatest candidate. h must not be empty.
func (h *maxHeap) pop() candidate {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	old[last] = candidate{}
	*h = old[:last]
	h.down(0)
	return top
}

func (h maxHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		big := l
		if r := l + 1; r < len(h) && compare(h[r], h[l]) > 0 {
			big = r
		}
		if compare(h[big], h[i]) <= 0 {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}
