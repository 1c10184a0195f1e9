package sqlstore

import (
	"strings"
	"testing"
)

func TestParseQueries(t *testing.T) {
	t.Parallel()
	got, err := ParseQueries(`-- file comment
-- name: A
SELECT 1; -- trailing

-- name: B
-- a comment inside is dropped
SELECT *
FROM t WHERE x = $1;
`)
	if err != nil {
		t.Fatal(err)
	}
	if got["A"] != "SELECT 1; -- trailing" || got["B"] != "SELECT *\nFROM t WHERE x = $1" || len(got) != 2 {
		t.Fatalf("parsed %q", got)
	}
	for src, want := range map[string]string{
		"SELECT 1": "before the first",
		"-- name: A\nSELECT 1\n-- name: A\nSELECT 2": "defined twice",
		"-- name: A\n-- name: B\nSELECT 1":           "query A is empty",
	} {
		if _, err := ParseQueries(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseQueries(%q): %v, want an error saying %q", src, err, want)
		}
	}
}

func TestListQuery(t *testing.T) {
	t.Parallel()
	l := newListQuery("crd")
	l.where("a = ?", "x")
	l.where("b > ?", 3)
	q, args := l.build("SELECT * FROM t WHERE name = $1 /*filters*/\nORDER BY id", 10)
	want := "SELECT * FROM t WHERE name = $1  AND a = $2 AND b > $3\nORDER BY id\nLIMIT $4"
	if q != want || len(args) != 4 || args[3] != 10 {
		t.Fatalf("built %q %v, want %q", q, args, want)
	}
	q, args = newListQuery().build("SELECT 1 WHERE true /*filters*/", 5)
	if q != "SELECT 1 WHERE true \nLIMIT $1" || len(args) != 1 {
		t.Fatalf("no filters: %q %v", q, args)
	}
}

func TestSchemaErrorMessages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    SchemaError
		want string
	}{
		{SchemaError{Min: 1, Max: 4}, "not initialized but this manager knows versions 1-4: run `manager migrate`"},
		{SchemaError{Current: 3, Min: 1, Max: 4}, "at version 3 but this manager knows 1-4: run `manager migrate`"},
		{SchemaError{Current: 5, Min: 1, Max: 4, Unknown: []int64{5}}, "at version 5, newer than this manager (which knows 1-4; not version 5): upgrade the manager"},
		{SchemaError{Current: 14, Min: 1, Max: 15, Missing: []int64{13}}, "at version 14 but lacks version 13 of the versions 1-15 this manager knows: run `manager migrate`"},
		{SchemaError{Current: 14, Min: 1, Max: 14, Missing: []int64{7, 13}}, "at version 14 but lacks versions 7, 13 of the versions 1-14"},
	} {
		if got := c.e.Error(); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want it to say %q", c.e, got, c.want)
		}
	}
}
