-- The CRD history by version and migration notes (store/crdhistory.go, migration 00006).

-- name: CRDSchemaGetByID
SELECT id, name, crd_group, kind, scope, operator_id, version, digest, definition, created_at,
    migration_note, migration_note_url
FROM crd_schemas
WHERE id = $1;

-- name: CRDSchemaGetByDigest
-- $2 is the operator id as text, '' for a revision posted directly (the unique index's key).
SELECT id, name, crd_group, kind, scope, operator_id, version, digest, definition, created_at,
    migration_note, migration_note_url
FROM crd_schemas
WHERE name = $1 AND COALESCE(operator_id::text, '') = $2 AND digest = $3;

-- name: CRDSchemaSetNote
UPDATE crd_schemas SET migration_note = $2, migration_note_url = $3
WHERE id = $1
RETURNING id, name, crd_group, kind, scope, operator_id, version, digest, definition, created_at,
    migration_note, migration_note_url;

-- name: CRDVersionRecordUpsert
INSERT INTO crd_version_records (operator_id, version, recorded_at)
VALUES ($1, $2, $3)
ON CONFLICT (operator_id, version) DO UPDATE SET recorded_at = excluded.recorded_at;

-- name: CRDVersionRevisionsDelete
DELETE FROM crd_version_revisions WHERE operator_id = $1 AND version = $2;

-- name: CRDVersionRevisionInsert
INSERT INTO crd_version_revisions (operator_id, version, crd_name, schema_id)
VALUES ($1, $2, $3, $4);

-- name: CRDVersionList
SELECT r.operator_id, r.version, r.crd_name, r.schema_id, s.digest,
    (s.migration_note <> '' OR s.migration_note_url <> '') AS has_note
FROM crd_version_revisions r
JOIN crd_schemas s ON s.id = r.schema_id
WHERE true /*filters*/
ORDER BY r.operator_id, r.version, r.crd_name

-- name: CRDVersionRecordList
SELECT version FROM crd_version_records WHERE operator_id = $1;

-- name: DeploymentMigrationNotesDelete
DELETE FROM deployment_migration_notes WHERE deployment_id = $1;

-- name: DeploymentMigrationNoteInsert
INSERT INTO deployment_migration_notes (deployment_id, position, crd_name, version, digest, note, url)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: DeploymentMigrationNotesListMany
-- $1 is a JSON array of deployment ids.
SELECT deployment_id, crd_name, version, digest, note, url
FROM deployment_migration_notes
WHERE deployment_id IN (SELECT value::uuid FROM json_array_elements_text($1::json))
ORDER BY deployment_id, position;
