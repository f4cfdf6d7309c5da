-- OpenTelemetry ingest (issue 8): a trace received as spans over several
-- OTLP requests keeps its spans, so that it is rebuilt from all of them as
-- more arrive.

-- +goose Up
-- The stored trace of each OpenTelemetry trace id, per dataset.
CREATE TABLE otel_traces (
    dataset_id    TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    otel_trace_id TEXT NOT NULL, -- 32 lowercase hex digits
    trace_id      TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    PRIMARY KEY (dataset_id, otel_trace_id)
) WITHOUT ROWID;
CREATE INDEX otel_traces_trace ON otel_traces (trace_id);
-- The spans received so far (internal/formats/otlp.AppendBinary); a span
-- sent again replaces the one before.
CREATE TABLE otel_spans (
    trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    span_id  TEXT NOT NULL,
    data     BLOB NOT NULL,
    PRIMARY KEY (trace_id, span_id)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE otel_spans;
DROP TABLE otel_traces;
