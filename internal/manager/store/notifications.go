package store

import (
	"context"
	"encoding/json"
	"time"
)

// The notifications' records (issue 19 §3, migration 00009): the channels an Admin configures
// (their secrets sealed like cluster credentials), one delivery row per (event, channel), stored
// in the transaction of the change that causes it and delivered by a worker that claims rows
// under a lease, and the last state notified per subject (what makes "unhealthy" and "recovered"
// transitions).

// NotificationState is a delivery's state: pending (due at NextAttemptAt), delivered, or failed
// (given up; LastError says why).
type NotificationState string

const (
	NotificationPending   NotificationState = "pending"
	NotificationDelivered NotificationState = "delivered"
	NotificationFailed    NotificationState = "failed"
)

// NotificationStates are every delivery state.
var NotificationStates = []NotificationState{NotificationPending, NotificationDelivered, NotificationFailed}

// NotificationRoute selects events for a channel: an event matches when its kind is one of
// Kinds and one of its environments is one of Environments; an empty list matches everything.
type NotificationRoute struct {
	Kinds        []string      `json:"kinds,omitempty"`
	Environments []Environment `json:"environments,omitempty"`
}

// NotificationChannel is where notifications go: a webhook, a Slack-compatible incoming webhook
// or mail. Config holds the kind's settings that are not secret (the JSON object the API shows);
// the secrets (URLs with tokens, the HMAC secret) are SecretCiphertext, sealed by KeyID.
type NotificationChannel struct {
	ID               string
	Name             string
	Kind             string // webhook, slack, smtp
	Config           json.RawMessage
	Routes           []NotificationRoute
	SecretCiphertext []byte
	KeyID            string
	CreatedBy        string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// NotificationChannelListParams pages channels by name (After: the last name of the previous page).
type NotificationChannelListParams struct {
	After string
	Limit int
}

// Notification is one delivery: an event (EventID, shared by the deliveries of one event to
// several channels) to one channel. ID is the delivery's stable id: receivers deduplicate by it.
type Notification struct {
	ID           string
	EventID      string
	ChannelID    string
	ChannelName  string
	ChannelKind  string
	Kind         string        // deployment.failed, operator.unhealthy, cluster.unreachable, ...
	Subject      string        // what it is about: deployment/<id>, operator/<name>/<cluster>, cluster/<name>
	Environments []Environment // the environments it concerns (routing), in promotion order
	Summary      string        // one line for people
	Payload      json.RawMessage
	State        NotificationState
	// Attempts counts the delivery attempts started (a claim is an attempt, so an attempt cut
	// short by a replica's death counts).
	Attempts      int
	LastError     string
	NextAttemptAt *time.Time // nil once delivered or failed
	ClaimedBy     string
	LeaseUntil    *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	DeliveredAt   *time.Time
}

// NotificationListParams filters deliveries, newest first; Before pages (the last id of the
// previous page).
type NotificationListParams struct {
	State       NotificationState
	ChannelName string
	Kind        string
	Before      string
	Limit       int
}

// NotificationClaimParams claims up to Limit due deliveries of one channel for Owner until
// Now+Lease.
type NotificationClaimParams struct {
	Owner     string
	ChannelID string
	Now       time.Time
	Lease     time.Duration
	Limit     int
}

// NotificationRetryParams records a failed attempt of Owner's claim: pending again at
// NextAttemptAt, or failed for good (State NotificationFailed).
type NotificationRetryParams struct {
	ID            string
	Owner         string
	State         NotificationState
	LastError     string
	NextAttemptAt *time.Time
	Now           time.Time
}

// NotificationStateChange is what NotificationStateSet did: whether it changed the subject's
// state, and the state stored before ("" when the subject had none).
type NotificationStateChange struct {
	Changed  bool
	Previous string
}

// NotificationsExecutor is the notifications' part of the store.
type NotificationsExecutor interface {
	// NotificationChannelCreate inserts a channel (an empty ID gets a UUID); ErrAlreadyExists
	// when the name is taken.
	NotificationChannelCreate(ctx context.Context, c *NotificationChannel) (*NotificationChannel, error)
	NotificationChannelGetByName(ctx context.Context, name string) (*NotificationChannel, error)
	NotificationChannelGetByID(ctx context.Context, id string) (*NotificationChannel, error)
	// NotificationChannelList returns a page of channels ordered by name.
	NotificationChannelList(ctx context.Context, p *NotificationChannelListParams) ([]*NotificationChannel, error)
	// NotificationChannelListAll returns every channel (routing reads them all; an Admin
	// configures a handful).
	NotificationChannelListAll(ctx context.Context) ([]*NotificationChannel, error)
	// NotificationChannelUpdate writes c's Config, Routes, SecretCiphertext, KeyID and UpdatedAt
	// over the channel named c.Name; ErrNotFound when there is none.
	NotificationChannelUpdate(ctx context.Context, c *NotificationChannel) (*NotificationChannel, error)
	// NotificationChannelDelete removes a channel and, in the same transaction, fails its pending
	// deliveries ("the channel was deleted"); the deliveries stay listed. ErrNotFound when absent.
	NotificationChannelDelete(ctx context.Context, name string, now time.Time) error

	// NotificationInsert stores a pending delivery, due at once (NextAttemptAt, CreatedAt now
	// when zero); an empty ID gets a UUID.
	NotificationInsert(ctx context.Context, n *Notification) (*Notification, error)
	NotificationGetByID(ctx context.Context, id string) (*Notification, error)
	NotificationList(ctx context.Context, p *NotificationListParams) ([]*Notification, error)
	// NotificationDueChannels returns the ids of the channels with a pending delivery due at now
	// and not claimed (or whose claim lapsed).
	NotificationDueChannels(ctx context.Context, now time.Time) ([]string, error)
	// NotificationClaim claims up to p.Limit due deliveries of p.ChannelID, earliest due first,
	// for p.Owner until p.Now+p.Lease, counting an attempt on each. On PostgreSQL rows another
	// replica is claiming are skipped, so two replicas never claim one delivery at once.
	NotificationClaim(ctx context.Context, p *NotificationClaimParams) ([]*Notification, error)
	// NotificationMarkDelivered records a delivery (whoever holds the claim: it arrived); a
	// delivery that is not pending any more is left as it is. It reports whether it marked it.
	NotificationMarkDelivered(ctx context.Context, id string, at time.Time) (bool, error)
	// NotificationRetry records a failed attempt under p.Owner's claim and releases it; a claim
	// that lapsed and was taken over (or a delivery no longer pending) is left to its holder:
	// false.
	NotificationRetry(ctx context.Context, p *NotificationRetryParams) (bool, error)

	// NotificationStateSet stores state as the subject's notified state and reports the change
	// (Changed false when the subject already had that state). Concurrent setters of one change
	// see it Changed once between them.
	NotificationStateSet(ctx context.Context, subject, state string, at time.Time) (*NotificationStateChange, error)
}
