package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func init() {
	QueryNames = append(QueryNames,
		"NotificationChannelCreate", "NotificationChannelGetByName", "NotificationChannelGetByID",
		"NotificationChannelList", "NotificationChannelUpdate", "NotificationChannelDelete",
		"NotificationFailChannel", "NotificationInsert", "NotificationGetByID", "NotificationList",
		"NotificationDueChannels", "NotificationClaim", "NotificationMarkDelivered", "NotificationRetry",
		"NotificationStateSet")
}

// channelDeleted is the last error of the deliveries a channel's deletion fails.
const channelDeleted = "the channel was deleted"

// Columns: id, name, kind, config, routes, secret_ciphertext, key_id, created_by, created_at,
// updated_at.
func scanNotificationChannel(row scanner) (*store.NotificationChannel, error) {
	var c store.NotificationChannel
	var routes json.RawMessage
	err := row.Scan(&c.ID, &c.Name, &c.Kind, rawJSON{&c.Config}, rawJSON{&routes}, &c.SecretCiphertext,
		&c.KeyID, &c.CreatedBy, timeDest{&c.CreatedAt}, timeDest{&c.UpdatedAt})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(routes, &c.Routes); err != nil {
		return nil, fmt.Errorf("channel %s: routes: %w", c.Name, err)
	}
	return &c, nil
}

// channelJSON checks a channel's config and returns its routes as JSON (never null).
func channelJSON(c *store.NotificationChannel) (string, error) {
	if len(c.Config) == 0 || !json.Valid(c.Config) {
		return "", fmt.Errorf("channel %s: config is not a JSON document", c.Name)
	}
	routes := c.Routes
	if routes == nil {
		routes = []store.NotificationRoute{}
	}
	b, err := json.Marshal(routes)
	return string(b), err
}

func (e *executor) NotificationChannelCreate(ctx context.Context, c *store.NotificationChannel) (*store.NotificationChannel, error) {
	id := c.ID
	if id == "" {
		id = uuid.NewString()
	}
	nid, ok := normalizeID(id)
	if !ok {
		return nil, fmt.Errorf("create channel %q: id %q is not a UUID", c.Name, c.ID)
	}
	if c.Name == "" || c.Kind == "" {
		return nil, fmt.Errorf("create channel: empty name or kind")
	}
	routes, err := channelJSON(c)
	if err != nil {
		return nil, err
	}
	out, err := scanNotificationChannel(e.w.QueryRowContext(ctx, e.q("NotificationChannelCreate"), nid, c.Name, c.Kind,
		string(c.Config), routes, emptyNil(c.SecretCiphertext), c.KeyID, c.CreatedBy, e.ts(c.CreatedAt)))
	if err != nil {
		return nil, fmt.Errorf("create channel %s: %w", c.Name, e.mapErr(err))
	}
	return out, nil
}

func (e *executor) NotificationChannelGetByName(ctx context.Context, name string) (*store.NotificationChannel, error) {
	c, err := scanNotificationChannel(e.r.QueryRowContext(ctx, e.q("NotificationChannelGetByName"), name))
	if err != nil {
		return nil, fmt.Errorf("channel %q: %w", name, e.mapErr(err))
	}
	return c, nil
}

func (e *executor) NotificationChannelGetByID(ctx context.Context, id string) (*store.NotificationChannel, error) {
	nid, ok := normalizeID(id)
	if !ok {
		return nil, fmt.Errorf("channel %q: %w", id, store.ErrNotFound)
	}
	c, err := scanNotificationChannel(e.r.QueryRowContext(ctx, e.q("NotificationChannelGetByID"), nid))
	if err != nil {
		return nil, fmt.Errorf("channel %s: %w", nid, e.mapErr(err))
	}
	return c, nil
}

func (e *executor) NotificationChannelList(ctx context.Context, p *store.NotificationChannelListParams) ([]*store.NotificationChannel, error) {
	l := newListQuery()
	if p.After != "" {
		l.where("name > ?", p.After)
	}
	q, args := l.build(e.q("NotificationChannelList"), store.NormalizeLimit(p.Limit))
	return queryList(ctx, e, q, args, "list channels", scanNotificationChannel)
}

func (e *executor) NotificationChannelListAll(ctx context.Context) ([]*store.NotificationChannel, error) {
	q, args := newListQuery().buildAll(e.q("NotificationChannelList"))
	return queryList(ctx, e, q, args, "list channels", scanNotificationChannel)
}

