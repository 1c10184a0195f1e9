-- One trace per deployment: the W3C trace context (traceparent, and tracestate after a newline
-- when there is one) of the request that created the deployment. Every step's operator.deploy
-- span is its child. NULL when the request carried no sampled span (or for older rows).

-- +goose Up
ALTER TABLE deployments ADD COLUMN trace_context TEXT;

-- +goose Down
ALTER TABLE deployments DROP COLUMN trace_context;
