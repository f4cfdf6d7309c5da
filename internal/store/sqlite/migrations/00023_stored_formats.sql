-- The forms in which this release writes stored data that earlier
-- releases may not read, a version a form (issue 17). A release reads the
-- versions up to the one it knows and refuses to open a database that
-- holds a later one, instead of failing on its rows one by one.
-- Version 2 of otel_span_parts: a trace's spans may be stored packed and
-- compressed with S2 (span_id ':s2'). The release before this migration
-- reads such parts and writes none; this one writes them.

-- +goose Up
CREATE TABLE stored_formats (name TEXT PRIMARY KEY, version INTEGER NOT NULL);
INSERT INTO stored_formats (name, version) VALUES ('otel_span_parts', 2);

-- +goose Down
DROP TABLE stored_formats;
