-- Operator health baselines (store/baselines.go, migration 00013).

-- name: OperatorBaselinePut
-- $1 operator, $2 cluster, $3 deployment ('' for the last Healthy check's), $4 source,
-- $5 captured at, $6 data: an upsert.
INSERT INTO operator_baselines (operator_name, cluster_name, deployment_id, source, captured_at, data)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (operator_name, cluster_name, deployment_id)
DO UPDATE SET source = excluded.source, captured_at = excluded.captured_at, data = excluded.data
RETURNING operator_name, cluster_name, deployment_id, source, captured_at, data;

-- name: OperatorBaselinePrune
-- $1 operator, $2 cluster, $3 the deployment whose baseline stays: the older deployments' go
-- (the last Healthy check's stays too).
DELETE FROM operator_baselines
WHERE operator_name = $1 AND cluster_name = $2 AND deployment_id <> '' AND deployment_id <> $3;

-- name: OperatorBaselineGet
-- $1 operator, $2 cluster, $3 deployment ('' for the last Healthy check's): a primary-key lookup.
SELECT operator_name, cluster_name, deployment_id, source, captured_at, data
FROM operator_baselines
WHERE operator_name = $1 AND cluster_name = $2 AND deployment_id = $3;

-- name: OperatorBaselineList
-- $1 operator, $2 cluster: its baselines (at most two, as the puts prune), newest first.
SELECT operator_name, cluster_name, deployment_id, source, captured_at, data
FROM operator_baselines
WHERE operator_name = $1 AND cluster_name = $2
ORDER BY captured_at DESC, deployment_id DESC;
