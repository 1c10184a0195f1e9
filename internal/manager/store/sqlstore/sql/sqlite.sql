-- The queries SQLite runs its own way; postgres.sql has the same names (TestEngineQueries).
-- Every other query is shared (queries*.sql). SQLite has no row locks: its one write connection
-- serializes writers, so a claim is one UPDATE ... WHERE id IN (SELECT ... LIMIT) and admission
-- needs no lock.

-- name: SchemaTableExists
SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1);

-- name: DeploymentClaim
-- $1 owner, $2 now, $3 the lease's end, $4 limit. One statement on the one write connection: two
-- replicas (processes sharing the file) never claim one deployment. Returned in no order
-- (sqlstore sorts them).
UPDATE deployments
SET claimed_by = $1, lease_until = $3
WHERE id IN (
    SELECT id FROM deployments
    WHERE next_run_at IS NOT NULL AND next_run_at <= $2
        AND (claimed_by = '' OR lease_until IS NULL OR lease_until < $2)
    ORDER BY next_run_at, id
    LIMIT $4)
RETURNING id, operator_id, operator_name, version, strategy, config, helm_values,
    values_by_environment, status, reason, requested_by, request_id, revision,
    created_at, updated_at, started_at, finished_at, stage, stage_started_at,
    next_run_at, claimed_by, lease_until, cancel_requested, rollback_requested,
    switch_requested, rollback_reason, rollback_started_at, rollback_finished_at,
    switched_at, blue_delete_at, blue_deleted, trace_context, paused_at, paused_by, pause_reason,
    bake_window_ms, analyses;

-- name: DeploymentAdmitLock
-- Inside the write transaction: SQLite's one writer already serializes admissions.
SELECT 1;

-- name: DeploymentAdmit
-- $1 now, $2 how many may start. The oldest Queued deployments of operators without one
-- RollingBack move to Planning, due now. The outer status check drops a row that moved on
-- (cancelled) meanwhile.
UPDATE deployments
SET status = 'Planning', next_run_at = $1, updated_at = $1, revision = revision + 1
WHERE status = 'Queued' AND id IN (
    SELECT q.id FROM deployments q
    WHERE q.status = 'Queued' AND NOT EXISTS (
        SELECT 1 FROM deployments r WHERE r.operator_id = q.operator_id AND r.status = 'RollingBack')
    ORDER BY q.created_at, q.id
    LIMIT $2)
RETURNING id, created_at;

-- name: NotificationClaim
-- $1 owner, $2 now, $3 the lease's end, $4 limit, $5 channel id. One statement on the one write
-- connection: two replicas never claim one delivery. Returned in no order (sqlstore sorts them).
UPDATE notifications
SET claimed_by = $1, lease_until = $3, attempts = attempts + 1, updated_at = $2
WHERE id IN (
    SELECT id FROM notifications
    WHERE state = 'pending' AND channel_id = $5 AND next_attempt_at <= $2
        AND (lease_until IS NULL OR lease_until < $2)
    ORDER BY next_attempt_at, id
    LIMIT $4)
RETURNING id, event_id, channel_id, channel_name, channel_kind, kind, subject, environments,
    summary, payload, state, attempts, last_error, next_attempt_at, claimed_by, lease_until,
    created_at, updated_at, delivered_at;
