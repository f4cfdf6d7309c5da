-- The search index keeps a row per trace (issue 17): the ids of its texts
-- in a GIN-indexed array, instead of a row per piece. Where in a trace a
-- text occurs is found at query time in the trace's stored content. The
-- index is rebuilt (search_state emptied: the next start queues every
-- trace).

-- +goose Up
DROP TABLE search_pieces;
CREATE TABLE search_traces (
    trace_id uuid PRIMARY KEY,
    texts    bigint[] NOT NULL -- search_texts ids, each once, in order of first occurrence
);
CREATE INDEX search_traces_texts ON search_traces USING gin (texts);
DELETE FROM search_state;

-- +goose Down
DROP TABLE search_traces;
CREATE TABLE search_pieces (
    trace_id uuid NOT NULL,
    seq      integer NOT NULL,
    address  text NOT NULL,
    text_id  bigint NOT NULL,
    PRIMARY KEY (trace_id, seq)
);
CREATE INDEX search_pieces_text ON search_pieces (text_id);
DELETE FROM search_state;
