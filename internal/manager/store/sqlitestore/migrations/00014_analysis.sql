-- Analyses with a real Prometheus (issue 27 §2): reusable analysis templates, the Prometheus each
-- cluster's analyses ask (its secret sealed, AES-256-GCM, by key_id like the cluster
-- credentials), every measurement of a deployment's analyses, and the analyses a deployment was
-- created with (copied from the templates then: a later edit does not change it).
-- Times are TEXT in sqlstore.TimeLayout; JSON is TEXT.

-- +goose Up
CREATE TABLE analysis_templates (
    name       TEXT PRIMARY KEY,
    spec       TEXT NOT NULL CHECK (json_valid(spec)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE cluster_prometheus (
    cluster_id        TEXT PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
    url               TEXT NOT NULL,
    auth_kind         TEXT NOT NULL CHECK (auth_kind IN ('none', 'bearer', 'basic')),
    -- The bearer token or the basic-auth username and password, sealed; NULL for none.
    secret_ciphertext BLOB,
    key_id            TEXT NOT NULL DEFAULT '',
    ca_pem            TEXT NOT NULL DEFAULT '',
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
) STRICT;

CREATE TABLE analysis_measurements (
    id             INTEGER PRIMARY KEY,
    deployment_id  TEXT    NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    cluster        TEXT    NOT NULL,
    stage_index    INTEGER NOT NULL,
    analysis_name  TEXT    NOT NULL,
    query          TEXT    NOT NULL,
    value          REAL,
    baseline_value REAL,
    verdict        TEXT    NOT NULL CHECK (verdict IN ('Successful', 'Failed', 'Inconclusive', 'Error')),
    message        TEXT    NOT NULL DEFAULT '',
    measured_at    TEXT    NOT NULL
) STRICT;
CREATE INDEX analysis_measurements_deployment ON analysis_measurements (deployment_id, id);

ALTER TABLE deployments ADD COLUMN analyses TEXT CHECK (json_valid(analyses));

-- +goose Down
ALTER TABLE deployments DROP COLUMN analyses;
DROP TABLE analysis_measurements;
DROP TABLE cluster_prometheus;
DROP TABLE analysis_templates;