func (e *executor) NotificationChannelUpdate(ctx context.Context, c *store.NotificationChannel) (*store.NotificationChannel, error) {
	routes, err := channelJSON(c)
	if err != nil {
		return nil, err
	}
	out, err := scanNotificationChannel(e.w.QueryRowContext(ctx, e.q("NotificationChannelUpdate"), c.Name,
		string(c.Config), routes, emptyNil(c.SecretCiphertext), c.KeyID, e.ts(c.UpdatedAt)))
	if err != nil {
		return nil, fmt.Errorf("update channel %s: %w", c.Name, e.mapErr(err))
	}
	return out, nil
}

// NotificationChannelDelete removes the channel and fails its pending deliveries, atomically.
func (e *executor) NotificationChannelDelete(ctx context.Context, name string, now time.Time) error {
	return e.atomic(ctx, func(ex *executor) error {
		var id string
		if err := ex.w.QueryRowContext(ctx, ex.q("NotificationChannelDelete"), name).Scan(&id); err != nil {
			return fmt.Errorf("delete channel %q: %w", name, ex.mapErr(err))
		}
		if _, err := ex.w.ExecContext(ctx, ex.q("NotificationFailChannel"), id, channelDeleted, ex.ts(now)); err != nil {
			return fmt.Errorf("fail the deliveries of channel %s: %w", name, ex.mapErr(err))
		}
		return nil
	})
}

// Columns: id, event_id, channel_id, channel_name, channel_kind, kind, subject, environments,
// summary, payload, state, attempts, last_error, next_attempt_at, claimed_by, lease_until,
// created_at, updated_at, delivered_at.
func scanNotification(row scanner) (*store.Notification, error) {
	var n store.Notification
	var envs string
	err := row.Scan(&n.ID, &n.EventID, &n.ChannelID, &n.ChannelName, &n.ChannelKind, &n.Kind, &n.Subject, &envs,
		&n.Summary, rawJSON{&n.Payload}, &n.State, &n.Attempts, &n.LastError, nullTimeDest{&n.NextAttemptAt},
		&n.ClaimedBy, nullTimeDest{&n.LeaseUntil}, timeDest{&n.CreatedAt}, timeDest{&n.UpdatedAt},
		nullTimeDest{&n.DeliveredAt})
	if err != nil {
		return nil, err
	}
	n.Environments = []store.Environment{}
	for env := range strings.SplitSeq(envs, ",") {
		if env != "" {
			n.Environments = append(n.Environments, store.Environment(env))
		}
	}
	return &n, nil
}

func (e *executor) NotificationInsert(ctx context.Context, n *store.Notification) (*store.Notification, error) {
	id, eventID := n.ID, n.EventID
	if id == "" {
		id = uuid.NewString()
	}
	nid, ok := normalizeID(id)
	neid, eok := normalizeID(eventID)
	cid, cok := normalizeID(n.ChannelID)
	switch {
	case !ok || !eok || !cok:
		return nil, fmt.Errorf("store notification: id %q, event %q and channel %q must be UUIDs", n.ID, n.EventID, n.ChannelID)
	case n.Kind == "" || n.Subject == "" || n.ChannelName == "":
		return nil, fmt.Errorf("store notification %s: empty kind, subject or channel", nid)
	case len(n.Payload) == 0 || !json.Valid(n.Payload):
		return nil, fmt.Errorf("store notification %s: the payload is not a JSON document", nid)
	}
	envs := make([]string, 0, len(n.Environments))
	for _, env := range n.Environments {
		envs = append(envs, string(env))
	}
	created := normTime(n.CreatedAt)
	due := created
	if n.NextAttemptAt != nil {
		due = normTime(*n.NextAttemptAt)
	}
	out, err := scanNotification(e.w.QueryRowContext(ctx, e.q("NotificationInsert"), nid, neid, cid, n.ChannelName,
		n.ChannelKind, n.Kind, n.Subject, strings.Join(envs, ","), n.Summary, string(n.Payload),
		e.d.TimeArg(due), e.d.TimeArg(created)))
	if err != nil {
		return nil, fmt.Errorf("store notification %s: %w", nid, e.mapErr(err))
	}
	return out, nil
}

func (e *executor) NotificationGetByID(ctx context.Context, id string) (*store.Notification, error) {
	nid, ok := normalizeID(id)
	if !ok {
		return nil, fmt.Errorf("notification %q: %w", id, store.ErrNotFound)
	}
	n, err := scanNotification(e.r.QueryRowContext(ctx, e.q("NotificationGetByID"), nid))
	if err != nil {
		return nil, fmt.Errorf("notification %s: %w", nid, e.mapErr(err))
	}
	return n, nil
}

