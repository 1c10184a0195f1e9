-- The rollout engine's bookkeeping (issue 12): where each deployment stands (its stage, when it is
-- due, which replica has claimed it, the API's requests), where each cluster's release lives,
-- when an approval's mail went out, the latest health per (operator, cluster), and named leases
-- for the duties one replica does at a time.
-- Times are TEXT in sqlstore.TimeLayout; booleans are 0 or 1; JSON is TEXT (NULL when absent).

-- +goose Up
ALTER TABLE deployments ADD COLUMN stage INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN stage_started_at TEXT;
ALTER TABLE deployments ADD COLUMN next_run_at TEXT;
ALTER TABLE deployments ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN lease_until TEXT;
ALTER TABLE deployments ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1));
ALTER TABLE deployments ADD COLUMN rollback_requested INTEGER NOT NULL DEFAULT 0 CHECK (rollback_requested IN (0, 1));
ALTER TABLE deployments ADD COLUMN switch_requested INTEGER NOT NULL DEFAULT 0 CHECK (switch_requested IN (0, 1));
ALTER TABLE deployments ADD COLUMN rollback_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN rollback_started_at TEXT;
ALTER TABLE deployments ADD COLUMN rollback_finished_at TEXT;
ALTER TABLE deployments ADD COLUMN switched_at TEXT;
ALTER TABLE deployments ADD COLUMN blue_delete_at TEXT;
ALTER TABLE deployments ADD COLUMN blue_deleted INTEGER NOT NULL DEFAULT 0 CHECK (blue_deleted IN (0, 1));
-- The due deployments, earliest first (DeploymentClaim).
CREATE INDEX deployments_next_run_at ON deployments (next_run_at, id) WHERE next_run_at IS NOT NULL;

ALTER TABLE deployment_clusters ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
ALTER TABLE deployment_clusters ADD COLUMN release TEXT NOT NULL DEFAULT '';
ALTER TABLE deployment_clusters ADD COLUMN blue_namespace TEXT NOT NULL DEFAULT '';
ALTER TABLE deployment_clusters ADD COLUMN blue_release TEXT NOT NULL DEFAULT '';
ALTER TABLE deployment_clusters ADD COLUMN install_attempts INTEGER NOT NULL DEFAULT 0;
-- Where each operator version is live (LiveReleaseList).
CREATE INDEX deployment_clusters_healthy ON deployment_clusters (operator_id, cluster_name) WHERE status = 'healthy';

ALTER TABLE approvals ADD COLUMN notified_at TEXT;
-- The approvals whose mail is still to send.
CREATE INDEX approvals_unnotified ON approvals (created_at, id) WHERE notified_at IS NULL;

-- The latest health check of each operator on each cluster it is live on.
CREATE TABLE operator_health (
    operator_name        TEXT    NOT NULL,
    cluster_name         TEXT    NOT NULL,
    deployment_id        TEXT    NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    health               TEXT    NOT NULL CHECK (health IN ('Healthy', 'Degraded', 'Unhealthy')),
    result               TEXT    CHECK (json_valid(result)),
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    checked_at           TEXT    NOT NULL,
    PRIMARY KEY (operator_name, cluster_name)
) STRICT;
CREATE INDEX operator_health_deployment_id ON operator_health (deployment_id);

-- Named leases: who does a leader duty (admission, approval expiry, mail) until when.
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT;

-- +goose Down
DROP TABLE leases;
DROP TABLE operator_health;
DROP INDEX approvals_unnotified;
ALTER TABLE approvals DROP COLUMN notified_at;
DROP INDEX deployment_clusters_healthy;
ALTER TABLE deployment_clusters DROP COLUMN namespace;
ALTER TABLE deployment_clusters DROP COLUMN release;
ALTER TABLE deployment_clusters DROP COLUMN blue_namespace;
ALTER TABLE deployment_clusters DROP COLUMN blue_release;
ALTER TABLE deployment_clusters DROP COLUMN install_attempts;
DROP INDEX deployments_next_run_at;
ALTER TABLE deployments DROP COLUMN stage;
ALTER TABLE deployments DROP COLUMN stage_started_at;
ALTER TABLE deployments DROP COLUMN next_run_at;
ALTER TABLE deployments DROP COLUMN claimed_by;
ALTER TABLE deployments DROP COLUMN lease_until;
ALTER TABLE deployments DROP COLUMN cancel_requested;
ALTER TABLE deployments DROP COLUMN rollback_requested;
ALTER TABLE deployments DROP COLUMN switch_requested;
ALTER TABLE deployments DROP COLUMN rollback_reason;
ALTER TABLE deployments DROP COLUMN rollback_started_at;
ALTER TABLE deployments DROP COLUMN rollback_finished_at;
ALTER TABLE deployments DROP COLUMN switched_at;
ALTER TABLE deployments DROP COLUMN blue_delete_at;
ALTER TABLE deployments DROP COLUMN blue_deleted;
