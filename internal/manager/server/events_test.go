package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// sseBlock is one block of an event stream: an event, a comment (heartbeat) or the retry field.
type sseBlock struct {
	id, event, data string
	comment, retry  string
}

// sseStream reads an event stream.
type sseStream struct {
	t      *testing.T
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// openStream opens path with Accept: text/event-stream; the stream is closed at the end of the
// test, and fails the test instead of hanging when nothing comes for a minute.
func openStream(t *testing.T, client *http.Client, url, token string, hdr ...string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return &sseStream{t: t, resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}
}

// block reads the next block; io.EOF when the server ended the stream.
func (s *sseStream) block() (sseBlock, error) {
	var b sseBlock
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if line == "" && err == io.EOF && b == (sseBlock{}) {
				return b, io.EOF
			}
			return b, fmt.Errorf("reading the stream: %w (partial line %q)", err, line)
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if b != (sseBlock{}) {
				return b, nil
			}
			continue
		}
		if c, ok := strings.CutPrefix(line, ":"); ok {
			b.comment = strings.TrimSpace(c)
			continue
		}
		field, value, _ := strings.Cut(line, ": ")
		switch field {
		case "id":
			b.id = value
		case "event":
			b.event = value
		case "data":
			b.data = value
		case "retry":
			b.retry = value
		default:
			return b, fmt.Errorf("unknown field in line %q", line)
		}
	}
}

// next reads the next event, skipping heartbeats and the retry field; it counts the heartbeats.
func (s *sseStream) next(heartbeats *int) (sseBlock, api.DeploymentEvent) {
	s.t.Helper()
	for {
		b, err := s.block()
		if err != nil {
			s.t.Fatalf("stream: %v", err)
		}
		if b.event == "" {
			if b.comment == "heartbeat" && heartbeats != nil {
				*heartbeats++
			}
			continue
		}
		var ev api.DeploymentEvent
		if b.event != "end" {
			if err := json.Unmarshal([]byte(b.data), &ev); err != nil {
				s.t.Fatalf("event data %q: %v", b.data, err)
			}
			if b.id != strconv.FormatInt(ev.ID, 10) || b.event != ev.Type {
				s.t.Fatalf("block %+v does not match its data", b)
			}
		}
		return b, ev
	}
}

// expectEnd reads the end event, then the end of the stream.
func (s *sseStream) expectEnd(status store.DeploymentStatus) {
	s.t.Helper()
	b, _ := s.next(nil)
	var end api.StreamEnd
	if b.event != "end" || json.Unmarshal([]byte(b.data), &end) != nil || end.Status != string(status) {
		s.t.Fatalf("want the end event with %s, got %+v", status, b)
	}
	if _, err := s.block(); !errors.Is(err, io.EOF) {
		s.t.Fatalf("after end: %v", err)
	}
}

func (b *bundle) addEvent(id, typ, cluster, msg string) *store.DeploymentEvent {
	b.t.Helper()
	e, err := b.store.DeploymentEventInsert(context.Background(), &store.DeploymentEvent{DeploymentID: id, At: time.Now(),
		Type: typ, Cluster: cluster, Message: msg, Details: json.RawMessage(`{"attempt": 1}`)})
	if err != nil {
		b.t.Fatal(err)
	}
	return e
}

