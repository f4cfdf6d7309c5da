-- The search index (issue 6): one row per searchable piece of a trace, with
-- its address, its text lower-cased (so code point offsets are those of the
-- original) and indexed by FTS5's trigram tokenizer, so any substring of 3
-- or more characters is an index lookup; plus a trace's facets (role:,
-- tool:, kind:) and metadata scalars for the filters. Written in the same
-- transaction as the trace; rows go with their trace (ON DELETE CASCADE,
-- whose deletes fire the trigger that keeps FTS5 in step).

-- +goose Up
CREATE TABLE search_pieces (
    id       INTEGER PRIMARY KEY,
    trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    address  TEXT NOT NULL,
    text     TEXT NOT NULL
);
CREATE INDEX search_pieces_trace ON search_pieces (trace_id);

CREATE VIRTUAL TABLE search_fts USING fts5 (
    text, content = 'search_pieces', content_rowid = 'id',
    tokenize = 'trigram case_sensitive 1', detail = 'none'
);
-- +goose StatementBegin
CREATE TRIGGER search_pieces_insert AFTER INSERT ON search_pieces BEGIN
    INSERT INTO search_fts (rowid, text) VALUES (new.id, new.text);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER search_pieces_delete AFTER DELETE ON search_pieces BEGIN
    INSERT INTO search_fts (search_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
-- +goose StatementEnd

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
DROP TRIGGER search_pieces_delete;
DROP TRIGGER search_pieces_insert;
DROP TABLE search_fts;
DROP TABLE search_pieces;
