-- Analyses with a real Prometheus (issue 27 §2): reusable analysis templates, the Prometheus each
-- cluster's analyses ask (its secret sealed, AES-256-GCM, by key_id like the cluster
-- credentials), every measurement of a deployment's analyses, and the analyses a deployment was
-- created with (copied from the templates then: a later edit does not change it).

-- +goose Up
CREATE TABLE analysis_templates (
    name       text        PRIMARY KEY,
    spec       json        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE cluster_prometheus (
    cluster_id        uuid        PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
    url               text        NOT NULL,
    auth_kind         text        NOT NULL CHECK (auth_kind IN ('none', 'bearer', 'basic')),
    -- The bearer token or the basic-auth username and password, sealed; NULL for none.
    secret_ciphertext bytea,
    key_id            text        NOT NULL DEFAULT '',
    ca_pem            text        NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL
);

CREATE TABLE analysis_measurements (
    id             bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    deployment_id  uuid             NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    cluster        text             NOT NULL,
    stage_index    integer          NOT NULL,
    analysis_name  text             NOT NULL,
    query          text             NOT NULL,
    value          double precision,
    baseline_value double precision,
    verdict        text             NOT NULL CHECK (verdict IN ('Successful', 'Failed', 'Inconclusive', 'Error')),
    message        text             NOT NULL DEFAULT '',
    measured_at    timestamptz      NOT NULL
);
CREATE INDEX analysis_measurements_deployment ON analysis_measurements (deployment_id, id);

ALTER TABLE deployments ADD COLUMN analyses json;

-- +goose Down
ALTER TABLE deployments DROP COLUMN analyses;
DROP TABLE analysis_measurements;
DROP TABLE cluster_prometheus;
DROP TABLE analysis_templates;