// submitDirect posts a Direct deployment of a new operator to dev-1.
func (b *bundle) submitDirect(operator string) api.Deployment {
	b.t.Helper()
	b.addOperator(operator, operator+"-system", "1.0.0")
	r := b.do("POST", "/api/v1/deployments", b.token("olga", auth.Operator),
		fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct"}`, operator))
	expect(b.t, "submit "+operator, r, http.StatusAccepted)
	var d api.Deployment
	r.json(b.t, &d)
	return d
}

func TestDeploymentEvents(t *testing.T) {
	forEngine(t, testDeploymentEvents)
}

func testDeploymentEvents(t *testing.T, engine string) {
	b := setup(t, engine, withConfig(Config{EventPoll: 50 * time.Millisecond, EventHeartbeat: 200 * time.Millisecond}))
	b.addCluster("dev-1", store.EnvironmentDev)
	d := b.submitDirect("widgets")
	viewer := b.viewer()
	path := "/api/v1/deployments/" + d.ID + "/events"
	e1 := b.addEvent(d.ID, "status", "", "Planning")
	e2 := b.addEvent(d.ID, "cluster.installing", "dev-1", "installing 1.0.0")

	// The JSON list: the engine's "created" first, then ours, oldest first; after and paging.
	var list api.DeploymentEventList
	r := b.do("GET", path, viewer, nil)
	expect(t, "events", r, http.StatusOK)
	r.json(t, &list)
	if len(list.Items) != 3 || list.Items[0].Type != "created" || list.Items[1].ID != e1.ID || list.Items[2].ID != e2.ID ||
		list.Items[2].Cluster != "dev-1" || !jsonEqual(t, list.Items[2].Details, json.RawMessage(`{"attempt": 1}`)) || list.Continue != "" {
		t.Fatalf("events: %s", r.body)
	}
	created := list.Items[0]
	b.do("GET", path+"?after="+strconv.FormatInt(e1.ID, 10), viewer, nil).json(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID != e2.ID {
		t.Fatalf("after %d: %+v", e1.ID, list)
	}
	b.do("GET", path+"?limit=2", viewer, nil).json(t, &list)
	if len(list.Items) != 2 || list.Continue == "" {
		t.Fatalf("first page: %+v", list)
	}
	b.do("GET", path+"?limit=2&continue="+list.Continue, viewer, nil).json(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID != e2.ID {
		t.Fatalf("second page: %+v", list)
	}
	expectInvalid(t, "bad after", b.do("GET", path+"?after=x", viewer, nil), "after")
	expectInvalid(t, "bad Last-Event-ID", b.do("GET", path, viewer, nil, "Accept", "text/event-stream", "Last-Event-ID", "-1"), "Last-Event-ID")
	expect(t, "stream of an unknown deployment", b.do("GET", "/api/v1/deployments/00000000-0000-4000-8000-000000000000/events",
		viewer, nil, "Accept", "text/event-stream"), http.StatusNotFound)

	// The live stream: the history, then what comes while it is open, heartbeats in between, and
	// the end once the deployment is terminal with every event sent.
	// A client that accepts gzip (as browsers do) gets the stream as written, never compressed.
	s := openStream(t, b.client, b.url+path, viewer, "Accept-Encoding", "gzip")
	if ce := s.resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("the event stream is sent with Content-Encoding %q", ce)
	}
	var heartbeats int
	for _, want := range []int64{created.ID, e1.ID, e2.ID} {
		if blk, ev := s.next(&heartbeats); ev.ID != want || ev.DeploymentID != d.ID {
			t.Fatalf("event %+v, want id %d", blk, want)
		}
	}
	e3 := b.addEvent(d.ID, "cluster.healthy", "dev-1", "healthy")
	if _, ev := s.next(&heartbeats); ev.ID != e3.ID || ev.Type != "cluster.healthy" || ev.Message != "healthy" {
		t.Fatalf("live event %+v, want %d", ev, e3.ID)
	}
	// Silence is filled with heartbeats until something happens.
	for heartbeats < 2 {
		blk, err := s.block()
		if err != nil {
			t.Fatal(err)
		}
		if blk.event != "" {
			t.Fatalf("unexpected event %+v", blk)
		}
		if blk.comment == "heartbeat" {
			heartbeats++
		}
	}
	// The engine's last status and its event land one after the other: the stream sends the
	// event before it ends.
	b.setStatus(d.ID, store.DeploymentCompleted, nil)
	e4 := b.addEvent(d.ID, "status", "", "Completed")
	if _, ev := s.next(nil); ev.ID != e4.ID {
		t.Fatalf("last event %+v, want %d", ev, e4.ID)
	}
	s.expectEnd(store.DeploymentCompleted)

	// A client reconnecting with Last-Event-ID gets what it missed (the header wins over after),
	// and the end.
	s = openStream(t, b.client, b.url+path+"?after=0", viewer, "Last-Event-ID", strconv.FormatInt(e2.ID, 10))
	for _, want := range []int64{e3.ID, e4.ID} {
		if blk, ev := s.next(nil); ev.ID != want {
			t.Fatalf("resumed: %+v, want %d", blk, want)
		}
	}
	s.expectEnd(store.DeploymentCompleted)
	// A stream after the last event of a finished deployment ends at once.
	s = openStream(t, b.client, b.url+path, viewer, "Last-Event-ID", strconv.FormatInt(e4.ID, 10))
	s.expectEnd(store.DeploymentCompleted)

	// A client that goes away ends its stream on the server: the access log line of the
	// request is written when the handler returns.
	live := b.submitDirect("gadgets")
	livePath := "/api/v1/deployments/" + live.ID + "/events"
	s = openStream(t, b.client, b.url+livePath, viewer)
	if _, ev := s.next(nil); ev.Type != "created" {
		t.Fatalf("first event %+v", ev)
	}
	s.cancel()
	waitFor(t, "the stream's handler to return after the client left", func() bool {
		return logged(b, `"path":"`+livePath+`"`, `"message":"server: Request"`)
	})
}

// logged reports whether a log line holds every part.
func logged(b *bundle, parts ...string) bool {
	for _, line := range strings.Split(string(b.logs.Bytes()), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, failing the test after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEventStreamOutlivesTimeouts serves the API as serve does (Server.Serve, whose write
// timeout is the request timeout + 10 s) with a request timeout of 1 s: a stream stays open
// past both, still delivers events, and ends when the server shuts down (without holding the
// shutdown up).
func TestEventStreamOutlivesTimeouts(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		cfg := Config{RequestTimeout: time.Second, EventPoll: 100 * time.Millisecond, EventHeartbeat: time.Second}
		b := setup(t, engine, withConfig(cfg))
		b.addCluster("dev-1", store.EnvironmentDev)
		d := b.submitDirect("widgets")
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		served := make(chan error, 1)
		go func() { served <- b.srv.Serve(ctx, l, nil, 30*time.Second) }()

		url := "http://" + l.Addr().String() + "/api/v1/deployments/" + d.ID + "/events"
		s := openStream(t, http.DefaultClient, url, b.viewer())
		start := time.Now()
		writeTimeout := cfg.RequestTimeout + 10*time.Second
		var heartbeats int
		if _, ev := s.next(&heartbeats); ev.Type != "created" {
			t.Fatalf("first event %+v", ev)
		}
		for time.Since(start) < writeTimeout+2*time.Second {
			blk, err := s.block()
			if err != nil {
				t.Fatalf("the stream broke after %s (%d heartbeats): %v", time.Since(start), heartbeats, err)
			}
			if blk.comment == "heartbeat" {
				heartbeats++
			}
		}
		e := b.addEvent(d.ID, "status", "", "Planning")
		if _, ev := s.next(nil); ev.ID != e.ID {
			t.Fatalf("event after the timeouts: %+v", ev)
		}
		stop()
		if _, err := s.block(); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("after shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	})
}
