package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

func (s *Server) getHealth(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	out := api.HealthResponse{Status: "ok", Database: "ok", Engine: s.store.Engine()}
	status := http.StatusOK
	if err := s.store.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "server: Database does not answer", "err", err)
		out.Status, out.Database, status = "degraded", "unreachable", http.StatusServiceUnavailable
	}
	writeJSON(r.Context(), s.log, w, status, out)
	return nil
}

func (s *Server) getOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(s.openapi)
	return err
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) error {
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	params := &store.AuditListParams{Actor: q.Get("actor"), Action: q.Get("action"), TargetKind: q.Get("targetKind"),
		TargetName: q.Get("targetName"), Limit: p.Limit}
	if p.After != "" {
		id, err := strconv.ParseInt(p.After, 10, 64)
		if err != nil || id <= 0 {
			return errInvalid("continue", "is not a continue token of this list")
		}
		params.BeforeID = id
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return errInvalid("since", "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
		}
		params.Since = &t
	}
	events, err := s.store.AuditList(r.Context(), params)
	if err != nil {
		return err
	}
	out := api.AuditList{Items: make([]api.AuditEvent, 0, len(events))}
	for _, e := range events {
		ev := api.AuditEvent{ID: e.ID, Time: e.At, Actor: e.Actor, Action: e.Action, TargetKind: e.TargetKind,
			TargetName: e.TargetName, Result: e.Result, RequestID: e.RequestID}
		if e.Details != "" {
			_ = json.Unmarshal([]byte(e.Details), &ev.Details)
		}
		out.Items = append(out.Items, ev)
	}
	if len(events) > 0 {
		out.Continue = p.continueToken(len(events), strconv.FormatInt(events[len(events)-1].ID, 10))
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out)
	return nil
}
