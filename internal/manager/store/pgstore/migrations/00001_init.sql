-- The manager's first schema: clusters, operators and their versions, CRD revisions and
-- approvals, the audit log. Part 2 adds deployments in later files.

-- +goose Up
CREATE TABLE clusters (
    id                    uuid        PRIMARY KEY,
    name                  text        NOT NULL UNIQUE,
    environment           text        NOT NULL CHECK (environment IN ('Dev', 'Staging', 'Production')),
    kubernetes_version    text        NOT NULL DEFAULT '',
    health                text        NOT NULL DEFAULT 'Unknown' CHECK (health IN ('Unknown', 'Healthy', 'Unhealthy')),
    health_reason         text        NOT NULL DEFAULT '',
    health_checked_at     timestamptz,
    kubeconfig_ciphertext bytea       NOT NULL,
    token_ciphertext      bytea,
    token_expires_at      timestamptz,
    key_id                text        NOT NULL,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL
);
CREATE INDEX clusters_environment_name ON clusters (environment, name);
CREATE INDEX clusters_health_name ON clusters (health, name);

CREATE TABLE operators (
    id               uuid        PRIMARY KEY,
    name             text        NOT NULL UNIQUE,
    namespace        text        NOT NULL,
    chart_repository text        NOT NULL,
    chart_name       text        NOT NULL,
    version_filter   text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX operators_namespace_name ON operators (namespace, name);

CREATE TABLE operator_versions (
    operator_id uuid        NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    version     text        NOT NULL,
    app_version text        NOT NULL DEFAULT '',
    digest      text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (operator_id, version)
);

CREATE TABLE crd_schemas (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text        NOT NULL,
    crd_group   text        NOT NULL,
    kind        text        NOT NULL,
    scope       text        NOT NULL,
    operator_id uuid        REFERENCES operators (id) ON DELETE CASCADE,
    version     text        NOT NULL DEFAULT '',
    digest      text        NOT NULL,
    definition  bytea       NOT NULL,
    created_at  timestamptz NOT NULL
);
-- One revision per (CRD, source, digest); a definition posted directly has no operator.
CREATE UNIQUE INDEX crd_schemas_source_digest ON crd_schemas (name, COALESCE(operator_id::text, ''), digest);
CREATE INDEX crd_schemas_name_id ON crd_schemas (name, id);
CREATE INDEX crd_schemas_operator_id ON crd_schemas (operator_id) WHERE operator_id IS NOT NULL;

CREATE TABLE crd_approvals (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    crd_name    text        NOT NULL,
    from_digest text        NOT NULL DEFAULT '',
    to_digest   text        NOT NULL,
    to_version  text        NOT NULL DEFAULT '',
    approved_by text        NOT NULL,
    reason      text        NOT NULL DEFAULT '',
    request_id  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL
);
CREATE INDEX crd_approvals_crd_name_id ON crd_approvals (crd_name, id);

CREATE TABLE audit_events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       text        NOT NULL,
    action      text        NOT NULL,
    target_kind text        NOT NULL DEFAULT '',
    target_name text        NOT NULL DEFAULT '',
    result      text        NOT NULL,
    request_id  text        NOT NULL DEFAULT '',
    details     text        NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_events_actor_id ON audit_events (actor, id);
CREATE INDEX audit_events_action_id ON audit_events (action, id);
CREATE INDEX audit_events_target_id ON audit_events (target_kind, target_name, id);
CREATE INDEX audit_events_at ON audit_events (at);

-- +goose Down
DROP TABLE audit_events;
DROP TABLE crd_approvals;
DROP TABLE crd_schemas;
DROP TABLE operator_versions;
DROP TABLE operators;
DROP TABLE clusters;
