package request

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestValuesFor(t *testing.T) {
	t.Parallel()
	req := &Spec{
		Values: json.RawMessage(`{"replicaCount": 2, "image": {"tag": "v1", "pullPolicy": "IfNotPresent"}, "webhook": {"enabled": true}, "debug": true}`),
		ValuesByEnvironment: map[string]json.RawMessage{
			"Production": json.RawMessage(`{"replicaCount": 3, "image": {"tag": "v1-hardened"}, "debug": null, "extra": {"a": 1, "b": null}}`),
			"Dev":        json.RawMessage(`null`),
		},
	}
	prod, err := req.ValuesFor("Production")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"replicaCount": 3.0,
		"image":        map[string]any{"tag": "v1-hardened", "pullPolicy": "IfNotPresent"},
		"webhook":      map[string]any{"enabled": true},
		"extra":        map[string]any{"a": 1.0},
	}
	if !reflect.DeepEqual(prod, want) {
		t.Errorf("Production values = %v, want %v", prod, want)
	}
	for _, env := range []string{"Dev", "Staging"} {
		got, err := req.ValuesFor(env)
		if err != nil {
			t.Fatal(err)
		}
		if got["replicaCount"] != 2.0 || got["debug"] != true {
			t.Errorf("%s values = %v", env, got)
		}
	}
	empty, err := (&Spec{}).ValuesFor("Dev")
	if err != nil || len(empty) != 0 || empty == nil {
		t.Errorf("no values = %v, %v", empty, err)
	}
}
