package receiver

import "testing"

// FuzzParse feeds arbitrary requests to the payload parser. It must never panic, and whatever it
// accepts must be usable as is: every event has a repository in NormalizeRepository form and a
// valid tag, events are distinct, and a route naming a sender only yields that sender's format.
// The seed corpus in testdata/fuzz/FuzzParse holds real-looking distribution and Harbor payloads.
func FuzzParse(f *testing.F) {
	routes := []string{"", formatDistribution, formatHarbor}
	f.Fuzz(func(t *testing.T, route uint8, contentType, ceType string, body []byte) {
		h := hints{contentType: contentType, ceType: ceType, format: routes[int(route)%len(routes)]}
		p, err := parse(h, body)
		if err != nil {
			if len(p.events) != 0 || p.format != "" {
				t.Fatalf("parse failed (%v) but returned %+v", err, p)
			}
			return
		}
		switch p.format {
		case formatDistribution, formatHarbor, formatGeneric:
		default:
			t.Fatalf("unknown format %q", p.format)
		}
		if h.format != "" && p.format != h.format {
			t.Fatalf("route %q yielded format %q", h.format, p.format)
		}
		if p.format == formatGeneric && len(p.events) != 1 {
			t.Fatalf("generic payload yielded %d events", len(p.events))
		}
		if p.ignored < 0 {
			t.Fatalf("ignored = %d", p.ignored)
		}
		seen := map[pushEvent]bool{}
		for _, ev := range p.events {
			if ev.repository == "" || NormalizeRepository(ev.repository) != ev.repository {
				t.Fatalf("repository %q is not normalised (NormalizeRepository gives %q)", ev.repository, NormalizeRepository(ev.repository))
			}
			if ev.tag == "" || !validTag(ev.tag) {
				t.Fatalf("invalid tag %q", ev.tag)
			}
			if seen[ev] {
				t.Fatalf("duplicate event %+v", ev)
			}
			seen[ev] = true
		}
	})
}
