-- The gateway's conversations (issue 18): a trace that grows one model or
-- tool call at a time, found again by its head, a hash of its events so
-- far. The row goes with its trace.

-- +goose Up
CREATE TABLE conversations (
    trace_id   TEXT PRIMARY KEY REFERENCES traces (id) ON DELETE CASCADE,
    dataset_id TEXT NOT NULL,
    head       TEXT NOT NULL,
    events     INTEGER NOT NULL, -- the trace's event count
    updated_at INTEGER NOT NULL  -- µs: last recorded then
) WITHOUT ROWID;
CREATE INDEX conversations_head ON conversations (dataset_id, head);

-- +goose Down
DROP TABLE conversations;
