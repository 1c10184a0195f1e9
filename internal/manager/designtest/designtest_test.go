package designtest

import (
	"slices"
	"testing"
)

func TestTypes(t *testing.T) {
	example := Generic(t, []byte(`{"name": "x", "count": 3, "ok": true, "items": [{"id": "a", "n": 1}], "none": [], "nested": {"at": "t"}}`))
	same := Generic(t, []byte(`{"name": "y", "count": 0.5, "ok": false, "items": [{"id": "b", "n": 2, "extra": {}}, {"id": "c", "n": 3}], "none": [1, "a"], "nested": {"at": "u"}, "more": 1}`))
	if diff := Types(example, same); len(diff) != 0 {
		t.Fatalf("same shape, extra keys: %v", diff)
	}
	other := Generic(t, []byte(`{"name": 1, "count": "3", "ok": "true", "items": [{"id": "b"}, {"id": 2, "n": {}}], "none": null}`))
	want := []string{
		"$.count: string, the design has number",
		"$.items[0].n: missing",
		"$.items[1].id: number, the design has string",
		"$.items[1].n: object, the design has number",
		"$.name: number, the design has string",
		"$.nested: missing",
		"$.none: null, the design has array",
		"$.ok: string, the design has boolean",
	}
	got := Types(example, other)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("differences:\n%q\nwant\n%q", got, want)
	}
	if d := Types(example, Generic(t, []byte(`[1]`))); len(d) != 1 || d[0] != "$: array, the design has object" {
		t.Fatalf("an array for an object: %v", d)
	}
	if k := Keys(example); !slices.Equal(k, []string{"count", "items", "name", "nested", "none", "ok"}) {
		t.Fatalf("keys %v", k)
	}
}
