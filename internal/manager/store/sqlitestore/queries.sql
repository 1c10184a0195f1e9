-- SQLite queries of the manager's store. Each "-- name: X" starts the query sqlstore runs
-- for method X; list queries take their filters at /*filters*/ and a LIMIT appended by sqlstore.

-- name: SchemaTableExists
SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1);

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
WHERE 1 = 1 /*filters*/
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
RETURNING id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at;

-- name: OperatorGetByName
SELECT id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at
FROM operators
WHERE name = $1;

-- name: OperatorGetByID
SELECT id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at
FROM operators
WHERE id = $1;

-- name: OperatorList
SELECT id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at
FROM operators
WHERE 1 = 1 /*filters*/
ORDER BY name

-- name: OperatorCount
SELECT count(*) FROM operators;

-- name: OperatorVersionUpsert
INSERT INTO operator_versions (operator_id, version, app_version, digest, created_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (operator_id, version) DO UPDATE
SET app_version = excluded.app_version, digest = excluded.digest
RETURNING operator_id, version, app_version, digest, created_at;

-- name: OperatorVersionList
-- Ordered by semver in Go.
SELECT operator_id, version, app_version, digest, created_at
FROM operator_versions
WHERE operator_id = $1;

-- name: OperatorVersionListMany
-- $1 is a JSON array of operator ids. Ordered by semver in Go.
SELECT operator_id, version, app_version, digest, created_at
FROM operator_versions
WHERE operator_id IN (SELECT value FROM json_each($1));

-- name: CRDSchemaInsert
INSERT INTO crd_schemas (name, crd_group, kind, scope, operator_id, version, digest, definition, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
RETURNING id, name, crd_group, kind, scope, operator_id, version, digest, definition, created_at;

-- name: CRDSchemaList
SELECT id, name, crd_group, kind, scope, operator_id, version, digest, definition, created_at
FROM crd_schemas
WHERE name = $1 /*filters*/
ORDER BY id

-- name: CRDList
-- One row per CRD name: its latest revision and how many it has.
SELECT s.id, s.name, s.crd_group, s.kind, s.scope, s.operator_id, s.version, s.digest,
    s.definition, s.created_at, c.revisions
FROM crd_schemas s
JOIN (SELECT max(id) AS latest_id, count(*) AS revisions FROM crd_schemas GROUP BY name) c
    ON s.id = c.latest_id
WHERE 1 = 1 /*filters*/
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
WHERE 1 = 1 /*filters*/
ORDER BY id DESC
