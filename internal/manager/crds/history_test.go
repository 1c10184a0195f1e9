package crds

import (
	"errors"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// An operator's history: x is A in 1.0.0, B in 1.1.0, A in 2.0.0, dropped in 3.0.0 and shipped
// again (A) in 4.0.0; 0.9.0 and 0.9.5 were registered before the history was kept by version
// (0.9.0 introduced y; 0.9.5 has no row of its own).
func testHistory() *History {
	var versions []*store.OperatorVersion
	for _, v := range []string{"4.0.0", "3.0.0", "2.0.0", "1.1.0", "1.0.0", "0.9.5", "0.9.0"} {
		versions = append(versions, &store.OperatorVersion{Version: v})
	}
	row := func(v, name string, id int64) *store.CRDShipped {
		return &store.CRDShipped{Version: v, CRDName: name, SchemaID: id, Digest: map[int64]string{1: "A", 2: "B", 3: "Y"}[id]}
	}
	return NewHistory(versions, []string{"4.0.0", "3.0.0", "2.0.0", "1.1.0", "1.0.0"}, []*store.CRDShipped{
		row("1.0.0", "x", 1), row("1.1.0", "x", 2), row("2.0.0", "x", 1), row("4.0.0", "x", 1),
		row("0.9.0", "y", 3), row("1.0.0", "y", 3),
	})
}

func TestHistory_At(t *testing.T) {
	h := testHistory()
	for _, tt := range []struct {
		version, name, want string // want: digest, "dropped", "inferred:<digest>" or ""
	}{
		{"1.0.0", "x", "A"}, {"1.1.0", "x", "B"}, {"2.0.0", "x", "A"}, {"3.0.0", "x", "dropped"}, {"4.0.0", "x", "A"},
		{"0.9.0", "x", ""}, {"0.9.5", "y", "inferred:Y"}, {"0.9.0", "y", "Y"}, {"1.1.0", "y", "dropped"},
		{"5.0.0", "x", ""}, {"1.0.0", "z", ""},
	} {
		s := h.At(tt.version, tt.name)
		got := ""
		switch {
		case s.Row != nil && s.Inferred:
			got = "inferred:" + s.Row.Digest
		case s.Row != nil:
			got = s.Row.Digest
		case s.Dropped:
			got = "dropped"
		}
		if got != tt.want {
			t.Errorf("At(%s, %s) = %q (%+v), want %q", tt.version, tt.name, got, s, tt.want)
		}
	}
}

func TestHistory_PathsAndNames(t *testing.T) {
	h := testHistory()
	var path []string
	for _, s := range h.Between("x", "1.0.0", "4.0.0") {
		d := "-"
		if s.Row != nil {
			d = s.Row.Digest
		}
		path = append(path, s.Version+"="+d)
	}
	if got := strings.Join(path, " "); got != "1.1.0=B 2.0.0=A 3.0.0=- 4.0.0=A" {
		t.Errorf("Between 1.0.0 and 4.0.0: %s", got)
	}
	if p := h.Between("x", "4.0.0", "1.0.0"); p != nil {
		t.Errorf("Between going down: %+v, want none", p)
	}
	if names, ok := h.Names("3.0.0"); !ok || len(names) != 0 {
		t.Errorf("Names(3.0.0) = %v, %v; want none, recorded", names, ok)
	}
	if _, ok := h.Names("0.9.5"); ok {
		t.Error("Names(0.9.5): an unrecorded version's list is known")
	}
	if h.Previous("1.0.0") != "0.9.5" || h.Previous("0.9.0") != "" || h.Previous("7.0.0") != "" {
		t.Errorf("Previous: %q %q %q", h.Previous("1.0.0"), h.Previous("0.9.0"), h.Previous("7.0.0"))
	}
}

func TestCheckNote(t *testing.T) {
	ok := []store.MigrationNote{
		{Text: "  Move **spec.a**.  "}, {URL: "https://docs.example.com/x?y=1#z"}, {Text: "t", URL: "http://intranet:8080/guide"},
		{Text: strings.Repeat("é", MaxNoteText)},
	}
	for _, n := range ok {
		got, err := CheckNote("note", n)
		if err != nil || got.Text != strings.TrimSpace(n.Text) {
			t.Errorf("CheckNote(%+v) = %+v, %v", n, got, err)
		}
	}
	for _, tt := range []struct {
		note  store.MigrationNote
		field string
	}{
		{store.MigrationNote{Text: "   "}, "note"},
		{store.MigrationNote{Text: strings.Repeat("a", MaxNoteText+1)}, "note.text"},
		{store.MigrationNote{Text: "bad \xff"}, "note.text"},
		{store.MigrationNote{URL: "ftp://x.example.com/"}, "note.url"},
		{store.MigrationNote{URL: "javascript:alert(1)"}, "note.url"},
		{store.MigrationNote{URL: "https:///path"}, "note.url"},
		{store.MigrationNote{URL: "https://user:pw@x.example.com/"}, "note.url"},
		{store.MigrationNote{URL: "https://x.example.com/" + strings.Repeat("a", MaxNoteURL)}, "note.url"},
		{store.MigrationNote{URL: "https://x.example.com/%zz"}, "note.url"},
	} {
		_, err := CheckNote("note", tt.note)
		var e *invalid.Error
		if !errors.As(err, &e) || e.Field != tt.field {
			t.Errorf("CheckNote(%.40q): %v, want an invalid %s", tt.note.Text+tt.note.URL, err, tt.field)
		}
	}
}
