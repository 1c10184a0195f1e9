-- Pause and resume (POST /api/v1/deployments/{id}/pause, /resume): who paused a deployment, when,
-- and why. A paused deployment starts no new cluster step on any replica (the engine reads these
-- columns at every step); NULL paused_at: not paused. A deployment that ends is not paused.
-- Times are TEXT in sqlstore.TimeLayout.

-- +goose Up
ALTER TABLE deployments ADD COLUMN paused_at TEXT;
ALTER TABLE deployments ADD COLUMN paused_by TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN pause_reason TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE deployments DROP COLUMN pause_reason;
ALTER TABLE deployments DROP COLUMN paused_by;
ALTER TABLE deployments DROP COLUMN paused_at;
