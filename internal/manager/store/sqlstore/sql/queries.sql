-- The manager store's queries, shared by both engines. Each "-- name: X" starts the query sqlstore
-- runs for method X; list queries take their filters at /*filters*/ and a LIMIT appended by
-- sqlstore. Written in PostgreSQL; SQLite runs them with casts and row locks dropped and
-- json_array_elements_text as json_each (sqlstore/dialect.go). A query whose meaning differs
-- per engine is in postgres.sql and sqlite.sql instead.

-- name: ClusterCreate
INSERT INTO clusters (id, name, environment, kubernetes_version, health, health_reason,
    health_checked_at, kubeconfig_ciphertext, token_ciphertext, token_expires_at, key_id,
    created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING id, name, environment, kubernetes_version, health, health_reason, health_checked_at,
    kubeconfig_ciphertext, token_ciphertext, token_expires_at, key_id, created_at, updated_at;

-- name: ClusterGetByName
SELECT id, name, environment, kubernetes_version, health, health_reason, health_checked_at,
    kubeconfig_ciphertext, token_ciphertext, token_expires_at, key_id, created_at, updated_at
FROM clusters
WHERE name = $1;

-- name: ClusterList
SELECT id, name, environment, kubernetes_version, health, health_reason, health_checked_at,
    kubeconfig_ciphertext, token_ciphertext, token_expires_at, key_id, created_at, updated_at
FROM clusters
WHERE true /*filters*/
ORDER BY name

-- name: ClusterUpdateHealth
-- $4: the Kubernetes version, left unchanged when empty.
UPDATE clusters
SET health = $2, health_reason = $3, health_checked_at = $5,
    kubernetes_version = COALESCE(NULLIF($4, ''), kubernetes_version)
WHERE name = $1
RETURNING id, name, environment, kubernetes_version, health, health_reason, health_checked_at,
    kubeconfig_ciphertext, token_ciphertext, token_expires_at, key_id, created_at, updated_at;

-- name: ClusterUpdateCredentials
UPDATE clusters
SET kubeconfig_ciphertext = $2, token_ciphertext = $3, token_expires_at = $4, key_id = $5, updated_at = $6
WHERE name = $1
RETURNING id, name, environment, kubernetes_version, health, health_reason, health_checked_at,
    kubeconfig_ciphertext, token_ciphertext, token_expires_at, key_id, created_at, updated_at;

-- name: ClusterDelete
DELETE FROM clusters WHERE name = $1;

-- name: ClusterCount
SELECT count(*) FROM clusters;

-- name: OperatorCreate
INSERT INTO operators (id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at, deleted_at;

-- name: OperatorGetByName
SELECT id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at, deleted_at
FROM operators
WHERE name = $1;

-- name: OperatorGetByID
SELECT id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at, deleted_at
FROM operators
WHERE id = $1;

-- name: OperatorList
SELECT id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at, deleted_at
FROM operators
WHERE deleted_at IS NULL /*filters*/
ORDER BY name

-- name: OperatorCount
-- Deleted operators are not counted.
SELECT count(*) FROM operators WHERE deleted_at IS NULL;

-- name: OperatorVersionUpsert
INSERT INTO operator_versions (operator_id, version, app_version, digest, created_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (operator_id, version) DO UPDATE
SET app_version = EXCLUDED.app_version, digest = EXCLUDED.digest
RETURNING operator_id, version, app_version, digest, created_at, removed_at, removed_reason;

-- name: OperatorVersionList
-- Ordered by semver in Go.
SELECT operator_id, version, app_version, digest, created_at, removed_at, removed_reason
FROM operator_versions
WHERE operator_id = $1;

-- name: OperatorVersionListMany
-- $1 is a JSON array of operator ids. Ordered by semver in Go.
SELECT operator_id, version, app_version, digest, created_at, removed_at, removed_reason
FROM operator_versions
WHERE operator_id IN (SELECT value::uuid FROM json_array_elements_text($1::json));

-- name: CRDSchemaInsert
INSERT INTO crd_schemas (name, crd_group, kind, scope, operator_id, version, digest, definition, created_at,
    migration_note, migration_note_url)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
RETURNING id, name, crd_group, kind, scope, operator_id, version, digest, definition, created_at,
    migration_note, migration_note_url;

-- name: CRDSchemaList
SELECT id, name, crd_group, kind, scope, operator_id, version, digest, definition, created_at,
    migration_note, migration_note_url
FROM crd_schemas
WHERE name = $1 /*filters*/
ORDER BY id

-- name: CRDList
-- One row per CRD name: its latest revision and how many it has.
SELECT s.id, s.name, s.crd_group, s.kind, s.scope, s.operator_id, s.version, s.digest,
    s.definition, s.created_at, s.migration_note, s.migration_note_url, c.revisions
FROM crd_schemas s
JOIN (SELECT max(id) AS latest_id, count(*) AS revisions FROM crd_schemas GROUP BY name) c
    ON s.id = c.latest_id
WHERE true /*filters*/
ORDER BY s.name

-- name: CRDApprovalCreate
INSERT INTO crd_approvals (crd_name, from_digest, to_digest, to_version, approved_by, reason, request_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id, crd_name, from_digest, to_digest, to_version, approved_by, reason, request_id, created_at;

-- name: CRDApprovalList
SELECT id, crd_name, from_digest, to_digest, to_version, approved_by, reason, request_id, created_at
FROM crd_approvals
WHERE crd_name = $1
ORDER BY id;

-- name: AuditInsert
INSERT INTO audit_events (at, actor, action, target_kind, target_name, result, request_id, details)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id, at, actor, action, target_kind, target_name, result, request_id, details;

-- name: AuditList
SELECT id, at, actor, action, target_kind, target_name, result, request_id, details
FROM audit_events
WHERE true /*filters*/
ORDER BY id DESC

-- The rollout engine (00002_rollout.sql, 00003_engine.sql). Deployment columns: id, operator_id,
-- operator_name, version, strategy, config, helm_values, values_by_environment, status, reason,
-- requested_by, request_id, revision, created_at, updated_at, started_at, finished_at, then the
-- engine's: stage, stage_started_at, next_run_at, claimed_by, lease_until, cancel_requested,
-- rollback_requested, switch_requested, rollback_reason, rollback_started_at,
-- rollback_finished_at, switched_at, blue_delete_at, blue_deleted, and trace_context
-- (00004_trace.sql), paused_at, paused_by, pause_reason (00008_pause.sql), bake_window_ms
-- (00015_bake_window.sql), analyses (00014_analysis.sql). Cluster columns:
-- deployment_id, cluster_name, environment, stage, status, helm_revision, previous_revision,
-- previous_version, message, active, updated_at, namespace, release, blue_namespace,
-- blue_release, install_attempts.

-- name: DeploymentInsert
INSERT INTO deployments (id, operator_id, operator_name, version, strategy, config, helm_values,
    values_by_environment, status, reason, requested_by, request_id, revision, created_at,
    updated_at, started_at, finished_at, stage, stage_started_at, next_run_at, claimed_by,
    lease_until, cancel_requested, rollback_requested, switch_requested, rollback_reason,
    rollback_started_at, rollback_finished_at, switched_at, blue_delete_at, blue_deleted,
    trace_context, paused_at, paused_by, pause_reason, bake_window_ms, analyses)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 0, $13, $13, $14, $15, $16, $17, $18,
    $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35);

-- name: DeploymentClusterInsert
INSERT INTO deployment_clusters (deployment_id, cluster_name, operator_id, ordinal, environment,
    stage, status, helm_revision, previous_revision, previous_version, message, active, updated_at,
    namespace, release, blue_namespace, blue_release, install_attempts)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18);

-- name: DeploymentGet
-- The deployment with its clusters in one statement (one snapshot); a row per cluster, or one
-- row with NULL cluster columns when it has none.
SELECT d.id, d.operator_id, d.operator_name, d.version, d.strategy, d.config, d.helm_values,
    d.values_by_environment, d.status, d.reason, d.requested_by, d.request_id, d.revision,
    d.created_at, d.updated_at, d.started_at, d.finished_at, d.stage, d.stage_started_at,
    d.next_run_at, d.claimed_by, d.lease_until, d.cancel_requested, d.rollback_requested,
    d.switch_requested, d.rollback_reason, d.rollback_started_at, d.rollback_finished_at,
    d.switched_at, d.blue_delete_at, d.blue_deleted, d.trace_context, d.paused_at, d.paused_by,
    d.pause_reason, d.bake_window_ms, d.analyses, c.deployment_id, c.cluster_name, c.environment, c.stage, c.status, c.helm_revision,
    c.previous_revision, c.previous_version, c.message, c.active, c.updated_at, c.namespace,
    c.release, c.blue_namespace, c.blue_release, c.install_attempts
FROM deployments d
LEFT JOIN deployment_clusters c ON c.deployment_id = d.id
WHERE d.id = $1
ORDER BY c.ordinal;

-- name: DeploymentLock
-- Locks the deployment row until the transaction ends: DeploymentUpdates of one deployment (and
-- event inserts) serialize. NO KEY UPDATE leaves foreign key checks free. The clusters are read
-- by the next statement, with a snapshot taken after the lock (a join here would return the
-- clusters as they were before waiting). On SQLite the one writer already serializes updates.
SELECT id FROM deployments WHERE id = $1
FOR NO KEY UPDATE;

-- name: DeploymentUpdate
-- $2: the revision read; the row must still be at it.
UPDATE deployments
SET version = $3, strategy = $4, config = $5, helm_values = $6, values_by_environment = $7,
    status = $8, reason = $9, requested_by = $10, request_id = $11, updated_at = $12,
    started_at = $13, finished_at = $14, stage = $15, stage_started_at = $16, next_run_at = $17,
    claimed_by = $18, lease_until = $19, cancel_requested = $20, rollback_requested = $21,
    switch_requested = $22, rollback_reason = $23, rollback_started_at = $24,
    rollback_finished_at = $25, switched_at = $26, blue_delete_at = $27, blue_deleted = $28,
    trace_context = $29, paused_at = $30, paused_by = $31, pause_reason = $32, bake_window_ms = $33,
    revision = revision + 1
WHERE id = $1 AND revision = $2;

-- name: DeploymentClusterUpdate
UPDATE deployment_clusters
SET environment = $3, stage = $4, status = $5, helm_revision = $6, previous_revision = $7,
    previous_version = $8, message = $9, active = $10, updated_at = $11, namespace = $12,
    release = $13, blue_namespace = $14, blue_release = $15, install_attempts = $16
WHERE deployment_id = $1 AND cluster_name = $2;

-- name: DeploymentList
SELECT d.id, d.operator_id, d.operator_name, d.version, d.strategy, d.config, d.helm_values,
    d.values_by_environment, d.status, d.reason, d.requested_by, d.request_id, d.revision,
    d.created_at, d.updated_at, d.started_at, d.finished_at, d.stage, d.stage_started_at,
    d.next_run_at, d.claimed_by, d.lease_until, d.cancel_requested, d.rollback_requested,
    d.switch_requested, d.rollback_reason, d.rollback_started_at, d.rollback_finished_at,
    d.switched_at, d.blue_delete_at, d.blue_deleted, d.trace_context, d.paused_at, d.paused_by, d.pause_reason,
    d.bake_window_ms, d.analyses
FROM deployments d
WHERE true /*filters*/
ORDER BY d.created_at DESC, d.id DESC

-- name: DeploymentClusterListMany
-- $1 is a JSON array of deployment ids.
SELECT deployment_id, cluster_name, environment, stage, status, helm_revision, previous_revision,
    previous_version, message, active, updated_at, namespace, release, blue_namespace,
    blue_release, install_attempts
FROM deployment_clusters
WHERE deployment_id IN (SELECT value::uuid FROM json_array_elements_text($1::json))
ORDER BY deployment_id, ordinal;

-- name: DeploymentCountActive
SELECT count(*) FROM deployments WHERE status NOT IN ('Completed', 'RolledBack', 'Failed', 'Cancelled');

-- name: DeploymentCountByStatus
SELECT status, count(*) FROM deployments GROUP BY status;

-- name: DeploymentEventInsert
-- Locks the deployment row for the statement (or the caller's transaction), so a deployment's
-- events commit in id order: a reader resuming after an id never misses one committed later (on
-- SQLite, the one writer does). No row (ErrNotFound) when the deployment does not exist.
INSERT INTO deployment_events (deployment_id, at, type, cluster, message, details)
SELECT d.id, $2::timestamptz, $3::text, $4::text, $5::text, $6::json
FROM deployments d
WHERE d.id = $1::uuid
FOR NO KEY UPDATE
RETURNING id, deployment_id, at, type, cluster, message, details;

-- name: DeploymentEventList
SELECT id, deployment_id, at, type, cluster, message, details
FROM deployment_events
WHERE deployment_id = $1 /*filters*/
ORDER BY id

-- Approval columns: id, deployment_id, kind, required_role, required, requested_by, status,
-- reason, expires_at, created_at, updated_at, notified_at. Decision columns: approval_id, actor, approve,
-- comment, at.

-- name: ApprovalInsert
INSERT INTO approvals (id, deployment_id, kind, required_role, required, requested_by, status,
    reason, expires_at, created_at, updated_at, notified_at)
VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $9, $10)
RETURNING id, deployment_id, kind, required_role, required, requested_by, status, reason,
    expires_at, created_at, updated_at, notified_at;

-- name: ApprovalGet
SELECT id, deployment_id, kind, required_role, required, requested_by, status, reason,
    expires_at, created_at, updated_at, notified_at
FROM approvals
WHERE id = $1;

-- name: ApprovalGetForUpdate
SELECT id, deployment_id, kind, required_role, required, requested_by, status, reason,
    expires_at, created_at, updated_at, notified_at
FROM approvals
WHERE id = $1
FOR NO KEY UPDATE;

-- name: ApprovalList
SELECT a.id, a.deployment_id, a.kind, a.required_role, a.required, a.requested_by, a.status,
    a.reason, a.expires_at, a.created_at, a.updated_at, a.notified_at
FROM approvals a
WHERE true /*filters*/
ORDER BY a.created_at DESC, a.id DESC

-- name: ApprovalSetStatus
UPDATE approvals SET status = $2, updated_at = $3 WHERE id = $1;

-- name: ApprovalExpire
UPDATE approvals
SET status = 'expired', updated_at = $1
WHERE status = 'pending' AND expires_at <= $1
RETURNING id, deployment_id, kind, required_role, required, requested_by, status, reason,
    expires_at, created_at, updated_at, notified_at;

-- name: ApprovalDecisionInsert
INSERT INTO approval_decisions (approval_id, actor, approve, comment, at)
VALUES ($1, $2, $3, $4, $5);

-- name: ApprovalDecisionListMany
-- $1 is a JSON array of approval ids.
SELECT approval_id, actor, approve, comment, at
FROM approval_decisions
WHERE approval_id IN (SELECT value::uuid FROM json_array_elements_text($1::json))
ORDER BY approval_id, at, actor;

-- The engine (00003_engine.sql): claims, admission, live releases.

-- name: DeploymentRenew
-- $1 id, $2 owner, $3 the lease's new end; no row when owner does not hold the claim.
UPDATE deployments SET lease_until = $3 WHERE id = $1 AND claimed_by = $2
RETURNING id;

-- name: DeploymentCountRunning
SELECT count(*) FROM deployments WHERE status IN ('Planning', 'Deploying', 'Validating', 'RollingBack');

-- name: DeploymentCountQueued
SELECT count(*) FROM deployments WHERE status = 'Queued';

-- name: LiveReleaseList
-- Per (operator, cluster), the newest deployment's (created_at, id) healthy cluster row (or one a
-- cancel stopped while validating), with when that deployment finished and whether a newer
-- deployment of the operator has installed on the cluster since (superseded: it failed or was
-- rolled back there, and this release is what it restored).
-- Columns: operator_id, operator_name, cluster_name, environment, deployment_id,
-- deployment_status, version, namespace, release, helm_revision, finished_at, bake_window_ms,
-- superseded.
SELECT operator_id, operator_name, cluster_name, environment, deployment_id, deployment_status,
    version, namespace, release, helm_revision, finished_at, bake_window_ms,
    CASE WHEN EXISTS (
        SELECT 1 FROM deployment_clusters nc JOIN deployments nd ON nd.id = nc.deployment_id
        WHERE nc.operator_id = live.operator_id AND nc.cluster_name = live.cluster_name
            AND (nc.install_attempts > 0 OR nc.helm_revision > 0)
            AND (nd.created_at > live.created_at OR (nd.created_at = live.created_at AND nd.id > live.deployment_id))
    ) THEN true ELSE false END AS superseded
FROM (
    SELECT o.id AS operator_id, o.name AS operator_name, c.cluster_name, c.environment,
        d.id AS deployment_id, d.status AS deployment_status, d.version, c.namespace, c.release,
        c.helm_revision, d.finished_at, d.bake_window_ms, d.created_at,
        row_number() OVER (PARTITION BY c.operator_id, c.cluster_name
            ORDER BY d.created_at DESC, d.id DESC) AS newest
    FROM deployment_clusters c
    JOIN deployments d ON d.id = c.deployment_id
    -- A deleted operator is no longer watched.
    JOIN operators o ON o.id = c.operator_id AND o.deleted_at IS NULL
    -- A cancelled deployment's cluster stopped while validating runs that deployment's release
    -- (cancel stops, it does not undo): it is live, health-checked, never rolled back by itself.
    WHERE (c.status = 'healthy' OR (c.status = 'validating' AND d.status = 'Cancelled')) /*filters*/
) live
WHERE newest = 1
ORDER BY operator_name, cluster_name

-- Operator health columns: operator_name, cluster_name, deployment_id, health, result,
-- consecutive_failures, checked_at.

-- name: OperatorHealthRecord
-- $1 operator, $2 cluster, $3 deployment, $4 health, $5 result, $6 checked at. Failures count
-- up on Unhealthy, reset on Healthy, stay on Degraded; another deployment starts over.
INSERT INTO operator_health (operator_name, cluster_name, deployment_id, health, result,
    consecutive_failures, checked_at)
VALUES ($1, $2, $3, $4, $5, CASE WHEN $4::text = 'Unhealthy' THEN 1 ELSE 0 END, $6)
ON CONFLICT (operator_name, cluster_name) DO UPDATE
SET deployment_id = EXCLUDED.deployment_id, health = EXCLUDED.health, result = EXCLUDED.result,
    checked_at = EXCLUDED.checked_at,
    consecutive_failures = CASE
        WHEN operator_health.deployment_id <> EXCLUDED.deployment_id THEN EXCLUDED.consecutive_failures
        WHEN EXCLUDED.health = 'Unhealthy' THEN operator_health.consecutive_failures + 1
        WHEN EXCLUDED.health = 'Healthy' THEN 0
        ELSE operator_health.consecutive_failures
    END
RETURNING operator_name, cluster_name, deployment_id, health, result, consecutive_failures, checked_at;

-- name: OperatorHealthList
SELECT operator_name, cluster_name, deployment_id, health, result, consecutive_failures, checked_at
FROM operator_health
WHERE true /*filters*/
ORDER BY operator_name, cluster_name

-- name: OperatorHealthDelete
DELETE FROM operator_health WHERE operator_name = $1 AND cluster_name = $2;

-- name: LeaseAcquire
-- $1 name, $2 owner, $3 now, $4 until. No row when another owner holds it and it has not lapsed.
INSERT INTO leases (name, owner, expires_at)
VALUES ($1, $2, $4)
ON CONFLICT (name) DO UPDATE
SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
WHERE leases.owner = EXCLUDED.owner OR leases.expires_at < $3
RETURNING owner;

-- name: LeaseRelease
DELETE FROM leases WHERE name = $1 AND owner = $2;

-- name: LeaseGet
SELECT name, owner, expires_at FROM leases WHERE name = $1;

-- name: ApprovalMarkNotified
UPDATE approvals SET notified_at = $2 WHERE id = $1;
