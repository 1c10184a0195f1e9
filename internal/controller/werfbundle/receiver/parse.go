package receiver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strings"
)

// Payload formats the receiver understands.
const (
	formatDistribution = "distribution"
	formatHarbor       = "harbor"
	formatGeneric      = "generic"
)

// Media types of Docker distribution's notification envelope: v1 up to distribution 2.8, v2 from
// distribution 3.0 (the JSON shape is the same for what the receiver reads).
const (
	distributionEventsV1 = "application/vnd.docker.distribution.events.v1+json"
	distributionEventsV2 = "application/vnd.docker.distribution.events.v2+json"
)

// Event types Harbor uses for a pushed artifact: the Default payload format and CloudEvents.
const (
	harborPushDefault     = "PUSH_ARTIFACT"
	harborPushCloudEvents = "harbor.artifact.pushed"
)

// errUnknownFormat is returned for well-formed JSON that is none of the supported payloads.
var errUnknownFormat = errors.New("unknown payload format: expected a Docker distribution notification envelope, a Harbor webhook, or {\"repository\":...,\"tag\":...}")

// pushEvent is one tag pushed to one repository, the unit the receiver triggers on.
type pushEvent struct {
	// repository is normalised with NormalizeRepository and never empty.
	repository string
	// tag is a valid OCI tag.
	tag string
}

// payload is what parse makes of a request body.
type payload struct {
	format string
	// events are the distinct tag pushes, in the order they first appear.
	events []pushEvent
	// ignored counts the events that are not tag pushes (pulls, deletes, blob pushes, pushes by
	// digest) or whose repository or tag could not be read.
	ignored int
}

// hints are what the request says about its body besides the body itself.
type hints struct {
	// contentType is the Content-Type header.
	contentType string
	// ceType is the Ce-Type header of a CloudEvent in binary content mode.
	ceType string
	// format is set when the route names the sender (/hook/distribution, /hook/harbor), which
	// then must match the detected format.
	format string
}

// parse reads a notification body into the tag pushes it reports. The format comes from the
// content type, then the shape of the JSON document; a route naming a sender (hints.format)
// only accepts that sender's format.
func parse(h hints, body []byte) (payload, error) {
	format, err := detect(h, body)
	if err != nil {
		return payload{}, err
	}
	if h.format != "" && format != h.format {
		return payload{}, fmt.Errorf("payload is not a %s notification (it looks like %s)", h.format, format)
	}
	p := payload{format: format}
	switch format {
	case formatDistribution:
		err = parseDistribution(body, &p)
	case formatHarbor:
		err = parseHarbor(h.ceType, body, &p)
	case formatGeneric:
		err = parseGeneric(body, &p)
	default:
		err = errUnknownFormat
	}
	if err != nil {
		return payload{}, err
	}
	return p, nil
}

// detect works out which sender produced body.
func detect(h hints, body []byte) (string, error) {
	if mt, _, err := mime.ParseMediaType(h.contentType); err == nil {
		if mt == distributionEventsV1 || mt == distributionEventsV2 {
			return formatDistribution, nil
		}
	}
	if strings.HasPrefix(h.ceType, "harbor.") {
		return formatHarbor, nil
	}
	// Only which keys are present matters here; their values are decoded by the format's parser.
	var probe map[string]json.RawMessage
	if err := decode(body, &probe); err != nil {
		return "", err
	}
	has := func(key string) bool { _, ok := probe[key]; return ok }
	switch {
	case has("events"):
		return formatDistribution, nil
	case has("event_data"), has("specversion"), has("resources"):
		return formatHarbor, nil
	case has("repository"):
		return formatGeneric, nil
	}
	return "", errUnknownFormat
}

// distributionEnvelope is the part of a Docker distribution notification the receiver reads
// (distribution's notifications.Envelope and Event).
type distributionEnvelope struct {
	Events []struct {
		Action string `json:"action"`
		Target struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
			URL        string `json:"url"`
		} `json:"target"`
		Request struct {
			// Host is the Host header of the push request: the name clients use for the registry.
			Host string `json:"host"`
		} `json:"request"`
	} `json:"events"`
}

