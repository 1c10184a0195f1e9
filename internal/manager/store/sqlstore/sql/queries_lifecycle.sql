-- Operators that keep moving (store/lifecycle.go, migration 00005).

-- name: OperatorUpdate
-- $1 id, $2 chart repository, $3 chart name, $4 version filter, $5 now.
UPDATE operators
SET chart_repository = $2, chart_name = $3, version_filter = $4, updated_at = $5
WHERE id = $1
RETURNING id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at, deleted_at;

-- name: OperatorMarkDeleted
-- $1 id, $2 now. No row when the operator is unknown or deleted already.
UPDATE operators
SET deleted_at = $2, updated_at = $2
WHERE id = $1 AND deleted_at IS NULL
RETURNING id, name, namespace, chart_repository, chart_name, version_filter, created_at, updated_at, deleted_at;

-- name: OperatorVersionSetRemoved
-- $1 operator, $2 version, $3 removed at (NULL: available again), $4 reason. A version removed
-- already keeps its first time.
UPDATE operator_versions
SET removed_at = CASE WHEN $3::timestamptz IS NULL THEN NULL ELSE COALESCE(removed_at, $3::timestamptz) END,
    removed_reason = CASE WHEN $3::timestamptz IS NULL THEN '' ELSE $4::text END
WHERE operator_id = $1 AND version = $2
RETURNING operator_id, version, app_version, digest, created_at, removed_at, removed_reason;

-- Refresh columns: operator_id, source, etag, last_modified, checked_at, succeeded_at, next_at,
-- error, failures.

-- name: OperatorRefreshGet
SELECT operator_id, source, etag, last_modified, checked_at, succeeded_at, next_at, error, failures
FROM operator_refresh
WHERE operator_id = $1;

-- name: OperatorRefreshRecord
-- $1 operator, $2 source, $3 etag, $4 last modified, $5 checked at, $6 succeeded, $7 next at,
-- $8 error.
INSERT INTO operator_refresh (operator_id, source, etag, last_modified, checked_at, succeeded_at,
    next_at, error, failures)
VALUES ($1, $2, $3, $4, $5, CASE WHEN $6::boolean THEN $5::timestamptz END, $7, $8,
    CASE WHEN $6::boolean THEN 0 ELSE 1 END)
ON CONFLICT (operator_id) DO UPDATE
SET source = EXCLUDED.source, etag = EXCLUDED.etag, last_modified = EXCLUDED.last_modified,
    checked_at = EXCLUDED.checked_at,
    succeeded_at = COALESCE(EXCLUDED.succeeded_at, operator_refresh.succeeded_at),
    next_at = EXCLUDED.next_at, error = EXCLUDED.error,
    failures = CASE WHEN EXCLUDED.failures = 0 THEN 0 ELSE operator_refresh.failures + 1 END
RETURNING operator_id, source, etag, last_modified, checked_at, succeeded_at, next_at, error, failures;

-- name: OperatorRefreshDue
-- $1 now, $2 limit. Never refreshed first, then by when due, then by name.
SELECT o.id, o.name, o.namespace, o.chart_repository, o.chart_name, o.version_filter, o.created_at,
    o.updated_at, o.deleted_at
FROM operators o
LEFT JOIN operator_refresh r ON r.operator_id = o.id
WHERE o.deleted_at IS NULL AND (r.next_at IS NULL OR r.next_at <= $1)
ORDER BY r.next_at IS NOT NULL, r.next_at, o.name
LIMIT $2;
