-- An operator's chart source credentials and default values (store/operatorconfig.go, migration
-- 00010).

-- name: OperatorConfigGet
SELECT id, credentials_ciphertext, credentials_key_id, default_values
FROM operators
WHERE id = $1;

-- name: OperatorConfigSet
-- $1 id, $2 sealed credentials (NULL for none), $3 key id, $4 default values (NULL for none), $5 now.
UPDATE operators
SET credentials_ciphertext = $2, credentials_key_id = $3, default_values = $4, updated_at = $5
WHERE id = $1
RETURNING id, credentials_ciphertext, credentials_key_id, default_values;

-- name: OperatorConfigListSealed
-- Every operator with sealed credentials, deleted ones too (key rotation re-seals them all).
SELECT id, credentials_ciphertext, credentials_key_id, default_values
FROM operators
WHERE credentials_ciphertext IS NOT NULL
ORDER BY id;
