-- Operator health baselines (issue 27 §1): what an operator's custom resources and metrics looked
-- like on a cluster when a deployment started there (deployment_id, before its install), and at
-- the health loop's last Healthy check (deployment_id ''), so that a check judges the operator
-- against them after a replica's death too. data is health.Baseline as gzipped JSON; only the
-- newest deployment's baseline and the last Healthy one are kept per operator and cluster.

-- +goose Up
CREATE TABLE operator_baselines (
    operator_name text        NOT NULL,
    cluster_name  text        NOT NULL,
    deployment_id text        NOT NULL,
    source        text        NOT NULL,
    captured_at   timestamptz NOT NULL,
    data          bytea       NOT NULL,
    PRIMARY KEY (operator_name, cluster_name, deployment_id)
);

-- +goose Down
DROP TABLE operator_baselines;
