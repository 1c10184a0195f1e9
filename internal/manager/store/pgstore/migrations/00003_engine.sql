-- The rollout engine's bookkeeping (issue 12): where each deployment stands (its stage, when it is
-- due, which replica has claimed it, the API's requests), where each cluster's release lives,
-- when an approval's mail went out, the latest health per (operator, cluster), and named leases
-- for the duties one replica does at a time.

-- +goose Up
ALTER TABLE deployments
    ADD COLUMN stage                integer     NOT NULL DEFAULT 0,
    ADD COLUMN stage_started_at     timestamptz,
    ADD COLUMN next_run_at          timestamptz,
    ADD COLUMN claimed_by           text        NOT NULL DEFAULT '',
    ADD COLUMN lease_until          timestamptz,
    ADD COLUMN cancel_requested     boolean     NOT NULL DEFAULT false,
    ADD COLUMN rollback_requested   boolean     NOT NULL DEFAULT false,
    ADD COLUMN switch_requested     boolean     NOT NULL DEFAULT false,
    ADD COLUMN rollback_reason      text        NOT NULL DEFAULT '',
    ADD COLUMN rollback_started_at  timestamptz,
    ADD COLUMN rollback_finished_at timestamptz,
    ADD COLUMN switched_at          timestamptz,
    ADD COLUMN blue_delete_at       timestamptz,
    ADD COLUMN blue_deleted         boolean     NOT NULL DEFAULT false;
-- The due deployments, earliest first (DeploymentClaim).
CREATE INDEX deployments_next_run_at ON deployments (next_run_at, id) WHERE next_run_at IS NOT NULL;

ALTER TABLE deployment_clusters
    ADD COLUMN namespace        text    NOT NULL DEFAULT '',
    ADD COLUMN release          text    NOT NULL DEFAULT '',
    ADD COLUMN blue_namespace   text    NOT NULL DEFAULT '',
    ADD COLUMN blue_release     text    NOT NULL DEFAULT '',
    ADD COLUMN install_attempts integer NOT NULL DEFAULT 0;
-- Where each operator version is live (LiveReleaseList).
CREATE INDEX deployment_clusters_healthy ON deployment_clusters (operator_id, cluster_name) WHERE status = 'healthy';

ALTER TABLE approvals ADD COLUMN notified_at timestamptz;
-- The approvals whose mail is still to send.
CREATE INDEX approvals_unnotified ON approvals (created_at, id) WHERE notified_at IS NULL;

-- The latest health check of each operator on each cluster it is live on.
CREATE TABLE operator_health (
    operator_name        text        NOT NULL,
    cluster_name         text        NOT NULL,
    deployment_id        uuid        NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    health               text        NOT NULL CHECK (health IN ('Healthy', 'Degraded', 'Unhealthy')),
    result               json,
    consecutive_failures integer     NOT NULL DEFAULT 0,
    checked_at           timestamptz NOT NULL,
    PRIMARY KEY (operator_name, cluster_name)
);
CREATE INDEX operator_health_deployment_id ON operator_health (deployment_id);

-- Named leases: who does a leader duty (admission, approval expiry, mail) until when.
CREATE TABLE leases (
    name       text        PRIMARY KEY,
    owner      text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE leases;
DROP TABLE operator_health;
DROP INDEX approvals_unnotified;
ALTER TABLE approvals DROP COLUMN notified_at;
DROP INDEX deployment_clusters_healthy;
ALTER TABLE deployment_clusters
    DROP COLUMN namespace,
    DROP COLUMN release,
    DROP COLUMN blue_namespace,
    DROP COLUMN blue_release,
    DROP COLUMN install_attempts;
DROP INDEX deployments_next_run_at;
ALTER TABLE deployments
    DROP COLUMN stage,
    DROP COLUMN stage_started_at,
    DROP COLUMN next_run_at,
    DROP COLUMN claimed_by,
    DROP COLUMN lease_until,
    DROP COLUMN cancel_requested,
    DROP COLUMN rollback_requested,
    DROP COLUMN switch_requested,
    DROP COLUMN rollback_reason,
    DROP COLUMN rollback_started_at,
    DROP COLUMN rollback_finished_at,
    DROP COLUMN switched_at,
    DROP COLUMN blue_delete_at,
    DROP COLUMN blue_deleted;
