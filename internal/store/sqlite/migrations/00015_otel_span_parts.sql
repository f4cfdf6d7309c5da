-- Spans in parts (the write-path issue): a row per trace and request, its
-- spans packed (span_id ''), instead of a row per span. Parts are read in
-- id order, a later span replacing an earlier one of the same id. The spans
-- stored before become parts of one span each.

-- +goose Up
CREATE TABLE otel_span_parts (
    id       INTEGER PRIMARY KEY,
    trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    span_id  TEXT NOT NULL, -- '': data packs several spans
    data     BLOB NOT NULL
);
CREATE INDEX otel_span_parts_trace ON otel_span_parts (trace_id, id);
INSERT INTO otel_span_parts (trace_id, span_id, data) SELECT trace_id, span_id, data FROM otel_spans ORDER BY trace_id, span_id;
DROP TABLE otel_spans;

-- +goose Down
-- Packed parts cannot be unpacked here: their traces keep what was built
-- of them, but a release before this one rebuilds them from single spans
-- only.
CREATE TABLE otel_spans (
    trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    span_id  TEXT NOT NULL,
    data     BLOB NOT NULL,
    PRIMARY KEY (trace_id, span_id)
) WITHOUT ROWID;
INSERT OR REPLACE INTO otel_spans (trace_id, span_id, data) SELECT trace_id, span_id, data FROM otel_span_parts WHERE span_id <> '' ORDER BY id;
DROP TABLE otel_span_parts;
