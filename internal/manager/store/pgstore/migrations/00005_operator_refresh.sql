-- Operators that keep moving (issue 19 §1): a chart version that disappeared from its source or
-- fell outside the version filter is marked removed (removed_at, removed_reason), never deleted;
-- a deleted operator keeps its row with deleted_at set, so its deployments, audit records and CRD
-- revisions stay readable; and the refresh loop's record per operator: the source it last read,
-- the index's validators for conditional requests (ETag, Last-Modified), when it last ran and
-- succeeded, when it runs next, the last error and how many refreshes failed in a row.

-- +goose Up
ALTER TABLE operators ADD COLUMN deleted_at timestamptz;
ALTER TABLE operator_versions ADD COLUMN removed_at timestamptz;
ALTER TABLE operator_versions ADD COLUMN removed_reason text NOT NULL DEFAULT '';

CREATE TABLE operator_refresh (
    operator_id   uuid        PRIMARY KEY REFERENCES operators (id) ON DELETE CASCADE,
    source        text        NOT NULL,
    etag          text        NOT NULL DEFAULT '',
    last_modified text        NOT NULL DEFAULT '',
    checked_at    timestamptz NOT NULL,
    succeeded_at  timestamptz,
    next_at       timestamptz NOT NULL,
    error         text        NOT NULL DEFAULT '',
    failures      integer     NOT NULL DEFAULT 0
);
-- The loop's question: which operators are due.
CREATE INDEX operator_refresh_next_at ON operator_refresh (next_at);

-- +goose Down
DROP TABLE operator_refresh;
ALTER TABLE operator_versions DROP COLUMN removed_reason;
ALTER TABLE operator_versions DROP COLUMN removed_at;
ALTER TABLE operators DROP COLUMN deleted_at;
