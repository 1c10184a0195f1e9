package ratelimit

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func TestParseRules(t *testing.T) {
	got, err := ParseRules(" POST /api/v1/clusters=5/min, get /api/v1/operators = 60/minute,DELETE /api/v1/clusters/{name}=3/10s,GET /a=100/hour,GET /b=2/s")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Rule{
		"POST /api/v1/clusters":          {5, time.Minute},
		"GET /api/v1/operators":          {60, time.Minute},
		"DELETE /api/v1/clusters/{name}": {3, 10 * time.Second},
		"GET /a":                         {100, time.Hour},
		"GET /b":                         {2, time.Second},
	}
	if !maps.Equal(got, want) {
		t.Fatalf("ParseRules = %v, want %v", got, want)
	}
	empty, err := ParseRules("  ")
	if err != nil || len(empty) != 0 {
		t.Fatalf("empty value: %v, %v", empty, err)
	}
}

func TestParseRulesRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"POST /api/v1/clusters":                                   "want \"METHOD /path=N/period\"",
		"/api/v1/clusters=5/min":                                  "want \"METHOD /path\"",
		"FETCH /api/v1/clusters=5/min":                            "unknown method \"FETCH\"",
		"POST api/v1/clusters=5/min":                              "must start with /",
		"POST /api/v1/clusters=5":                                 "want N/period",
		"POST /api/v1/clusters=0/min":                             "not a positive whole number",
		"POST /api/v1/clusters=-1/min":                            "not a positive whole number",
		"POST /api/v1/clusters=five/min":                          "not a positive whole number",
		"POST /api/v1/clusters=5/fortnight":                       "period \"fortnight\"",
		"POST /api/v1/clusters=5/100ms":                           "at least 1s",
		"POST /api/v1/clusters=5/min,post /api/v1/clusters=6/min": "limited twice",
		"POST /api/v1/clusters=5/min,":                            "rate limit 2",
	} {
		_, err := ParseRules(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRules(%q) = %v, want an error mentioning %q", in, err, want)
		}
	}
}

func TestFormatRulesRoundTrip(t *testing.T) {
	s := FormatRules(DefaultRules())
	if s != "GET /api/v1/clusters=60/min,GET /api/v1/operators=60/min,POST /api/v1/clusters=5/min,POST /api/v1/deployments=10/min" {
		t.Fatalf("FormatRules = %q", s)
	}
	back, err := ParseRules(s)
	if err != nil || !maps.Equal(back, DefaultRules()) {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	odd := map[string]Rule{"GET /x": {3, 90 * time.Second}, "GET /y": {1, time.Hour}, "GET /z": {4, time.Second}}
	back, err = ParseRules(FormatRules(odd))
	if err != nil || !maps.Equal(back, odd) {
		t.Fatalf("round trip of %v: %v, %v", odd, back, err)
	}
}
