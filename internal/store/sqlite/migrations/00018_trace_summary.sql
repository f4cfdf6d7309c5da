-- A trace's digest for lists (first user message, tool calls, tokens,
-- cost, times: storeutil.EncodeDigest, JSON), written with the trace and
-- brought up to date by appends. A table of its own rather than a column of
-- traces: a column added to traces would come after content, and reading
-- it would walk the content's overflow pages, which a list must not read.
-- A trace written before has no row: its digest is computed the first time
-- a list shows it, and stored then (sqlstore.FillDigests).

-- +goose Up
CREATE TABLE trace_summaries (
    trace_id TEXT PRIMARY KEY REFERENCES traces (id) ON DELETE CASCADE,
    summary  TEXT NOT NULL
) WITHOUT ROWID;

-- +goose Down
DROP TABLE trace_summaries;
