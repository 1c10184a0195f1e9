-- Operators that keep moving (issue 19 §1): a chart version that disappeared from its source or
-- fell outside the version filter is marked removed (removed_at, removed_reason), never deleted;
-- a deleted operator keeps its row with deleted_at set, so its deployments, audit records and CRD
-- revisions stay readable; and the refresh loop's record per operator: the source it last read,
-- the index's validators for conditional requests (ETag, Last-Modified), when it last ran and
-- succeeded, when it runs next, the last error and how many refreshes failed in a row.
-- Times are TEXT in sqlstore.TimeLayout.

-- +goose Up
ALTER TABLE operators ADD COLUMN deleted_at TEXT;
ALTER TABLE operator_versions ADD COLUMN removed_at TEXT;
ALTER TABLE operator_versions ADD COLUMN removed_reason TEXT NOT NULL DEFAULT '';

CREATE TABLE operator_refresh (
    operator_id   TEXT    PRIMARY KEY REFERENCES operators (id) ON DELETE CASCADE,
    source        TEXT    NOT NULL,
    etag          TEXT    NOT NULL DEFAULT '',
    last_modified TEXT    NOT NULL DEFAULT '',
    checked_at    TEXT    NOT NULL,
    succeeded_at  TEXT,
    next_at       TEXT    NOT NULL,
    error         TEXT    NOT NULL DEFAULT '',
    failures      INTEGER NOT NULL DEFAULT 0
) STRICT;
-- The loop's question: which operators are due.
CREATE INDEX operator_refresh_next_at ON operator_refresh (next_at);

-- +goose Down
DROP TABLE operator_refresh;
ALTER TABLE operator_versions DROP COLUMN removed_reason;
ALTER TABLE operator_versions DROP COLUMN removed_at;
ALTER TABLE operators DROP COLUMN deleted_at;
