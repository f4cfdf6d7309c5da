-- OpenTelemetry ingest (issue 8): traces whose spans were accepted but not
-- yet built. A receiver stores spans and marks their trace; the trace is
-- built once its spans stop coming, so a trace sent in many requests is
-- built once rather than on every request. The marks outlive a restart.

-- +goose Up
CREATE TABLE otel_pending (
    trace_id      uuid PRIMARY KEY REFERENCES traces (id) ON DELETE CASCADE,
    dataset_id    uuid NOT NULL,
    otel_trace_id text NOT NULL,
    since         timestamptz NOT NULL, -- marked pending then
    touched       timestamptz NOT NULL, -- its last spans came then
    seq           bigint NOT NULL,      -- bumped by every request: a build clears the mark only if unchanged
    fresh         boolean NOT NULL      -- never built, so it has no index rows
);
CREATE INDEX otel_pending_dataset ON otel_pending (dataset_id);

-- +goose Down
DROP TABLE otel_pending;
