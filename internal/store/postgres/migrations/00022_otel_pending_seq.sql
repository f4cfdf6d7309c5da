-- A mark's number comes from a sequence (issue 22): it used to start at 1
-- for a new mark and count up while the mark stayed, so a build that read
-- a mark, then waited while another builder cleared it and a request
-- marked the trace again, found the number it had read and cleared the new
-- mark with a build that lacked the new spans. Numbers never repeat now.
-- The previous release still writes 1 and seq + 1, as before.

-- +goose Up
CREATE SEQUENCE otel_pending_seq;
SELECT setval('otel_pending_seq', COALESCE((SELECT max(seq) FROM otel_pending), 0) + 1, false);

-- +goose Down
DROP SEQUENCE otel_pending_seq;
