-- The bake window of a deployment (POST /api/v1/deployments' bakeWindow, else the manager's
-- --bake-window when it was requested), in milliseconds so that fractions of a second as the
-- request's ISO 8601 periods allow them are kept. Deployments stored before this migration get
-- the shipped default, 15 minutes.

-- +goose Up
ALTER TABLE deployments ADD COLUMN bake_window_ms bigint NOT NULL DEFAULT 900000;

-- +goose Down
ALTER TABLE deployments DROP COLUMN bake_window_ms;
