package server

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

const (
	// streamPage is how many events one read of the store takes.
	streamPage = 500
	// streamWriteTimeout bounds one write to a stream's client: a client that stops reading is
	// dropped instead of holding the handler.
	streamWriteTimeout = 30 * time.Second
	// streamRetryMs is the reconnection delay a stream asks of its client (the SSE retry field).
	streamRetryMs = 3000
)

// listDeploymentEvents answers a deployment's history: a JSON page after an event id, or with
// Accept: text/event-stream the live stream (streamDeploymentEvents).
func (s *Server) listDeploymentEvents(w http.ResponseWriter, r *http.Request) error {
	if wantsEventStream(r) {
		return s.streamDeploymentEvents(w, r)
	}
	// The route streams, so the middleware left the request timeout to the handler.
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	after, err := eventIDParam("after", r.URL.Query().Get("after"))
	if err != nil {
		return err
	}
	if p.After != "" {
		if after, err = eventIDParam("continue", p.After); err != nil {
			return err
		}
	}
	d, err := s.deploymentByID(r)
	if err != nil {
		return err
	}
	events, err := s.store.DeploymentEventList(ctx, &store.DeploymentEventListParams{DeploymentID: d.ID, AfterID: after, Limit: p.Limit})
	if err != nil {
		return err
	}
	out := api.DeploymentEventList{Items: make([]api.DeploymentEvent, 0, len(events))}
	for _, e := range events {
		out.Items = append(out.Items, eventOut(e))
	}
	if len(events) > 0 {
		out.Continue = p.continueToken(len(events), strconv.FormatInt(events[len(events)-1].ID, 10))
	}
	writeJSON(ctx, s.log, w, http.StatusOK, out)
	return nil
}

// streamDeploymentEvents streams a deployment's events as Server-Sent Events: each event as
// "id: <id>", "event: <type>", "data: <JSON>"; from after the Last-Event-ID header (a client
// reconnecting) or the after parameter. It reads the store every EventPoll, so an event written
// by any replica reaches every stream; a comment line every EventHeartbeat of silence keeps
// proxies from closing it. It ends with the event "end" once the deployment is terminal and
// every event of it was sent, when the client goes away, or when the server shuts down.
func (s *Server) streamDeploymentEvents(w http.ResponseWriter, r *http.Request) error {
	after, err := eventIDParam("after", r.URL.Query().Get("after"))
	if err != nil {
		return err
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if after, err = eventIDParam("Last-Event-ID", v); err != nil {
			return err
		}
	}
	lookup, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	d, err := s.deploymentByID(r.WithContext(lookup))
	cancel()
	if err != nil {
		return err
	}
	// The server's read timeout would end the request (its background read fails) and its write
	// timeout the connection: a stream lives longer, with a deadline per write instead.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	st := &eventStream{w: w, rc: rc}
	st.printf("retry: %d\n\n", streamRetryMs)
	if !st.flush() {
		return nil
	}

	ctx := deploymentLogContext(r.Context(), d) // the stream's lines are the deployment's
	s.log.DebugContext(ctx, "server: Event stream started", "after", after)
	poll := time.NewTicker(s.cfg.EventPoll)
	defer poll.Stop()
	endGrace := max(2*s.cfg.EventPoll, time.Second)
	var terminalSeen time.Time
	lastWrite, authChecked := s.now(), s.now()
	for {
		events, err := s.store.DeploymentEventList(ctx, &store.DeploymentEventListParams{DeploymentID: d.ID, AfterID: after, Limit: streamPage})
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "server: Event stream ends: reading events failed", "err", err)
			}
			return nil
		}
		for _, e := range events {
			data, err := json.Marshal(eventOut(e))
			if err != nil {
				s.log.ErrorContext(ctx, "server: Encoding an event failed", "eventId", e.ID, "err", err)
				continue
			}
			st.printf("id: %d\nevent: %s\ndata: %s\n\n", e.ID, sseField(e.Type), data)
			after = e.ID
		}
		if len(events) > 0 {
			if !st.flush() {
				return nil
			}
			lastWrite = s.now()
			if len(events) == streamPage {
				continue
			}
		}
		now := s.now()
		if len(events) == 0 {
			// The end: the deployment is terminal and a quiet read followed long enough after
			// it became so that the engine's last events (written just after its last status)
			// are in.
			cur, err := s.store.DeploymentGetByID(ctx, d.ID)
			if err != nil {
				if ctx.Err() == nil {
					s.log.WarnContext(ctx, "server: Event stream ends: reading the deployment failed", "err", err)
				}
				return nil
			}
			if cur.Status.Terminal() {
				if terminalSeen.IsZero() {
					terminalSeen = now
				}
				settled := now.Sub(terminalSeen) >= endGrace || (cur.FinishedAt != nil && now.Sub(*cur.FinishedAt) >= endGrace)
				if settled {
					data, _ := json.Marshal(api.StreamEnd{DeploymentID: cur.ID, Status: string(cur.Status), Reason: cur.Reason})
					st.printf("event: end\ndata: %s\n\n", data)
					st.flush()
					s.log.DebugContext(ctx, "server: Event stream ended", "status", string(cur.Status))
					return nil
				}
			}
		}
		if now.Sub(lastWrite) >= s.cfg.EventHeartbeat {
			st.printf(": heartbeat\n\n")
			if !st.flush() {
				return nil
			}
			lastWrite = now
		}
		// A stream outlives its request: it ends once its token is signed out (signout.go).
		if now.Sub(authChecked) >= s.cfg.EventHeartbeat {
			if s.streamSignedOut(ctx, d.ID) {
				return nil
			}
			authChecked = now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.stopping:
			return nil
		case <-poll.C:
		}
	}
}

// eventStream writes a stream, remembering the first failure (the client went away).
type eventStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func (st *eventStream) printf(format string, args ...any) {
	if st.err != nil {
		return
	}
	_ = st.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	_, st.err = fmt.Fprintf(st.w, format, args...)
}

// flush sends what was written; false when the stream is broken.
func (st *eventStream) flush() bool {
	if st.err == nil {
		st.err = st.rc.Flush()
	}
	return st.err == nil
}

// wantsEventStream reports whether the client accepts text/event-stream (and asks for it).
func wantsEventStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// eventIDParam parses an event id (0 or more) given in field.
func eventIDParam(field, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errInvalid(field, "must be an event id (a number, 0 or more), not %q", clipValue(v))
	}
	return n, nil
}

// sseField keeps a value on one line of the stream.
func sseField(v string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
}

func clipValue(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}

func eventOut(e *store.DeploymentEvent) api.DeploymentEvent {
	return api.DeploymentEvent{ID: e.ID, DeploymentID: e.DeploymentID, Time: e.At, Type: e.Type, Cluster: e.Cluster,
		Message: e.Message, Details: e.Details}
}
