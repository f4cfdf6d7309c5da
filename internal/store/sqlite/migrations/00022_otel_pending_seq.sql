-- A mark's number comes from a counter (issue 22), as in PostgreSQL's
-- 00022: it used to start at 1 for a new mark and count up while the mark
-- stayed, so a build that read a mark, then waited while another build
-- cleared it and a request marked the trace again, found the number it
-- had read and cleared the new mark with a build that lacked the new
-- spans. Numbers never repeat now. The previous release still writes 1
-- and seq + 1, as before.

-- +goose Up
CREATE TABLE otel_pending_seq (n INTEGER NOT NULL);
INSERT INTO otel_pending_seq (n) SELECT COALESCE(MAX(seq), 0) FROM otel_pending;

-- +goose Down
DROP TABLE otel_pending_seq;