func (e *executor) NotificationList(ctx context.Context, p *store.NotificationListParams) ([]*store.Notification, error) {
	l := newListQuery()
	if p.State != "" {
		l.where("state = ?", string(p.State))
	}
	if p.ChannelName != "" {
		l.where("channel_name = ?", p.ChannelName)
	}
	if p.Kind != "" {
		l.where("kind = ?", p.Kind)
	}
	if p.Before != "" {
		id, ok := normalizeID(p.Before)
		if !ok {
			return []*store.Notification{}, nil
		}
		l.where("(created_at, id) < (SELECT created_at, id FROM notifications WHERE id = ?)", id)
	}
	q, args := l.build(e.q("NotificationList"), store.NormalizeLimit(p.Limit))
	return queryList(ctx, e, q, args, "list notifications", scanNotification)
}

func (e *executor) NotificationDueChannels(ctx context.Context, now time.Time) ([]string, error) {
	ids, err := queryList(ctx, e, e.q("NotificationDueChannels"), []any{e.ts(now)}, "list channels with due notifications",
		func(row scanner) (string, error) {
			var id string
			err := row.Scan(&id)
			return id, err
		})
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// NotificationClaim claims due deliveries of one channel in one statement (on the write
// connection: a claim is a write) and returns them earliest due first.
func (e *executor) NotificationClaim(ctx context.Context, p *store.NotificationClaimParams) ([]*store.Notification, error) {
	cid, ok := normalizeID(p.ChannelID)
	switch {
	case !ok:
		return []*store.Notification{}, nil
	case p.Owner == "" || p.Lease <= 0 || p.Limit <= 0:
		return nil, fmt.Errorf("claim notifications: owner %q, lease %s and limit %d must be set", p.Owner, p.Lease, p.Limit)
	}
	now := normTime(p.Now)
	w := &executor{r: e.w, w: e.w, d: e.d}
	out, err := queryList(ctx, w, w.q("NotificationClaim"), []any{p.Owner, e.d.TimeArg(now),
		e.d.TimeArg(now.Add(p.Lease)), p.Limit, cid}, "claim notifications", scanNotification)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *store.Notification) int {
		if c := a.NextAttemptAt.Compare(*b.NextAttemptAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (e *executor) NotificationMarkDelivered(ctx context.Context, id string, at time.Time) (bool, error) {
	nid, ok := normalizeID(id)
	if !ok {
		return false, fmt.Errorf("notification %q: %w", id, store.ErrNotFound)
	}
	return e.updated(ctx, "NotificationMarkDelivered", "mark notification "+nid+" delivered", nid, e.ts(at))
}

func (e *executor) NotificationRetry(ctx context.Context, p *store.NotificationRetryParams) (bool, error) {
	nid, ok := normalizeID(p.ID)
	switch {
	case !ok:
		return false, fmt.Errorf("notification %q: %w", p.ID, store.ErrNotFound)
	case p.State != store.NotificationPending && p.State != store.NotificationFailed:
		return false, fmt.Errorf("notification %s: a retry leaves it pending or failed, not %q", nid, p.State)
	case p.State == store.NotificationPending && p.NextAttemptAt == nil:
		return false, fmt.Errorf("notification %s: pending again without a next attempt", nid)
	}
	next := p.NextAttemptAt
	if p.State == store.NotificationFailed {
		next = nil
	}
	return e.updated(ctx, "NotificationRetry", "record an attempt of notification "+nid, nid, p.Owner,
		string(p.State), p.LastError, e.tsPtr(next), e.ts(p.Now))
}

// updated runs an UPDATE … RETURNING id and reports whether it changed a row.
func (e *executor) updated(ctx context.Context, query, what string, args ...any) (bool, error) {
	var id string
	err := e.mapErr(e.w.QueryRowContext(ctx, e.q(query), args...).Scan(&id))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return true, nil
}

func (e *executor) NotificationStateSet(ctx context.Context, subject, state string, at time.Time) (*store.NotificationStateChange, error) {
	if subject == "" || state == "" {
		return nil, fmt.Errorf("set notified state: empty subject or state")
	}
	var prev string
	err := e.mapErr(e.w.QueryRowContext(ctx, e.q("NotificationStateSet"), subject, state, e.ts(at)).Scan(&prev))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &store.NotificationStateChange{}, nil
	case err != nil:
		return nil, fmt.Errorf("set the notified state of %s: %w", subject, err)
	}
	return &store.NotificationStateChange{Changed: true, Previous: prev}, nil
}