func parseDistribution(body []byte, p *payload) error {
	var env distributionEnvelope
	if err := decode(body, &env); err != nil {
		return err
	}
	for _, ev := range env.Events {
		if ev.Action != "push" || ev.Target.Tag == "" {
			p.ignored++
			continue
		}
		host := ev.Request.Host
		if host == "" {
			if u, err := url.Parse(ev.Target.URL); err == nil {
				host = u.Host
			}
		}
		if host == "" {
			// Without a host the repository could be on any registry; guessing would trigger
			// the wrong bundles.
			p.ignored++
			continue
		}
		p.add(host+"/"+ev.Target.Repository, ev.Target.Tag)
	}
	return nil
}

// harborEventData is the event_data of Harbor's Default payload and the data of its CloudEvents
// payload (Harbor's notifier model.EventData).
type harborEventData struct {
	Resources []struct {
		Tag string `json:"tag"`
		// ResourceURL is host/project/repository:tag, with Harbor's external host name.
		ResourceURL string `json:"resource_url"`
	} `json:"resources"`
}

// harborEnvelope covers both ways Harbor sends an event: Default ({"type","event_data"}) and
// CloudEvents in structured mode ({"specversion","type","data"}). In CloudEvents binary mode the
// body is the data alone and the type travels in the Ce-Type header.
type harborEnvelope struct {
	Type        string           `json:"type"`
	SpecVersion string           `json:"specversion"`
	EventData   *harborEventData `json:"event_data"`
	Data        json.RawMessage  `json:"data"`
	harborEventData
}

func parseHarbor(ceType string, body []byte, p *payload) error {
	var env harborEnvelope
	if err := decode(body, &env); err != nil {
		return err
	}
	eventType, data := env.Type, env.EventData
	switch {
	case ceType != "":
		// Binary mode: the body is the event data.
		eventType, data = ceType, &env.harborEventData
	case env.SpecVersion != "" && len(env.Data) > 0:
		// Structured mode: the event data is under "data"; tolerate a Default payload there too.
		var inner harborEnvelope
		if err := decode(env.Data, &inner); err != nil {
			return err
		}
		data = &inner.harborEventData
		if inner.EventData != nil {
			data = inner.EventData
		}
	}
	if eventType != harborPushDefault && eventType != harborPushCloudEvents {
		p.ignored++
		return nil
	}
	if data == nil {
		return nil
	}
	for _, r := range data.Resources {
		if r.Tag == "" || r.ResourceURL == "" {
			p.ignored++
			continue
		}
		p.add(r.ResourceURL, r.Tag)
	}
	return nil
}

// genericPayload is the receiver's own minimal format, for senders without a native one
// (CI jobs, scripts).
type genericPayload struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
}

func parseGeneric(body []byte, p *payload) error {
	var g genericPayload
	if err := decode(body, &g); err != nil {
		return err
	}
	// The generic format has exactly one event, so a bad one is an error the sender should see
	// rather than something to ignore.
	repo := NormalizeRepository(g.Repository)
	switch {
	case g.Repository == "" || g.Tag == "":
		return errors.New("generic payload needs both \"repository\" and \"tag\"")
	case repo == "":
		return fmt.Errorf("generic payload: %q is not a repository reference", truncate(g.Repository, 200))
	case !validTag(g.Tag):
		return fmt.Errorf("generic payload: %q is not a valid tag", truncate(g.Tag, 200))
	}
	p.add(repo, g.Tag)
	return nil
}

// add records a push of tag to repository unless it is malformed or already recorded.
func (p *payload) add(repository, tag string) {
	repo := NormalizeRepository(repository)
	if repo == "" || !validTag(tag) {
		p.ignored++
		return
	}
	for _, ev := range p.events {
		if ev.repository == repo && ev.tag == tag {
			return
		}
	}
	p.events = append(p.events, pushEvent{repository: repo, tag: tag})
}

// decode unmarshals one JSON value, rejecting trailing data, and describes failures by position
// only so no part of the body is echoed back.
func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("malformed JSON: data after the top-level value")
	}
	return nil
}

func describeJSONError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("malformed JSON: syntax error at byte offset %d", syntax.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Errorf("malformed JSON: unexpected %s for field %q", typ.Value, field)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: unexpected end of input")
	}
	return errors.New("malformed JSON")
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
