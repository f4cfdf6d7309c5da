-- The span builder takes the pending traces longest pending first, a few
-- at a time (ORDER BY since, trace_id LIMIT n): without an index in that
-- order each batch read and sorted every mark, which under OTLP load
-- (thousands of traces pending) was a twentieth of the server's CPU.

-- +goose Up
CREATE INDEX otel_pending_since ON otel_pending (since, trace_id);

-- +goose Down
DROP INDEX otel_pending_since;
