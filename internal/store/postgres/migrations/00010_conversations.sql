-- The gateway's conversations (issue 18): a trace that grows one model or
-- tool call at a time, found again by its head, a hash of its events so
-- far. The row goes with its trace.

-- +goose Up
CREATE TABLE conversations (
    trace_id   uuid PRIMARY KEY REFERENCES traces (id) ON DELETE CASCADE,
    dataset_id uuid NOT NULL,
    head       text NOT NULL,
    events     integer NOT NULL,    -- the trace's event count
    updated_at timestamptz NOT NULL -- last recorded then
);
CREATE INDEX conversations_head ON conversations (dataset_id, head);

-- +goose Down
DROP TABLE conversations;
