-- CRD history by version (issue 19): which revision of each CRD every operator version ships, so
-- that a version re-shipping an older definition (A → B → A) or dropping a CRD reads right; a
-- migration note on each revision; the notes a deployment's approvals show.
--
-- crd_schemas stays de-duplicated by (CRD, source, digest): several versions point at one
-- revision through crd_version_revisions (one row per operator version and CRD it ships).
-- crd_version_records lists the versions whose rows are complete (recorded at registration or
-- refresh from this migration on): such a version ships no CRD it has no row for.
--
-- Existing data: the old history stored a revision only when a CRD changed, labelled with the
-- version that registered it. Each such revision is mapped to that version (when the operator
-- still has it); those versions get no record row, since their list is incomplete. The manager
-- reads a version without a record as before: a CRD it has no row for is the newest revision at
-- or below it.

-- +goose Up
ALTER TABLE crd_schemas ADD COLUMN migration_note text NOT NULL DEFAULT '';
ALTER TABLE crd_schemas ADD COLUMN migration_note_url text NOT NULL DEFAULT '';

CREATE TABLE crd_version_records (
    operator_id uuid        NOT NULL,
    version     text        NOT NULL,
    recorded_at timestamptz NOT NULL,
    PRIMARY KEY (operator_id, version),
    FOREIGN KEY (operator_id, version) REFERENCES operator_versions (operator_id, version) ON DELETE CASCADE
);

CREATE TABLE crd_version_revisions (
    operator_id uuid   NOT NULL,
    version     text   NOT NULL,
    crd_name    text   NOT NULL,
    schema_id   bigint NOT NULL REFERENCES crd_schemas (id) ON DELETE CASCADE,
    PRIMARY KEY (operator_id, version, crd_name),
    FOREIGN KEY (operator_id, version) REFERENCES operator_versions (operator_id, version) ON DELETE CASCADE
);
CREATE INDEX crd_version_revisions_crd_name ON crd_version_revisions (crd_name, operator_id);
CREATE INDEX crd_version_revisions_schema_id ON crd_version_revisions (schema_id);

INSERT INTO crd_version_revisions (operator_id, version, crd_name, schema_id)
SELECT s.operator_id, s.version, s.name, min(s.id)
FROM crd_schemas s
JOIN operator_versions v ON v.operator_id = s.operator_id AND v.version = s.version
GROUP BY s.operator_id, s.version, s.name;

-- A snapshot, not a reference: the approvals show the notes as planning found them.
CREATE TABLE deployment_migration_notes (
    deployment_id uuid    NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    position      integer NOT NULL,
    crd_name      text    NOT NULL,
    version       text    NOT NULL,
    digest        text    NOT NULL,
    note          text    NOT NULL DEFAULT '',
    url           text    NOT NULL DEFAULT '',
    PRIMARY KEY (deployment_id, position)
);

-- +goose Down
DROP TABLE deployment_migration_notes;
DROP TABLE crd_version_revisions;
DROP TABLE crd_version_records;
ALTER TABLE crd_schemas DROP COLUMN migration_note_url;
ALTER TABLE crd_schemas DROP COLUMN migration_note;
