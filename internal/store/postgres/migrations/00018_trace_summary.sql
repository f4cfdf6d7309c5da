-- A trace's digest for lists (first user message, tool calls, tokens,
-- cost, times: storeutil.EncodeDigest, JSON), written with the trace and
-- brought up to date by appends; a table of its own, as in SQLite (where a
-- column of traces would sit behind the content), so that both backends
-- share their SQL. A trace written before has no row: its digest is
-- computed the first time a list shows it, and stored then
-- (sqlstore.FillDigests).

-- +goose Up
CREATE TABLE trace_summaries (
    trace_id uuid PRIMARY KEY REFERENCES traces (id) ON DELETE CASCADE,
    summary  text NOT NULL
);

-- +goose Down
DROP TABLE trace_summaries;
