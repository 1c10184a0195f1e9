-- Analysis templates, clusters' Prometheus configs and analysis measurements
-- (store/analysis.go, migration 00014).

-- name: AnalysisTemplateCreate
INSERT INTO analysis_templates (name, spec, created_at, updated_at)
VALUES ($1, $2, $3, $4)
RETURNING name, spec, created_at, updated_at;

-- name: AnalysisTemplateGet
SELECT name, spec, created_at, updated_at
FROM analysis_templates
WHERE name = $1;

-- name: AnalysisTemplateList
SELECT name, spec, created_at, updated_at
FROM analysis_templates
WHERE true /*filters*/
ORDER BY name

-- name: AnalysisTemplateUpdate
UPDATE analysis_templates
SET spec = $2, updated_at = $3
WHERE name = $1
RETURNING name, spec, created_at, updated_at;

-- name: AnalysisTemplateDelete
DELETE FROM analysis_templates
WHERE name = $1
RETURNING name;

-- name: ClusterPrometheusSet
-- $1 cluster name, $2 url, $3 auth kind, $4 sealed secret (NULL for none), $5 key id, $6 CA,
-- $7 now. No row when the cluster is not registered.
INSERT INTO cluster_prometheus (cluster_id, url, auth_kind, secret_ciphertext, key_id, ca_pem, created_at, updated_at)
SELECT id, $2::text, $3::text, $4::bytea, $5::text, $6::text, $7::timestamptz, $7::timestamptz
FROM clusters
WHERE name = $1
ON CONFLICT (cluster_id) DO UPDATE
SET url = excluded.url, auth_kind = excluded.auth_kind, secret_ciphertext = excluded.secret_ciphertext,
    key_id = excluded.key_id, ca_pem = excluded.ca_pem, updated_at = excluded.updated_at
RETURNING cluster_id, url, auth_kind, secret_ciphertext, key_id, ca_pem, created_at, updated_at;

-- name: ClusterPrometheusGet
SELECT p.cluster_id, c.name, p.url, p.auth_kind, p.secret_ciphertext, p.key_id, p.ca_pem, p.created_at, p.updated_at
FROM cluster_prometheus p
JOIN clusters c ON c.id = p.cluster_id
WHERE c.name = $1;

-- name: ClusterPrometheusDelete
DELETE FROM cluster_prometheus
WHERE cluster_id = (SELECT id FROM clusters WHERE name = $1)
RETURNING cluster_id;

-- name: ClusterPrometheusListSealed
SELECT p.cluster_id, c.name, p.url, p.auth_kind, p.secret_ciphertext, p.key_id, p.ca_pem, p.created_at, p.updated_at
FROM cluster_prometheus p
JOIN clusters c ON c.id = p.cluster_id
WHERE p.secret_ciphertext IS NOT NULL
ORDER BY c.name;

-- name: AnalysisMeasurementInsert
INSERT INTO analysis_measurements (deployment_id, cluster, stage_index, analysis_name, query, value,
    baseline_value, verdict, message, measured_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING id;

-- name: AnalysisMeasurementList
SELECT id, deployment_id, cluster, stage_index, analysis_name, query, value, baseline_value, verdict,
    message, measured_at
FROM analysis_measurements
WHERE deployment_id = $1
ORDER BY id;
