-- Sorting a trace list (issue 20): the values a list sorts by, as columns
-- of trace_summaries with the trace's dataset and index, so that a sorted
-- page is a range of an index (dataset, key, index) rather than a decoding
-- of every digest of the dataset. They are written with the digest
-- (storeutil.KeysOf); -1 is a value the trace does not have. violations
-- counts the trace's policy results (annotations with source 'analyzer'),
-- kept by the triggers below so that every way annotations are written or
-- removed keeps it. score_keys holds each trace's score on a criterion
-- (the mean of its current scores, true 1 and false 0), kept by the store
-- when scores are added or removed (sqlstore.refreshScoreKeys).
-- Rows written before get their keys from their digest here; the cost of
-- such a row is the recorded cost only (the estimate of unpriced tokens
-- comes with the next write of its digest).

-- +goose Up
ALTER TABLE trace_summaries ADD COLUMN dataset_id TEXT;
ALTER TABLE trace_summaries ADD COLUMN idx INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trace_summaries ADD COLUMN duration_ms REAL NOT NULL DEFAULT -1;
ALTER TABLE trace_summaries ADD COLUMN tokens INTEGER NOT NULL DEFAULT -1;
ALTER TABLE trace_summaries ADD COLUMN cost REAL NOT NULL DEFAULT -1;
ALTER TABLE trace_summaries ADD COLUMN violations INTEGER NOT NULL DEFAULT 0;

UPDATE trace_summaries SET
    dataset_id = (SELECT t.dataset_id FROM traces t WHERE t.id = trace_summaries.trace_id),
    idx = (SELECT t.idx FROM traces t WHERE t.id = trace_summaries.trace_id),
    violations = (SELECT count(*) FROM annotations a WHERE a.trace_id = trace_summaries.trace_id AND a.source = 'analyzer'),
    tokens = CASE
        WHEN coalesce(json_extract(summary, '$.has'), 0) & 4 THEN coalesce(json_extract(summary, '$.total_tokens'), 0)
        WHEN coalesce(json_extract(summary, '$.has'), 0) & 3 THEN coalesce(json_extract(summary, '$.input_tokens'), 0) + coalesce(json_extract(summary, '$.output_tokens'), 0)
        ELSE -1 END,
    cost = CASE WHEN coalesce(json_extract(summary, '$.has'), 0) & 8 THEN coalesce(json_extract(summary, '$.cost'), 0) ELSE -1 END,
    duration_ms = CASE
        WHEN coalesce(json_extract(summary, '$.span_first'), 0) <> 0 THEN
            CASE WHEN json_extract(summary, '$.span_last') >= json_extract(summary, '$.span_first')
                THEN (json_extract(summary, '$.span_last') - json_extract(summary, '$.span_first')) / 1000.0 ELSE -1 END
        WHEN coalesce(json_extract(summary, '$.event_first'), 0) <> 0 THEN
            CASE WHEN json_extract(summary, '$.event_last') >= json_extract(summary, '$.event_first')
                THEN (json_extract(summary, '$.event_last') - json_extract(summary, '$.event_first')) / 1000.0 ELSE -1 END
        ELSE -1 END;

CREATE INDEX trace_summaries_duration ON trace_summaries (dataset_id, duration_ms, idx) WHERE dataset_id IS NOT NULL;
CREATE INDEX trace_summaries_tokens ON trace_summaries (dataset_id, tokens, idx) WHERE dataset_id IS NOT NULL;
CREATE INDEX trace_summaries_cost ON trace_summaries (dataset_id, cost, idx) WHERE dataset_id IS NOT NULL;
CREATE INDEX trace_summaries_violations ON trace_summaries (dataset_id, violations, idx) WHERE dataset_id IS NOT NULL;

-- +goose StatementBegin
CREATE TRIGGER annotations_violation_add AFTER INSERT ON annotations WHEN NEW.source = 'analyzer'
BEGIN
    UPDATE trace_summaries SET violations = violations + 1 WHERE trace_id = NEW.trace_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER annotations_violation_remove AFTER DELETE ON annotations WHEN OLD.source = 'analyzer'
BEGIN
    UPDATE trace_summaries SET violations = violations - 1 WHERE trace_id = OLD.trace_id;
END;
-- +goose StatementEnd

CREATE TABLE score_keys (
    trace_id   TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    criterion  TEXT NOT NULL,
    dataset_id TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    value      REAL NOT NULL,
    PRIMARY KEY (trace_id, criterion)
) WITHOUT ROWID;
CREATE INDEX score_keys_sort ON score_keys (dataset_id, criterion, value, idx);

INSERT INTO score_keys (trace_id, criterion, dataset_id, idx, value)
SELECT s.trace_id, s.criterion, t.dataset_id, t.idx, avg(CASE s.value WHEN 'true' THEN 1.0 WHEN 'false' THEN 0.0 ELSE
        (CASE WHEN json_valid(s.value) THEN CASE WHEN json_type(s.value) IN ('integer', 'real') THEN CASE WHEN abs(CAST(s.value AS REAL)) <= 1.7976931348623157e308 THEN CAST(s.value AS REAL) END END END) END)
FROM scores s JOIN traces t ON t.id = s.trace_id
WHERE s.current AND t.dataset_id IS NOT NULL
GROUP BY s.trace_id, s.criterion, t.dataset_id, t.idx
HAVING count(CASE s.value WHEN 'true' THEN 1.0 WHEN 'false' THEN 0.0 ELSE
        (CASE WHEN json_valid(s.value) THEN CASE WHEN json_type(s.value) IN ('integer', 'real') THEN CASE WHEN abs(CAST(s.value AS REAL)) <= 1.7976931348623157e308 THEN CAST(s.value AS REAL) END END END) END) > 0;

-- +goose Down
DROP TABLE score_keys;
DROP TRIGGER annotations_violation_remove;
DROP TRIGGER annotations_violation_add;
DROP INDEX trace_summaries_violations;
DROP INDEX trace_summaries_cost;
DROP INDEX trace_summaries_tokens;
DROP INDEX trace_summaries_duration;
ALTER TABLE trace_summaries DROP COLUMN violations;
ALTER TABLE trace_summaries DROP COLUMN cost;
ALTER TABLE trace_summaries DROP COLUMN tokens;
ALTER TABLE trace_summaries DROP COLUMN duration_ms;
ALTER TABLE trace_summaries DROP COLUMN idx;
ALTER TABLE trace_summaries DROP COLUMN dataset_id;
