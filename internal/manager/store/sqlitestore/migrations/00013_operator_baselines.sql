-- Operator health baselines (issue 27 §1): what an operator's custom resources and metrics looked
-- like on a cluster when a deployment started there (deployment_id, before its install), and at
-- the health loop's last Healthy check (deployment_id ''), so that a check judges the operator
-- against them after a replica's death too. data is health.Baseline as gzipped JSON; only the
-- newest deployment's baseline and the last Healthy one are kept per operator and cluster. Times
-- are TEXT in sqlstore.TimeLayout.

-- +goose Up
CREATE TABLE operator_baselines (
    operator_name TEXT NOT NULL,
    cluster_name  TEXT NOT NULL,
    deployment_id TEXT NOT NULL,
    source        TEXT NOT NULL,
    captured_at   TEXT NOT NULL,
    data          BLOB NOT NULL,
    PRIMARY KEY (operator_name, cluster_name, deployment_id)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE operator_baselines;
