-- The queries PostgreSQL runs its own way; sqlite.sql has the same names (TestEngineQueries).
-- Every other query is shared (queries*.sql). Here: the claims, which skip rows another replica
-- has locked (FOR ... SKIP LOCKED), the admission's advisory lock and its MATERIALIZED pick, and
-- the catalog lookup.

-- name: SchemaTableExists
SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1);

-- name: DeploymentClaim
-- $1 owner, $2 now, $3 the lease's end, $4 limit. Rows another transaction has locked (another
-- replica claiming them, a DeploymentUpdate) are skipped, not waited for: two replicas never
-- claim one deployment. Returned in no order (sqlstore sorts them).
WITH due AS (
    SELECT id FROM deployments
    WHERE next_run_at IS NOT NULL AND next_run_at <= $2
        AND (claimed_by = '' OR lease_until IS NULL OR lease_until < $2)
    ORDER BY next_run_at, id
    LIMIT $4
    FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE deployments d
SET claimed_by = $1, lease_until = $3
FROM due
WHERE d.id = due.id
RETURNING d.id, d.operator_id, d.operator_name, d.version, d.strategy, d.config, d.helm_values,
    d.values_by_environment, d.status, d.reason, d.requested_by, d.request_id, d.revision,
    d.created_at, d.updated_at, d.started_at, d.finished_at, d.stage, d.stage_started_at,
    d.next_run_at, d.claimed_by, d.lease_until, d.cancel_requested, d.rollback_requested,
    d.switch_requested, d.rollback_reason, d.rollback_started_at, d.rollback_finished_at,
    d.switched_at, d.blue_delete_at, d.blue_deleted, d.trace_context, d.paused_at, d.paused_by, d.pause_reason,
    d.bake_window_ms, d.analyses;

-- name: DeploymentAdmitLock
-- Held until the transaction ends: admissions serialize across replicas, so each one counts the
-- running deployments after the previous one committed. The key is a constant ("slipadm" in
-- ASCII), apart from the migration lock's.
SELECT pg_advisory_xact_lock(32488822434522221);

-- name: DeploymentAdmit
-- $1 now, $2 how many may start. The oldest Queued deployments of operators without one
-- RollingBack move to Planning, due now. The candidates are picked once (MATERIALIZED: not
-- re-planned per row); the outer status check drops a row that moved on (cancelled) meanwhile.
WITH pick AS MATERIALIZED (
    SELECT q.id FROM deployments q
    WHERE q.status = 'Queued' AND NOT EXISTS (
        SELECT 1 FROM deployments r WHERE r.operator_id = q.operator_id AND r.status = 'RollingBack')
    ORDER BY q.created_at, q.id
    LIMIT $2
)
UPDATE deployments d
SET status = 'Planning', next_run_at = $1, updated_at = $1, revision = d.revision + 1
FROM pick
WHERE d.id = pick.id AND d.status = 'Queued'
RETURNING d.id, d.created_at;

-- name: NotificationClaim
-- $1 owner, $2 now, $3 the lease's end, $4 limit, $5 channel id. Rows another transaction has
-- locked (another replica claiming them) are skipped, not waited for. Returned in no order
-- (sqlstore sorts them).
WITH due AS (
    SELECT id FROM notifications
    WHERE state = 'pending' AND channel_id = $5 AND next_attempt_at <= $2
        AND (lease_until IS NULL OR lease_until < $2)
    ORDER BY next_attempt_at, id
    LIMIT $4
    FOR UPDATE SKIP LOCKED
)
UPDATE notifications n
SET claimed_by = $1, lease_until = $3, attempts = n.attempts + 1, updated_at = $2
FROM due
WHERE n.id = due.id
RETURNING n.id, n.event_id, n.channel_id, n.channel_name, n.channel_kind, n.kind, n.subject,
    n.environments, n.summary, n.payload, n.state, n.attempts, n.last_error, n.next_attempt_at,
    n.claimed_by, n.lease_until, n.created_at, n.updated_at, n.delivered_at;
