-- A trace's spans kept to extend it are stored compressed by Lookout (S2)
-- from 256 bytes: PostgreSQL's own compression of values past 2 kB
-- (pglz) found nothing to gain in them, and trying was 2% of its CPU under
-- bench/peers' load. Stored out of line uncompressed, as traces.content is.
-- It applies to rows written from now on.

-- +goose Up
ALTER TABLE otel_span_parts ALTER COLUMN data SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE otel_span_parts ALTER COLUMN data SET STORAGE EXTENDED;
