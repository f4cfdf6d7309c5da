-- What a dataset's dashboard adds up of each trace (issue #20), kept apart
-- from the digest (trace_summaries) in columns so that a dashboard reads
-- neither trace rows (each fills most of a page, ahead of its content's
-- overflow pages) nor the digest's JSON with the first user message:
-- the dataset and the trace's time (its first span's start, else its
-- first event's timestamp, else when it was stored, in microseconds),
-- its duration, tokens, recorded cost, and the digest's small objects
-- (by_model, models, tools, tool_errors, llm_lat) as JSON. Clustered by dataset and
-- time, so that a range is one scan. Triggers on trace_summaries keep it,
-- so every writer of digests keeps it without knowing of it.

-- +goose Up
CREATE TABLE trace_stats (
    dataset_id TEXT NOT NULL,
    at         INTEGER NOT NULL,
    trace_id   TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    dur        INTEGER,
    input      INTEGER NOT NULL,
    output     INTEGER NOT NULL,
    cost       REAL NOT NULL,
    unpriced   INTEGER NOT NULL,
    by_model   TEXT,
    models     TEXT,
    tools      TEXT,
    tool_errors TEXT,
    llm_lat    TEXT,
    PRIMARY KEY (dataset_id, at, trace_id)
) WITHOUT ROWID;
CREATE INDEX trace_stats_trace ON trace_stats (trace_id);

-- +goose StatementBegin
CREATE TRIGGER trace_stats_insert AFTER INSERT ON trace_summaries BEGIN
    INSERT INTO trace_stats (dataset_id, at, trace_id, dur, input, output, cost, unpriced, by_model, models, tools, tool_errors, llm_lat)
    SELECT t.dataset_id,
        COALESCE(json_extract(NEW.summary, '$.span_first'), json_extract(NEW.summary, '$.event_first'), t.created_at),
        NEW.trace_id,
        CASE WHEN json_extract(NEW.summary, '$.span_first') IS NOT NULL THEN json_extract(NEW.summary, '$.span_last') - json_extract(NEW.summary, '$.span_first')
            WHEN json_extract(NEW.summary, '$.event_first') IS NOT NULL THEN json_extract(NEW.summary, '$.event_last') - json_extract(NEW.summary, '$.event_first') END,
        COALESCE(json_extract(NEW.summary, '$.input_tokens'), 0), COALESCE(json_extract(NEW.summary, '$.output_tokens'), 0),
        COALESCE(json_extract(NEW.summary, '$.cost'), 0), COALESCE(json_extract(NEW.summary, '$.unpriced'), 0),
        json_extract(NEW.summary, '$.by_model'), json_extract(NEW.summary, '$.models'), json_extract(NEW.summary, '$.tools'), json_extract(NEW.summary, '$.tool_errors'), json_extract(NEW.summary, '$.llm_lat')
    FROM traces t WHERE t.id = NEW.trace_id AND t.dataset_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trace_stats_update AFTER UPDATE OF summary ON trace_summaries BEGIN
    DELETE FROM trace_stats WHERE trace_id = NEW.trace_id;
    INSERT INTO trace_stats (dataset_id, at, trace_id, dur, input, output, cost, unpriced, by_model, models, tools, tool_errors, llm_lat)
    SELECT t.dataset_id,
        COALESCE(json_extract(NEW.summary, '$.span_first'), json_extract(NEW.summary, '$.event_first'), t.created_at),
        NEW.trace_id,
        CASE WHEN json_extract(NEW.summary, '$.span_first') IS NOT NULL THEN json_extract(NEW.summary, '$.span_last') - json_extract(NEW.summary, '$.span_first')
            WHEN json_extract(NEW.summary, '$.event_first') IS NOT NULL THEN json_extract(NEW.summary, '$.event_last') - json_extract(NEW.summary, '$.event_first') END,
        COALESCE(json_extract(NEW.summary, '$.input_tokens'), 0), COALESCE(json_extract(NEW.summary, '$.output_tokens'), 0),
        COALESCE(json_extract(NEW.summary, '$.cost'), 0), COALESCE(json_extract(NEW.summary, '$.unpriced'), 0),
        json_extract(NEW.summary, '$.by_model'), json_extract(NEW.summary, '$.models'), json_extract(NEW.summary, '$.tools'), json_extract(NEW.summary, '$.tool_errors'), json_extract(NEW.summary, '$.llm_lat')
    FROM traces t WHERE t.id = NEW.trace_id AND t.dataset_id IS NOT NULL;
END;
-- +goose StatementEnd

-- The digests stored before.
INSERT INTO trace_stats (dataset_id, at, trace_id, dur, input, output, cost, unpriced, by_model, models, tools, tool_errors, llm_lat)
SELECT t.dataset_id,
    COALESCE(json_extract(d.summary, '$.span_first'), json_extract(d.summary, '$.event_first'), t.created_at),
    d.trace_id,
    CASE WHEN json_extract(d.summary, '$.span_first') IS NOT NULL THEN json_extract(d.summary, '$.span_last') - json_extract(d.summary, '$.span_first')
        WHEN json_extract(d.summary, '$.event_first') IS NOT NULL THEN json_extract(d.summary, '$.event_last') - json_extract(d.summary, '$.event_first') END,
    COALESCE(json_extract(d.summary, '$.input_tokens'), 0), COALESCE(json_extract(d.summary, '$.output_tokens'), 0),
    COALESCE(json_extract(d.summary, '$.cost'), 0), COALESCE(json_extract(d.summary, '$.unpriced'), 0),
    json_extract(d.summary, '$.by_model'), json_extract(d.summary, '$.models'), json_extract(d.summary, '$.tools'), json_extract(d.summary, '$.tool_errors'), json_extract(d.summary, '$.llm_lat')
FROM trace_summaries d JOIN traces t ON t.id = d.trace_id WHERE t.dataset_id IS NOT NULL;

-- +goose Down
DROP TRIGGER trace_stats_update;
DROP TRIGGER trace_stats_insert;
DROP TABLE trace_stats;
