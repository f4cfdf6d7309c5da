-- The search index (issue 6): one row per searchable piece of a trace, with
-- its address and its text lower-cased (so code point offsets are those of
-- the original), kept once per distinct text and indexed by FTS5's trigram
-- tokenizer, so any substring of 3 or more characters is an index lookup; plus a trace's facets (role:,
-- tool:, kind:) and metadata scalars for the filters. Written in the same
-- transaction as the trace; rows go with their trace (ON DELETE CASCADE)
-- and texts no trace uses any more are swept by the deletes.

-- +goose Up
-- Each distinct text once (agents repeat system prompts, tool names and
-- outputs across traces): the full-text index covers these rows only.
CREATE TABLE search_texts (
    id   INTEGER PRIMARY KEY,
    hash BLOB NOT NULL UNIQUE, -- the first 16 bytes of the text's SHA-256
    text TEXT NOT NULL
);
CREATE VIRTUAL TABLE search_fts USING fts5 (
    text, content = 'search_texts', content_rowid = 'id',
    tokenize = 'trigram case_sensitive 1', detail = 'none'
);
-- +goose StatementBegin
CREATE TRIGGER search_texts_insert AFTER INSERT ON search_texts BEGIN
    INSERT INTO search_fts (rowid, text) VALUES (new.id, new.text);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_texts_delete AFTER DELETE ON search_texts BEGIN
    INSERT INTO search_fts (search_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
-- +goose StatementEnd

-- Rows in insertion order (rowid), which is a trace's pieces in order,
-- appended events after. A WITHOUT ROWID table keyed by (trace_id, seq)
-- measured slower to fill.
CREATE TABLE search_pieces (
    trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    address  TEXT NOT NULL,
    text_id  INTEGER NOT NULL -- search_texts.id; texts no piece uses are swept on deletes
);
CREATE INDEX search_pieces_trace ON search_pieces (trace_id);
CREATE INDEX search_pieces_text ON search_pieces (text_id);

CREATE TABLE search_facets (
    facet    TEXT NOT NULL,
    trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    PRIMARY KEY (facet, trace_id)
) WITHOUT ROWID;
CREATE INDEX search_facets_trace ON search_facets (trace_id);

CREATE TABLE search_meta (
    trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    key      TEXT NOT NULL,
    text     TEXT NOT NULL,
    num      REAL
);
-- A prefix of the text: a B-tree entry must stay small, whatever the value.
CREATE INDEX search_meta_text ON search_meta (key, substr(text, 1, 200));
CREATE INDEX search_meta_num ON search_meta (key, num) WHERE num IS NOT NULL;
CREATE INDEX search_meta_trace ON search_meta (trace_id);

-- The version of search.Index the index was built with; Open rebuilds the
-- index when it differs (a database from before this migration has none).
CREATE TABLE search_state (
    version INTEGER NOT NULL
);

-- +goose Down
DROP TABLE search_state;
DROP TABLE search_meta;
DROP TABLE search_facets;
DROP TABLE search_pieces;
DROP TRIGGER search_texts_delete;
DROP TRIGGER search_texts_insert;
DROP TABLE search_fts;
DROP TABLE search_texts;
