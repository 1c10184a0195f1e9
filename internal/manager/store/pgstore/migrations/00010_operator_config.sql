-- Operators of private chart sources and with default values (issue 19 §1): the chart source's
-- credentials sealed (AES-256-GCM) by key_id, NULL for an anonymous source; and the operator's
-- default Helm values (a JSON object merged under each deployment's values), NULL for none.

-- +goose Up
ALTER TABLE operators ADD COLUMN credentials_ciphertext bytea;
ALTER TABLE operators ADD COLUMN credentials_key_id text NOT NULL DEFAULT '';
ALTER TABLE operators ADD COLUMN default_values json;

-- +goose Down
ALTER TABLE operators DROP COLUMN default_values;
ALTER TABLE operators DROP COLUMN credentials_key_id;
ALTER TABLE operators DROP COLUMN credentials_ciphertext;
