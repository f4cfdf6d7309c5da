-- The search index is written apart from the traces (issue 17): a trace's
-- write queues the trace here, in the same transaction, and a background
-- indexer indexes what is queued in large batches and removes it, in one
-- transaction. The index rows lose their foreign keys: a trace's delete
-- queues it, and the indexer removes its rows (every search joins traces,
-- so rows of a deleted trace are never seen meanwhile).

-- +goose Up
CREATE TABLE search_queue (
    seq        bigserial PRIMARY KEY,
    trace_id   uuid NOT NULL,
    dataset_id uuid, -- NULL: a trace outside any dataset
    queued_at  timestamptz NOT NULL
);
-- A search indexes its dataset's queued traces itself before it answers.
CREATE INDEX search_queue_dataset ON search_queue (dataset_id, seq);
ALTER TABLE search_pieces DROP CONSTRAINT IF EXISTS search_pieces_trace_id_fkey;
ALTER TABLE search_facets DROP CONSTRAINT IF EXISTS search_facets_trace_id_fkey;
ALTER TABLE search_meta DROP CONSTRAINT IF EXISTS search_meta_trace_id_fkey;

-- +goose Down
DROP TABLE search_queue;
DELETE FROM search_facets f WHERE NOT EXISTS (SELECT 1 FROM traces t WHERE t.id = f.trace_id);
DELETE FROM search_meta m WHERE NOT EXISTS (SELECT 1 FROM traces t WHERE t.id = m.trace_id);
DELETE FROM search_pieces p WHERE NOT EXISTS (SELECT 1 FROM traces t WHERE t.id = p.trace_id);
ALTER TABLE search_pieces ADD FOREIGN KEY (trace_id) REFERENCES traces (id) ON DELETE CASCADE;
ALTER TABLE search_facets ADD FOREIGN KEY (trace_id) REFERENCES traces (id) ON DELETE CASCADE;
ALTER TABLE search_meta ADD FOREIGN KEY (trace_id) REFERENCES traces (id) ON DELETE CASCADE;
