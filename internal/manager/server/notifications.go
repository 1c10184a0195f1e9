package server

import (
	"errors"
	"net/http"
	"slices"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

var notificationStates = []string{string(store.NotificationPending), string(store.NotificationDelivered), string(store.NotificationFailed)}

func notificationOut(n *store.Notification, payload bool) api.Notification {
	out := api.Notification{ID: n.ID, EventID: n.EventID, Channel: n.ChannelName, ChannelKind: n.ChannelKind, Kind: n.Kind,
		Subject: n.Subject, Environments: []string{}, Summary: n.Summary, State: string(n.State), Attempts: n.Attempts,
		LastError: n.LastError, NextAttemptAt: n.NextAttemptAt, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt,
		DeliveredAt: n.DeliveredAt}
	for _, e := range n.Environments {
		out.Environments = append(out.Environments, string(e))
	}
	if payload {
		out.Payload = n.Payload
	}
	return out
}

// notifier is the notifications service, or a 503 when the server was built without one.
func (s *Server) notifier() (*notifications.Service, error) {
	if s.notifications == nil {
		return nil, &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "notifications are not configured on this server"}
	}
	return s.notifications, nil
}

// channelErr maps a channel operation's error, recording it in the audit log with entry.
func (s *Server) channelErr(r *http.Request, entry audit.Entry, name string, err error) error {
	entry.Result = resultOf(err)
	if e, ok := invalid.As(err); ok {
		entry.Details = map[string]any{"field": e.Field, "reason": e.Reason}
	}
	s.audit.Record(r.Context(), entry)
	switch {
	case errors.Is(err, store.ErrAlreadyExists):
		return errAlreadyExists("notification channel", name)
	case errors.Is(err, store.ErrNotFound):
		return errNotFound("notification channel", name)
	}
	return err
}

func (s *Server) createChannel(w http.ResponseWriter, r *http.Request) error {
	n, err := s.notifier()
	if err != nil {
		return err
	}
	var req api.ChannelRequest
	if err := s.decodeJSON(r, &req); err != nil {
		return err
	}
	ctx := r.Context()
	identity, _ := auth.IdentityFrom(ctx)
	ch, err := n.CreateChannel(ctx, &req, identity.Subject)
	entry := audit.Entry{Action: "notification.channel.create", TargetKind: "notificationChannel", TargetName: req.Name}
	if err != nil {
		return s.channelErr(r, entry, req.Name, err)
	}
	entry.Result, entry.Details = audit.Success, map[string]any{"kind": ch.Kind, "routes": len(ch.Routes)}
	s.audit.Record(ctx, entry)
	writeJSON(ctx, s.log, w, http.StatusCreated, ch)
	return nil
}

func (s *Server) listChannels(w http.ResponseWriter, r *http.Request) error {
	n, err := s.notifier()
	if err != nil {
		return err
	}
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	list, err := n.ListChannels(r.Context(), p.After, p.Limit)
	if err != nil {
		return err
	}
	out := api.ChannelList{Items: make([]api.Channel, 0, len(list))}
	for _, c := range list {
		out.Items = append(out.Items, *c)
	}
	if len(list) > 0 {
		out.Continue = p.continueToken(len(list), list[len(list)-1].Name)
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) getChannel(w http.ResponseWriter, r *http.Request) error {
	n, err := s.notifier()
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	ch, err := n.GetChannel(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("notification channel", name)
	}
	if err != nil {
		return err
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, ch)
	return nil
}

func (s *Server) updateChannel(w http.ResponseWriter, r *http.Request) error {
	n, err := s.notifier()
	if err != nil {
		return err
	}
	var patch api.ChannelPatch
	if err := s.decodeJSON(r, &patch); err != nil {
		return err
	}
	ctx, name := r.Context(), r.PathValue("name")
	ch, err := n.UpdateChannel(ctx, name, &patch)
	entry := audit.Entry{Action: "notification.channel.update", TargetKind: "notificationChannel", TargetName: name}
	if err != nil {
		return s.channelErr(r, entry, name, err)
	}
	entry.Result, entry.Details = audit.Success, map[string]any{"settings": patch.Webhook != nil || patch.Slack != nil || patch.SMTP != nil,
		"routes": patch.Routes != nil}
	s.audit.Record(ctx, entry)
	writeJSON(ctx, s.log, w, http.StatusOK, ch)
	return nil
}

func (s *Server) deleteChannel(w http.ResponseWriter, r *http.Request) error {
	n, err := s.notifier()
	if err != nil {
		return err
	}
	ctx, name := r.Context(), r.PathValue("name")
	err = n.DeleteChannel(ctx, name)
	entry := audit.Entry{Action: "notification.channel.delete", TargetKind: "notificationChannel", TargetName: name}
	if err != nil {
		return s.channelErr(r, entry, name, err)
	}
	entry.Result = audit.Success
	s.audit.Record(ctx, entry)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) testChannel(w http.ResponseWriter, r *http.Request) error {
	n, err := s.notifier()
	if err != nil {
		return err
	}
	ctx, name := r.Context(), r.PathValue("name")
	identity, _ := auth.IdentityFrom(ctx)
	d, err := n.TestChannel(ctx, name, identity.Subject)
	entry := audit.Entry{Action: "notification.channel.test", TargetKind: "notificationChannel", TargetName: name}
	if err != nil {
		return s.channelErr(r, entry, name, err)
	}
	entry.Result, entry.Details = audit.Success, map[string]any{"delivery": d.ID}
	s.audit.Record(ctx, entry)
	writeJSON(ctx, s.log, w, http.StatusAccepted, notificationOut(d, true))
	return nil
}

func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request) error {
	p, err := pageFrom(r)
	if err != nil {
		return err
	}
	state, err := oneOf(r, "state", notificationStates)
	if err != nil {
		return err
	}
	kind, err := oneOf(r, "kind", append(slices.Clone(notifications.Kinds), notifications.KindTest))
	if err != nil {
		return err
	}
	list, err := s.store.NotificationList(r.Context(), &store.NotificationListParams{State: store.NotificationState(state),
		ChannelName: r.URL.Query().Get("channel"), Kind: kind, Before: p.After, Limit: p.Limit})
	if err != nil {
		return err
	}
	out := api.NotificationList{Items: make([]api.Notification, 0, len(list))}
	for _, n := range list {
		out.Items = append(out.Items, notificationOut(n, false))
	}
	if len(list) > 0 {
		out.Continue = p.continueToken(len(list), list[len(list)-1].ID)
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, out)
	return nil
}

func (s *Server) getNotification(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	n, err := s.store.NotificationGetByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound("notification", id)
	}
	if err != nil {
		return err
	}
	writeJSON(r.Context(), s.log, w, http.StatusOK, notificationOut(n, true))
	return nil
}
