package tags

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// registryTags returns n tags shaped like a long-lived repository's, in random order: a release
// history over several majors where most releases are preceded by release candidates, a stretch
// tagged with a leading v, some rebuilt with build metadata, and branch, digest and "latest"
// tags in between. Deterministic for a given n.
func registryTags(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, 0, n)
	var major, minor, patch int
	for len(out) < n {
		switch k := r.IntN(1000); {
		case k < 2:
			major, minor, patch = major+1, 0, 0
		case k < 100:
			minor, patch = minor+1, 0
		default:
			patch++
		}
		prefix := ""
		if major == 2 {
			prefix = "v"
		}
		for rc := range max(0, r.IntN(6)-3) {
			out = append(out, fmt.Sprintf("%s%d.%d.%d-rc.%d", prefix, major, minor, patch, rc+1))
		}
		out = append(out, fmt.Sprintf("%s%d.%d.%d", prefix, major, minor, patch))
		if r.IntN(20) == 0 {
			out = append(out, fmt.Sprintf("%s%d.%d.%d+rebuild.1", prefix, major, minor, patch))
		}
		for range r.IntN(3) {
			out = append(out, fmt.Sprintf("sha-%07x", r.Uint32()&0xfffffff))
		}
		if r.IntN(50) == 0 {
			out = append(out, fmt.Sprintf("%d.%d", major, minor), "main", "latest")
		}
	}
	out = out[:n]
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func BenchmarkSelect(b *testing.B) {
	shuffled := registryTags(10_000)
	sorted := slices.Clone(shuffled)
	slices.Sort(sorted) // registries commonly list tags in lexical order
	for _, bc := range []struct{ name, constraint string }{
		{"any", ""},                         // the highest release matches
		{"caret", "^4"},                     // about half the versions are higher
		{"range", ">=2.0.0 <3.0.0 || ~5.1"}, // two OR groups, match deep down
		{"prerelease", ">=8.0.0-0"},         // prereleases admitted
		{"none", ">=100.0.0"},               // worst case: every version checked
	} {
		c, err := ParseConstraint(bc.constraint)
		if err != nil {
			b.Fatal(err)
		}
		for _, order := range []struct {
			name string
			tags []string
		}{{"shuffled", shuffled}, {"sorted", sorted}} {
			b.Run(bc.name+"/"+order.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					_, _ = c.Select(order.tags)
				}
			})
		}
	}
}
