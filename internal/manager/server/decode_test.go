package server

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

func TestDecodeBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, wantField, wantMsg string
	}{
		{name: "empty", body: "  ", wantMsg: "empty"},
		{name: "malformed", body: `{"name": }`, wantMsg: "malformed JSON"},
		{name: "truncated", body: `{"name": "a"`, wantMsg: "ends early"},
		{name: "unknown field", body: `{"name":"a","kubeconfg":"x"}`, wantField: "kubeconfg", wantMsg: "unknown field"},
		{name: "wrong type", body: `{"name": 3}`, wantField: "name", wantMsg: "must be a string"},
		{name: "nested wrong type", body: `{"chart": {"name": []}}`, wantField: "chart.name", wantMsg: "must be a string"},
		{name: "not an object", body: `[1,2]`, wantMsg: "JSON object"},
		{name: "trailing data", body: `{"name":"a"} {"name":"b"}`, wantMsg: "after the JSON object"},
		{name: "trailing garbage", body: `{"name":"a"} x`, wantMsg: "after the JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req api.OperatorRequest
			err := decodeBody([]byte(tt.body), &req)
			if err == nil {
				t.Fatalf("decodeBody(%q) = nil, want an error", tt.body)
			}
			e := toError(err)
			if e.Status != 400 {
				t.Errorf("status = %d, want 400", e.Status)
			}
			if !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("message %q does not say %q", e.Message, tt.wantMsg)
			}
			if tt.wantField != "" && e.Details["field"] != tt.wantField {
				t.Errorf("field = %v, want %q", e.Details["field"], tt.wantField)
			}
		})
	}
	var ok api.OperatorRequest
	if err := decodeBody([]byte(`{"name":"a","namespace":"b","chart":{"repository":"oci://r/x","name":"c"}}`), &ok); err != nil {
		t.Fatalf("a valid body was refused: %v", err)
	}
	if ok.Chart.Name != "c" {
		t.Fatalf("decoded %+v", ok)
	}
}

// FuzzDecodeBody: any bytes give a request or a 400 naming what is wrong, never a panic or another status.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":"a"}`, `{"chart":{"repository":"oci://x","name":"y"}}`, `[`, `{"name":1}`,
		`{"name":"a"}x`, "\x00", `{"versions":">=1"}`, `{"kubeconfig":"apiVersion: v1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&api.OperatorRequest{}, &api.ClusterRequest{}, &api.ValidateRequest{}, &api.CRDRequest{}, &api.ApproveRequest{}} {
			if err := decodeBody(body, v); err != nil {
				if e := toError(err); e.Status != 400 || e.Message == "" {
					t.Fatalf("decodeBody(%q) gave %d %q", body, e.Status, e.Message)
				}
			}
		}
	})
}
