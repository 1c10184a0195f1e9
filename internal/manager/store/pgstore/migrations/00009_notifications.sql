-- Notifications (issue 19 §3): the channels an Admin configures, one delivery row per (event,
-- channel) stored in the transaction of the change that causes it and delivered by any replica
-- under a lease, and the last state notified per subject (an operator on a cluster, a cluster).

-- +goose Up
CREATE TABLE notification_channels (
    id                uuid        PRIMARY KEY,
    name              text        NOT NULL UNIQUE,
    kind              text        NOT NULL CHECK (kind IN ('webhook', 'slack', 'smtp')),
    -- The kind's settings that are not secret, as the API shows them.
    config            json        NOT NULL,
    routes            json        NOT NULL,
    -- URLs with tokens and the HMAC secret, sealed (AES-256-GCM) by key_id; NULL for none.
    secret_ciphertext bytea,
    key_id            text        NOT NULL DEFAULT '',
    created_by        text        NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL
);

-- Deliveries. Channels are referenced without a foreign key: a deleted channel's deliveries stay
-- listed (failed, "the channel was deleted").
CREATE TABLE notifications (
    id              uuid        PRIMARY KEY,
    event_id        uuid        NOT NULL,
    channel_id      uuid        NOT NULL,
    channel_name    text        NOT NULL,
    channel_kind    text        NOT NULL,
    kind            text        NOT NULL,
    subject         text        NOT NULL,
    environments    text        NOT NULL DEFAULT '',
    summary         text        NOT NULL DEFAULT '',
    payload         json        NOT NULL,
    state           text        NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    next_attempt_at timestamptz,
    claimed_by      text        NOT NULL DEFAULT '',
    lease_until     timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    delivered_at    timestamptz
);
-- Lists: newest first, optionally of one state.
CREATE INDEX notifications_created_id ON notifications (created_at, id);
CREATE INDEX notifications_state_created_id ON notifications (state, created_at, id);
-- The due deliveries of each channel, earliest first (NotificationDueChannels, NotificationClaim).
CREATE INDEX notifications_pending ON notifications (channel_id, next_attempt_at, id) WHERE state = 'pending';

-- The state last notified per subject ("operator/<name>/<cluster>", "cluster/<name>"), and the
-- one before it: a transition is notified once, whichever replica sees it first.
CREATE TABLE notification_states (
    subject    text        PRIMARY KEY,
    state      text        NOT NULL,
    previous   text        NOT NULL DEFAULT '',
    changed_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE notification_states;
DROP TABLE notifications;
DROP TABLE notification_channels;
