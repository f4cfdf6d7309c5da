-- The search index leaves the main file (issue 17): it is derived data,
-- kept in a database file of its own beside this one (`<file>-search`,
-- with its own writer lock) and written by a background indexer, so that
-- trace writes and index writes never wait for each other. A trace's write
-- queues the trace here, in the same transaction; the indexer indexes
-- what is queued and then removes it. The index is rebuilt from the queue
-- on the first start after this migration.

-- +goose Up
DROP TRIGGER search_texts_delete;
DROP TRIGGER search_texts_insert;
DROP TABLE search_fts;
DROP TABLE search_texts;
DROP TABLE search_pieces;
DROP TABLE search_facets;
DROP TABLE search_meta;
DROP TABLE search_state;

-- AUTOINCREMENT: a seq is never given twice, even once the queue emptied
-- (a search waits for the rows up to the newest seq it saw).
CREATE TABLE search_queue (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id   TEXT NOT NULL,
    dataset_id TEXT, -- NULL: a trace outside any dataset
    queued_at  INTEGER NOT NULL -- Unix microseconds
);
-- A search indexes its dataset's queued traces itself before it answers.
CREATE INDEX search_queue_dataset ON search_queue (dataset_id, seq);

-- +goose Down
-- An older Lookout finds no search tables and no search_state here: it
-- cannot rebuild them (its migration 00006 is applied), so going down
-- recreates them empty, and its Open rebuilds the index (no search_state).
DROP TABLE search_queue;
CREATE TABLE search_texts (id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, text TEXT NOT NULL);
CREATE VIRTUAL TABLE search_fts USING fts5 (text, content = 'search_texts', content_rowid = 'id', tokenize = 'trigram case_sensitive 1', detail = 'none');
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
CREATE TABLE search_pieces (trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE, address TEXT NOT NULL, text_id INTEGER NOT NULL);
CREATE INDEX search_pieces_trace ON search_pieces (trace_id);
CREATE INDEX search_pieces_text ON search_pieces (text_id);
CREATE TABLE search_facets (facet TEXT NOT NULL, trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE, PRIMARY KEY (facet, trace_id)) WITHOUT ROWID;
CREATE INDEX search_facets_trace ON search_facets (trace_id);
CREATE TABLE search_meta (trace_id TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE, key TEXT NOT NULL, text TEXT NOT NULL, num REAL);
CREATE INDEX search_meta_text ON search_meta (key, substr(text, 1, 200));
CREATE INDEX search_meta_num ON search_meta (key, num) WHERE num IS NOT NULL;
CREATE INDEX search_meta_trace ON search_meta (trace_id);
CREATE TABLE search_state (version INTEGER NOT NULL);
