-- The rollout engine's records (issue 12): deployments, the status of each of their target
-- clusters, their step history, and approvals with their decisions. Clusters are referenced by
-- name only, without a foreign key, so that deleting a cluster keeps the history readable.
-- Times are TEXT in sqlstore.TimeLayout; booleans are 0 or 1; JSON is TEXT (NULL when absent).

-- +goose Up
CREATE TABLE deployments (
    id                    TEXT    PRIMARY KEY,
    operator_id           TEXT    NOT NULL REFERENCES operators (id),
    operator_name         TEXT    NOT NULL,
    version               TEXT    NOT NULL,
    strategy              TEXT    NOT NULL CHECK (strategy IN ('Canary', 'BlueGreen', 'Rolling', 'Direct')),
    config                TEXT    CHECK (json_valid(config)),
    helm_values           TEXT    CHECK (json_valid(helm_values)),
    values_by_environment TEXT    CHECK (json_valid(values_by_environment)),
    status                TEXT    NOT NULL CHECK (status IN ('Queued', 'WaitingApproval', 'Planning',
        'Deploying', 'Validating', 'Completed', 'RollingBack', 'RolledBack', 'Failed', 'Cancelled')),
    reason                TEXT    NOT NULL DEFAULT '',
    requested_by          TEXT    NOT NULL DEFAULT '',
    request_id            TEXT    NOT NULL DEFAULT '',
    revision              INTEGER NOT NULL DEFAULT 0,
    created_at            TEXT    NOT NULL,
    updated_at            TEXT    NOT NULL,
    started_at            TEXT,
    finished_at           TEXT
) STRICT;
-- Lists: newest first, optionally of one operator or one status; the active ones (and their count).
CREATE INDEX deployments_created_id ON deployments (created_at, id);
CREATE INDEX deployments_operator_created_id ON deployments (operator_id, created_at, id);
CREATE INDEX deployments_status_created_id ON deployments (status, created_at, id);
CREATE INDEX deployments_active_created_id ON deployments (created_at, id)
    WHERE status NOT IN ('Completed', 'RolledBack', 'Failed', 'Cancelled');

CREATE TABLE deployment_clusters (
    deployment_id     TEXT    NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    cluster_name      TEXT    NOT NULL,
    -- The deployment's operator, repeated here for the one-active-deployment index.
    operator_id       TEXT    NOT NULL REFERENCES operators (id),
    ordinal           INTEGER NOT NULL,
    environment       TEXT    NOT NULL CHECK (environment IN ('Dev', 'Staging', 'Production')),
    stage             INTEGER NOT NULL DEFAULT 0,
    status            TEXT    NOT NULL CHECK (status IN ('pending', 'installing', 'validating',
        'healthy', 'rolledBack', 'failed', 'skipped')),
    helm_revision     INTEGER NOT NULL DEFAULT 0,
    previous_revision INTEGER NOT NULL DEFAULT 0,
    previous_version  TEXT    NOT NULL DEFAULT '',
    message           TEXT    NOT NULL DEFAULT '',
    active            INTEGER NOT NULL CHECK (active IN (0, 1)),
    updated_at        TEXT    NOT NULL,
    PRIMARY KEY (deployment_id, cluster_name)
) STRICT;
-- One active deployment per (operator, cluster): the database, not the application, enforces it.
CREATE UNIQUE INDEX deployment_clusters_one_active ON deployment_clusters (operator_id, cluster_name) WHERE active = 1;
CREATE INDEX deployment_clusters_cluster_name ON deployment_clusters (cluster_name);

CREATE TABLE deployment_events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    deployment_id TEXT    NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    at            TEXT    NOT NULL,
    type          TEXT    NOT NULL,
    cluster       TEXT    NOT NULL DEFAULT '',
    message       TEXT    NOT NULL DEFAULT '',
    details       TEXT    CHECK (json_valid(details))
) STRICT;
CREATE INDEX deployment_events_deployment_id ON deployment_events (deployment_id, id);

CREATE TABLE approvals (
    id            TEXT    PRIMARY KEY,
    deployment_id TEXT    NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    kind          TEXT    NOT NULL,
    required_role TEXT    NOT NULL,
    required      INTEGER NOT NULL CHECK (required >= 1),
    requested_by  TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    reason        TEXT    NOT NULL DEFAULT '',
    expires_at    TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL
) STRICT;
CREATE INDEX approvals_created_id ON approvals (created_at, id);
CREATE INDEX approvals_status_created_id ON approvals (status, created_at, id);
CREATE INDEX approvals_deployment_id ON approvals (deployment_id);
CREATE INDEX approvals_pending_expires_at ON approvals (expires_at) WHERE status = 'pending';

CREATE TABLE approval_decisions (
    approval_id TEXT    NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    actor       TEXT    NOT NULL,
    approve     INTEGER NOT NULL CHECK (approve IN (0, 1)),
    comment     TEXT    NOT NULL DEFAULT '',
    at          TEXT    NOT NULL,
    -- One decision per person.
    PRIMARY KEY (approval_id, actor)
) STRICT;

-- +goose Down
DROP TABLE approval_decisions;
DROP TABLE approvals;
DROP TABLE deployment_events;
DROP TABLE deployment_clusters;
DROP TABLE deployments;
