-- The search index (issue 6): one row per searchable piece of a trace, with
-- its address and its text lower-cased (so code point offsets are those of
-- the original), kept once per distinct text under a pg_trgm GIN index so
-- that LIKE '%text%' is an index lookup; plus a trace's facets (role:, tool:, kind:) and metadata
-- scalars for the filters. Written in the same transaction as the trace;
-- rows go with their trace (ON DELETE CASCADE)
-- and texts no trace uses any more are swept by the deletes. One row per
-- piece keeps each indexed value small.

-- +goose Up
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Each distinct text once (agents repeat system prompts, tool names and
-- outputs across traces): the trigram index covers these rows only.
CREATE TABLE search_texts (
    id   bigserial PRIMARY KEY,
    hash bytea NOT NULL UNIQUE, -- the first 16 bytes of the text's SHA-256
    text text NOT NULL
);
-- The operator class lives where pg_trgm was installed, which may be
-- another schema than this one.
-- +goose StatementBegin
DO $$
DECLARE trgm text;
BEGIN
    SELECT n.nspname INTO trgm FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    -- fastupdate off: with GIN's pending list on, every LIKE read the
    -- whole list after a bulk load (100 ms and more) until a vacuum.
    EXECUTE format('CREATE INDEX search_texts_text ON search_texts USING gin (text %I.gin_trgm_ops) WITH (fastupdate = off)', trgm);
END $$;
-- +goose StatementEnd

CREATE TABLE search_pieces (
    trace_id uuid NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    seq      integer NOT NULL, -- the piece's place in its trace
    address  text NOT NULL,
    text_id  bigint NOT NULL, -- search_texts.id; texts no piece uses are swept on deletes
    PRIMARY KEY (trace_id, seq)
);
CREATE INDEX search_pieces_text ON search_pieces (text_id);

CREATE TABLE search_facets (
    facet    text NOT NULL,
    trace_id uuid NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    PRIMARY KEY (facet, trace_id)
);
CREATE INDEX search_facets_trace ON search_facets (trace_id);

CREATE TABLE search_meta (
    trace_id uuid NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    key      text NOT NULL,
    text     text NOT NULL,
    num      double precision
);
-- A prefix of the text: a B-tree entry must stay small, whatever the value.
CREATE INDEX search_meta_text ON search_meta (key, substr(text, 1, 200));
CREATE INDEX search_meta_num ON search_meta (key, num) WHERE num IS NOT NULL;
CREATE INDEX search_meta_trace ON search_meta (trace_id);

-- The version of search.Index the index was built with; Open rebuilds the
-- index when it differs (a database from before this migration has none).
CREATE TABLE search_state (
    version integer NOT NULL
);

-- +goose Down
DROP TABLE search_state;
DROP TABLE search_meta;
DROP TABLE search_facets;
DROP TABLE search_pieces;
DROP TABLE search_texts;
