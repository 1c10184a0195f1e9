-- Notifications (issue 19 §3): the channels an Admin configures, one delivery row per (event,
-- channel) stored in the transaction of the change that causes it and delivered under a lease,
-- and the last state notified per subject (an operator on a cluster, a cluster).
-- Times are TEXT in sqlstore.TimeLayout; JSON is TEXT.

-- +goose Up
CREATE TABLE notification_channels (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL UNIQUE,
    kind              TEXT NOT NULL CHECK (kind IN ('webhook', 'slack', 'smtp')),
    -- The kind's settings that are not secret, as the API shows them.
    config            TEXT NOT NULL CHECK (json_valid(config)),
    routes            TEXT NOT NULL CHECK (json_valid(routes)),
    -- URLs with tokens and the HMAC secret, sealed (AES-256-GCM) by key_id; NULL for none.
    secret_ciphertext BLOB,
    key_id            TEXT NOT NULL DEFAULT '',
    created_by        TEXT NOT NULL DEFAULT '',
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
) STRICT;

-- Deliveries. Channels are referenced without a foreign key: a deleted channel's deliveries stay
-- listed (failed, "the channel was deleted").
CREATE TABLE notifications (
    id              TEXT    PRIMARY KEY,
    event_id        TEXT    NOT NULL,
    channel_id      TEXT    NOT NULL,
    channel_name    TEXT    NOT NULL,
    channel_kind    TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    subject         TEXT    NOT NULL,
    environments    TEXT    NOT NULL DEFAULT '',
    summary         TEXT    NOT NULL DEFAULT '',
    payload         TEXT    NOT NULL CHECK (json_valid(payload)),
    state           TEXT    NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT    NOT NULL DEFAULT '',
    next_attempt_at TEXT,
    claimed_by      TEXT    NOT NULL DEFAULT '',
    lease_until     TEXT,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    delivered_at    TEXT
) STRICT;
-- Lists: newest first, optionally of one state.
CREATE INDEX notifications_created_id ON notifications (created_at, id);
CREATE INDEX notifications_state_created_id ON notifications (state, created_at, id);
-- The due deliveries of each channel, earliest first (NotificationDueChannels, NotificationClaim).
CREATE INDEX notifications_pending ON notifications (channel_id, next_attempt_at, id) WHERE state = 'pending';

-- The state last notified per subject ("operator/<name>/<cluster>", "cluster/<name>"), and the
-- one before it: a transition is notified once, whichever replica sees it first.
CREATE TABLE notification_states (
    subject    TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    previous   TEXT NOT NULL DEFAULT '',
    changed_at TEXT NOT NULL
) STRICT;

-- +goose Down
DROP TABLE notification_states;
DROP TABLE notifications;
DROP TABLE notification_channels;
