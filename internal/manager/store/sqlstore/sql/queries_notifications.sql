-- The notifications' queries (issue 19 §3): channels, deliveries, notified states.

-- name: NotificationChannelCreate
INSERT INTO notification_channels (id, name, kind, config, routes, secret_ciphertext, key_id,
    created_by, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
RETURNING id, name, kind, config, routes, secret_ciphertext, key_id, created_by, created_at, updated_at;

-- name: NotificationChannelGetByName
SELECT id, name, kind, config, routes, secret_ciphertext, key_id, created_by, created_at, updated_at
FROM notification_channels WHERE name = $1;

-- name: NotificationChannelGetByID
SELECT id, name, kind, config, routes, secret_ciphertext, key_id, created_by, created_at, updated_at
FROM notification_channels WHERE id = $1;

-- name: NotificationChannelList
SELECT id, name, kind, config, routes, secret_ciphertext, key_id, created_by, created_at, updated_at
FROM notification_channels
WHERE true /*filters*/
ORDER BY name

-- name: NotificationChannelUpdate
-- $1 name, $2 config, $3 routes, $4 sealed secrets, $5 key id, $6 updated at.
UPDATE notification_channels
SET config = $2, routes = $3, secret_ciphertext = $4, key_id = $5, updated_at = $6
WHERE name = $1
RETURNING id, name, kind, config, routes, secret_ciphertext, key_id, created_by, created_at, updated_at;

-- name: NotificationChannelDelete
DELETE FROM notification_channels WHERE name = $1 RETURNING id;

-- name: NotificationFailChannel
-- $1 channel id, $2 why, $3 now: the channel's pending deliveries fail.
UPDATE notifications
SET state = 'failed', last_error = $2, next_attempt_at = NULL, claimed_by = '', lease_until = NULL,
    updated_at = $3
WHERE channel_id = $1 AND state = 'pending';

-- name: NotificationInsert
INSERT INTO notifications (id, event_id, channel_id, channel_name, channel_kind, kind, subject,
    environments, summary, payload, state, attempts, last_error, next_attempt_at, claimed_by,
    lease_until, created_at, updated_at, delivered_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', 0, '', $11, '', NULL, $12, $12, NULL)
RETURNING id, event_id, channel_id, channel_name, channel_kind, kind, subject, environments,
    summary, payload, state, attempts, last_error, next_attempt_at, claimed_by, lease_until,
    created_at, updated_at, delivered_at;

-- name: NotificationGetByID
SELECT id, event_id, channel_id, channel_name, channel_kind, kind, subject, environments,
    summary, payload, state, attempts, last_error, next_attempt_at, claimed_by, lease_until,
    created_at, updated_at, delivered_at
FROM notifications WHERE id = $1;

-- name: NotificationList
SELECT id, event_id, channel_id, channel_name, channel_kind, kind, subject, environments,
    summary, payload, state, attempts, last_error, next_attempt_at, claimed_by, lease_until,
    created_at, updated_at, delivered_at
FROM notifications
WHERE true /*filters*/
ORDER BY created_at DESC, id DESC

-- name: NotificationDueChannels
-- $1 now.
SELECT DISTINCT channel_id FROM notifications
WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1);

-- name: NotificationMarkDelivered
-- $1 id, $2 when. No row when the delivery is not pending (another replica marked it).
UPDATE notifications
SET state = 'delivered', delivered_at = $2, updated_at = $2, next_attempt_at = NULL,
    claimed_by = '', lease_until = NULL
WHERE id = $1 AND state = 'pending'
RETURNING id;

-- name: NotificationRetry
-- $1 id, $2 owner, $3 state (pending or failed), $4 last error, $5 next attempt, $6 now. No row
-- when owner's claim was taken over, or the delivery is not pending.
UPDATE notifications
SET state = $3, last_error = $4, next_attempt_at = $5, claimed_by = '', lease_until = NULL,
    updated_at = $6
WHERE id = $1 AND state = 'pending' AND claimed_by = $2
RETURNING id;

-- name: NotificationStateSet
-- $1 subject, $2 state, $3 now. No row when the subject already has the state; otherwise the
-- state before ('' for a new subject).
INSERT INTO notification_states (subject, state, previous, changed_at)
VALUES ($1, $2, '', $3)
ON CONFLICT (subject) DO UPDATE
SET previous = notification_states.state, state = excluded.state, changed_at = excluded.changed_at
WHERE notification_states.state <> excluded.state
RETURNING previous;
