-- The search index (issue 6): one row per searchable piece of a trace, with
-- its address and its text lower-cased (so code point offsets are those of
-- the original), under a pg_trgm GIN index so that LIKE '%text%' is an
-- index lookup; plus a trace's facets (role:, tool:, kind:) and metadata
-- scalars for the filters. Written in the same transaction as the trace;
-- rows go with their trace (ON DELETE CASCADE). One row per piece keeps
-- each indexed value small.

-- +goose Up
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE search_pieces (
    id       bigserial PRIMARY KEY,
    trace_id uuid NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    address  text NOT NULL,
    text     text NOT NULL
);
CREATE INDEX search_pieces_trace ON search_pieces (trace_id);
-- The operator class lives where pg_trgm was installed, which may be
-- another schema than this one.
-- +goose StatementBegin
DO $$
DECLARE trgm text;
BEGIN
    SELECT n.nspname INTO trgm FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    EXECUTE format('CREATE INDEX search_pieces_text ON search_pieces USING gin (text %I.gin_trgm_ops)', trgm);
END $$;
-- +goose StatementEnd

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
