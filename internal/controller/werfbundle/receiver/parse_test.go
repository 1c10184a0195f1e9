package receiver

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	ev := func(repository, tag string) pushEvent { return pushEvent{repository: repository, tag: tag} }
	tests := []struct {
		name        string
		hints       hints
		body        string
		wantFormat  string
		wantEvents  []pushEvent
		wantIgnored int
		wantErr     string
	}{
		{
			name:       "distribution push by tag, v1 media type",
			hints:      hints{contentType: distributionEventsV1},
			body:       distributionPush,
			wantFormat: formatDistribution,
			wantEvents: []pushEvent{ev("registry.example.com:5000/org/bundle", "1.2.3")},
		},
		{
			name:       "distribution v2 media type with parameters",
			hints:      hints{contentType: distributionEventsV2 + "; charset=utf-8"},
			body:       distributionPush,
			wantFormat: formatDistribution,
			wantEvents: []pushEvent{ev("registry.example.com:5000/org/bundle", "1.2.3")},
		},
		{
			name:       "distribution detected from the body",
			hints:      hints{contentType: "application/json"},
			body:       distributionPush,
			wantFormat: formatDistribution,
			wantEvents: []pushEvent{ev("registry.example.com:5000/org/bundle", "1.2.3")},
		},
		{
			name:        "distribution ignores blobs, pulls and digests, takes the host from target.url, dedupes",
			hints:       hints{contentType: distributionEventsV1},
			body:        distributionMixed,
			wantFormat:  formatDistribution,
			wantEvents:  []pushEvent{ev("127.0.0.1:5001/demo/app", "0.2.0")},
			wantIgnored: 3,
		},
		{
			name:        "distribution push without any host is ignored",
			hints:       hints{contentType: distributionEventsV1},
			body:        `{"events":[{"action":"push","target":{"repository":"org/app","tag":"1"}}]}`,
			wantFormat:  formatDistribution,
			wantIgnored: 1,
		},
		{
			name:        "distribution push with an invalid tag is ignored",
			hints:       hints{contentType: distributionEventsV1},
			body:        `{"events":[{"action":"push","target":{"repository":"org/app","tag":"a b"},"request":{"host":"r.example"}}]}`,
			wantFormat:  formatDistribution,
			wantIgnored: 1,
		},
		{
			name:       "distribution empty envelope",
			hints:      hints{contentType: distributionEventsV1},
			body:       `{"events":[]}`,
			wantFormat: formatDistribution,
		},
		{
			name:       "distribution route",
			hints:      hints{format: formatDistribution},
			body:       distributionPush,
			wantFormat: formatDistribution,
			wantEvents: []pushEvent{ev("registry.example.com:5000/org/bundle", "1.2.3")},
		},
		{
			name:       "harbor default payload",
			hints:      hints{contentType: "application/json"},
			body:       harborPush,
			wantFormat: formatHarbor,
			wantEvents: []pushEvent{ev("harbor.example.com/project/repo", "1.2.3")},
		},
		{
			name:       "harbor cloudevents structured",
			hints:      hints{contentType: "application/cloudevents+json"},
			body:       harborCloudEvent,
			wantFormat: formatHarbor,
			wantEvents: []pushEvent{
				ev("harbor.example.com:8443/project/repo", "2.0.0"),
				ev("harbor.example.com:8443/project/repo", "stable"),
			},
		},
		{
			name:       "harbor cloudevents binary",
			hints:      hints{contentType: "application/json", ceType: harborPushCloudEvents},
			body:       harborBinaryData,
			wantFormat: formatHarbor,
			wantEvents: []pushEvent{ev("harbor.example.com/project/repo", "3.1.0")},
		},
		{
			name:        "harbor data without an event type is ignored",
			hints:       hints{contentType: "application/json"},
			body:        harborBinaryData,
			wantFormat:  formatHarbor,
			wantIgnored: 1,
		},
		{
			name:        "harbor pull is ignored",
			hints:       hints{contentType: "application/json"},
			body:        harborPull,
			wantFormat:  formatHarbor,
			wantIgnored: 1,
		},
		{
			name:        "harbor resource without url or tag is ignored",
			hints:       hints{format: formatHarbor},
			body:        `{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"1.0"},{"resource_url":"h.example/p/r@sha256:44"},{"tag":"2.0","resource_url":"h.example/p/r:2.0"}]}}`,
			wantFormat:  formatHarbor,
			wantEvents:  []pushEvent{ev("h.example/p/r", "2.0")},
			wantIgnored: 2,
		},
		{
			name:       "generic",
			hints:      hints{contentType: "application/json"},
			body:       genericPush,
			wantFormat: formatGeneric,
			wantEvents: []pushEvent{ev("ghcr.io/org/bundle", "1.2.3")},
		},
		{
			name:       "generic docker hub short name",
			body:       `{"repository":"org/bundle","tag":"v2"}`,
			wantFormat: formatGeneric,
			wantEvents: []pushEvent{ev("docker.io/org/bundle", "v2")},
		},
		{
			name:    "generic without a tag",
			body:    `{"repository":"ghcr.io/org/bundle"}`,
			wantErr: `needs both "repository" and "tag"`,
		},
		{
			name:    "generic with a bare host",
			body:    `{"repository":"ghcr.io","tag":"1"}`,
			wantErr: `"ghcr.io" is not a repository reference`,
		},
		{
			name:    "generic with an invalid tag",
			body:    `{"repository":"ghcr.io/org/bundle","tag":"../1"}`,
			wantErr: `"../1" is not a valid tag`,
		},
		{
			name:    "generic with a non-string repository",
			body:    `{"repository":42,"tag":"1"}`,
			wantErr: `unexpected number for field "repository"`,
		},
		{
			name:    "malformed JSON",
			body:    `{"events":[`,
			wantErr: "malformed JSON: unexpected end of input",
		},
		{
			name:    "syntax error reports an offset, not the body",
			body:    `{"repository": hunter2}`,
			wantErr: "malformed JSON: syntax error at byte offset",
		},
		{
			name:    "trailing data",
			body:    genericPush + `{}`,
			wantErr: "data after the top-level value",
		},
		{
			name:    "events is not a list",
			hints:   hints{contentType: distributionEventsV1},
			body:    `{"events":{}}`,
			wantErr: `unexpected object for field "events"`,
		},
		{
			name:    "top-level array",
			body:    `[]`,
			wantErr: "malformed JSON: unexpected array",
		},
		{
			name:    "unknown format",
			body:    `{"hello":"world"}`,
			wantErr: "unknown payload format",
		},
		{
			name:    "empty body",
			body:    ``,
			wantErr: "malformed JSON",
		},
		{
			name:    "harbor payload on the distribution route",
			hints:   hints{format: formatDistribution},
			body:    harborPush,
			wantErr: "payload is not a distribution notification (it looks like harbor)",
		},
		{
			name:    "distribution payload on the harbor route",
			hints:   hints{format: formatHarbor, contentType: distributionEventsV1},
			body:    distributionPush,
			wantErr: "payload is not a harbor notification",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.hints, []byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse() error = %v", err)
			}
			if got.format != tt.wantFormat {
				t.Errorf("format = %q, want %q", got.format, tt.wantFormat)
			}
			if !reflect.DeepEqual(got.events, tt.wantEvents) {
				t.Errorf("events = %+v, want %+v", got.events, tt.wantEvents)
			}
			if got.ignored != tt.wantIgnored {
				t.Errorf("ignored = %d, want %d", got.ignored, tt.wantIgnored)
			}
		})
	}
}
