-- Pause and resume (POST /api/v1/deployments/{id}/pause, /resume): who paused a deployment, when,
-- and why. A paused deployment starts no new cluster step on any replica (the engine reads these
-- columns at every step); NULL paused_at: not paused. A deployment that ends is not paused.

-- +goose Up
ALTER TABLE deployments ADD COLUMN paused_at timestamptz;
ALTER TABLE deployments ADD COLUMN paused_by text NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN pause_reason text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE deployments DROP COLUMN pause_reason;
ALTER TABLE deployments DROP COLUMN paused_by;
ALTER TABLE deployments DROP COLUMN paused_at;
