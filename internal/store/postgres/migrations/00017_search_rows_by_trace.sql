-- A trace's facet and metadata rows are found by what its search_traces
-- row lists (its facets, the ids of its search_meta rows), not by indexes
-- on trace_id: those were entered at a random place for every row, the
-- largest part of the cost of the rows (issue 17, bench/ingest). The
-- index is rebuilt (search_state emptied: the next start queues every
-- trace).

-- +goose Up
TRUNCATE search_traces, search_facets, search_meta, search_texts;
DELETE FROM search_state;
ALTER TABLE search_traces
    ADD COLUMN facets text[] NOT NULL,
    ADD COLUMN metas bigint[] NOT NULL;
DROP INDEX search_facets_trace;
DROP INDEX search_meta_trace;
CREATE SEQUENCE search_meta_id_seq;
ALTER TABLE search_meta ADD COLUMN id bigint PRIMARY KEY;

-- +goose Down
TRUNCATE search_traces, search_facets, search_meta, search_texts;
DELETE FROM search_state;
ALTER TABLE search_meta DROP COLUMN id;
DROP SEQUENCE search_meta_id_seq;
CREATE INDEX search_meta_trace ON search_meta (trace_id);
CREATE INDEX search_facets_trace ON search_facets (trace_id);
ALTER TABLE search_traces DROP COLUMN facets, DROP COLUMN metas;
