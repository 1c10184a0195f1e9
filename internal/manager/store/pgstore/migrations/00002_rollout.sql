-- The rollout engine's records (issue 12): deployments, the status of each of their target
-- clusters, their step history, and approvals with their decisions. Clusters are referenced by
-- name only, without a foreign key, so that deleting a cluster keeps the history readable.

-- +goose Up
CREATE TABLE deployments (
    id                    uuid        PRIMARY KEY,
    operator_id           uuid        NOT NULL REFERENCES operators (id),
    operator_name         text        NOT NULL,
    version               text        NOT NULL,
    strategy              text        NOT NULL CHECK (strategy IN ('Canary', 'BlueGreen', 'Rolling', 'Direct')),
    config                json,
    helm_values           json,
    values_by_environment json,
    status                text        NOT NULL CHECK (status IN ('Queued', 'WaitingApproval', 'Planning',
        'Deploying', 'Validating', 'Completed', 'RollingBack', 'RolledBack', 'Failed', 'Cancelled')),
    reason                text        NOT NULL DEFAULT '',
    requested_by          text        NOT NULL DEFAULT '',
    request_id            text        NOT NULL DEFAULT '',
    revision              bigint      NOT NULL DEFAULT 0,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    started_at            timestamptz,
    finished_at           timestamptz
);
-- Lists: newest first, optionally of one operator or one status; the active ones (and their count).
CREATE INDEX deployments_created_id ON deployments (created_at, id);
CREATE INDEX deployments_operator_created_id ON deployments (operator_id, created_at, id);
CREATE INDEX deployments_status_created_id ON deployments (status, created_at, id);
CREATE INDEX deployments_active_created_id ON deployments (created_at, id)
    WHERE status NOT IN ('Completed', 'RolledBack', 'Failed', 'Cancelled');

CREATE TABLE deployment_clusters (
    deployment_id     uuid        NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    cluster_name      text        NOT NULL,
    -- The deployment's operator, repeated here for the one-active-deployment index.
    operator_id       uuid        NOT NULL REFERENCES operators (id),
    ordinal           integer     NOT NULL,
    environment       text        NOT NULL CHECK (environment IN ('Dev', 'Staging', 'Production')),
    stage             integer     NOT NULL DEFAULT 0,
    status            text        NOT NULL CHECK (status IN ('pending', 'installing', 'validating',
        'healthy', 'rolledBack', 'failed', 'skipped')),
    helm_revision     integer     NOT NULL DEFAULT 0,
    previous_revision integer     NOT NULL DEFAULT 0,
    previous_version  text        NOT NULL DEFAULT '',
    message           text        NOT NULL DEFAULT '',
    active            boolean     NOT NULL,
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (deployment_id, cluster_name)
);
-- One active deployment per (operator, cluster): the database, not the application, enforces it.
CREATE UNIQUE INDEX deployment_clusters_one_active ON deployment_clusters (operator_id, cluster_name) WHERE active;
CREATE INDEX deployment_clusters_cluster_name ON deployment_clusters (cluster_name);

CREATE TABLE deployment_events (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    deployment_id uuid        NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    at            timestamptz NOT NULL,
    type          text        NOT NULL,
    cluster       text        NOT NULL DEFAULT '',
    message       text        NOT NULL DEFAULT '',
    details       json
);
CREATE INDEX deployment_events_deployment_id ON deployment_events (deployment_id, id);

CREATE TABLE approvals (
    id            uuid        PRIMARY KEY,
    deployment_id uuid        NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    kind          text        NOT NULL,
    required_role text        NOT NULL,
    required      integer     NOT NULL CHECK (required >= 1),
    requested_by  text        NOT NULL,
    status        text        NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    reason        text        NOT NULL DEFAULT '',
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE INDEX approvals_created_id ON approvals (created_at, id);
CREATE INDEX approvals_status_created_id ON approvals (status, created_at, id);
CREATE INDEX approvals_deployment_id ON approvals (deployment_id);
CREATE INDEX approvals_pending_expires_at ON approvals (expires_at) WHERE status = 'pending';

CREATE TABLE approval_decisions (
    approval_id uuid        NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    actor       text        NOT NULL,
    approve     boolean     NOT NULL,
    comment     text        NOT NULL DEFAULT '',
    at          timestamptz NOT NULL,
    -- One decision per person.
    PRIMARY KEY (approval_id, actor)
);

-- +goose Down
DROP TABLE approval_decisions;
DROP TABLE approvals;
DROP TABLE deployment_events;
DROP TABLE deployment_clusters;
DROP TABLE deployments;
