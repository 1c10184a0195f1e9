-- The manager's first schema: clusters, operators and their versions, CRD revisions and
-- approvals, the audit log. Part 2 adds deployments in later files. Times are TEXT in
-- sqlstore.TimeLayout (UTC, fixed-width microseconds), so text order is time order.

-- +goose Up
CREATE TABLE clusters (
    id                    TEXT    PRIMARY KEY,
    name                  TEXT    NOT NULL UNIQUE,
    environment           TEXT    NOT NULL CHECK (environment IN ('Dev', 'Staging', 'Production')),
    kubernetes_version    TEXT    NOT NULL DEFAULT '',
    health                TEXT    NOT NULL DEFAULT 'Unknown' CHECK (health IN ('Unknown', 'Healthy', 'Unhealthy')),
    health_reason         TEXT    NOT NULL DEFAULT '',
    health_checked_at     TEXT,
    kubeconfig_ciphertext BLOB    NOT NULL,
    token_ciphertext      BLOB,
    token_expires_at      TEXT,
    key_id                TEXT    NOT NULL,
    created_at            TEXT    NOT NULL,
    updated_at            TEXT    NOT NULL
) STRICT;
CREATE INDEX clusters_environment_name ON clusters (environment, name);
CREATE INDEX clusters_health_name ON clusters (health, name);

CREATE TABLE operators (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL UNIQUE,
    namespace        TEXT NOT NULL,
    chart_repository TEXT NOT NULL,
    chart_name       TEXT NOT NULL,
    version_filter   TEXT NOT NULL DEFAULT '',
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
) STRICT;
CREATE INDEX operators_namespace_name ON operators (namespace, name);

CREATE TABLE operator_versions (
    operator_id TEXT NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    version     TEXT NOT NULL,
    app_version TEXT NOT NULL DEFAULT '',
    digest      TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    PRIMARY KEY (operator_id, version)
) STRICT;

CREATE TABLE crd_schemas (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL,
    crd_group   TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    scope       TEXT    NOT NULL,
    operator_id TEXT    REFERENCES operators (id) ON DELETE CASCADE,
    version     TEXT    NOT NULL DEFAULT '',
    digest      TEXT    NOT NULL,
    definition  BLOB    NOT NULL,
    created_at  TEXT    NOT NULL
) STRICT;
-- One revision per (CRD, source, digest); a definition posted directly has no operator.
CREATE UNIQUE INDEX crd_schemas_source_digest ON crd_schemas (name, COALESCE(operator_id, ''), digest);
CREATE INDEX crd_schemas_name_id ON crd_schemas (name, id);
CREATE INDEX crd_schemas_operator_id ON crd_schemas (operator_id) WHERE operator_id IS NOT NULL;

CREATE TABLE crd_approvals (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    crd_name    TEXT    NOT NULL,
    from_digest TEXT    NOT NULL DEFAULT '',
    to_digest   TEXT    NOT NULL,
    to_version  TEXT    NOT NULL DEFAULT '',
    approved_by TEXT    NOT NULL,
    reason      TEXT    NOT NULL DEFAULT '',
    request_id  TEXT    NOT NULL DEFAULT '',
    created_at  TEXT    NOT NULL
) STRICT;
CREATE INDEX crd_approvals_crd_name_id ON crd_approvals (crd_name, id);

CREATE TABLE audit_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    target_kind TEXT    NOT NULL DEFAULT '',
    target_name TEXT    NOT NULL DEFAULT '',
    result      TEXT    NOT NULL,
    request_id  TEXT    NOT NULL DEFAULT '',
    details     TEXT    NOT NULL DEFAULT '{}'
) STRICT;
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
