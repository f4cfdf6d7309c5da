-- Sorting a trace list (issue 20): as in SQLite's 00020, the values a list
-- sorts by as columns of trace_summaries with the trace's dataset and
-- index (written with the digest, storeutil.KeysOf; -1 is a value the
-- trace does not have), the violation count kept by triggers on
-- annotations, and score_keys (each trace's mean current score on a
-- criterion, true 1 and false 0) kept by the store. Rows written before
-- get their keys from their digest here, their cost being the recorded
-- cost only until their digest is written again.

-- +goose Up
ALTER TABLE trace_summaries
    ADD COLUMN dataset_id uuid,
    ADD COLUMN idx bigint NOT NULL DEFAULT 0,
    ADD COLUMN duration_ms float8 NOT NULL DEFAULT -1,
    ADD COLUMN tokens bigint NOT NULL DEFAULT -1,
    ADD COLUMN cost float8 NOT NULL DEFAULT -1,
    ADD COLUMN violations integer NOT NULL DEFAULT 0;

UPDATE trace_summaries d SET
    dataset_id = t.dataset_id,
    idx = t.idx,
    violations = (SELECT count(*) FROM annotations a WHERE a.trace_id = d.trace_id AND a.source = 'analyzer'),
    tokens = CASE
        WHEN coalesce((d.summary::jsonb ->> 'has')::int, 0) & 4 <> 0 THEN coalesce((d.summary::jsonb ->> 'total_tokens')::bigint, 0)
        WHEN coalesce((d.summary::jsonb ->> 'has')::int, 0) & 3 <> 0 THEN coalesce((d.summary::jsonb ->> 'input_tokens')::bigint, 0) + coalesce((d.summary::jsonb ->> 'output_tokens')::bigint, 0)
        ELSE -1 END,
    cost = CASE WHEN coalesce((d.summary::jsonb ->> 'has')::int, 0) & 8 <> 0 THEN coalesce((d.summary::jsonb ->> 'cost')::float8, 0) ELSE -1 END,
    duration_ms = CASE
        WHEN coalesce((d.summary::jsonb ->> 'span_first')::bigint, 0) <> 0 THEN
            CASE WHEN (d.summary::jsonb ->> 'span_last')::bigint >= (d.summary::jsonb ->> 'span_first')::bigint
                THEN ((d.summary::jsonb ->> 'span_last')::bigint - (d.summary::jsonb ->> 'span_first')::bigint) / 1000.0 ELSE -1 END
        WHEN coalesce((d.summary::jsonb ->> 'event_first')::bigint, 0) <> 0 THEN
            CASE WHEN (d.summary::jsonb ->> 'event_last')::bigint >= (d.summary::jsonb ->> 'event_first')::bigint
                THEN ((d.summary::jsonb ->> 'event_last')::bigint - (d.summary::jsonb ->> 'event_first')::bigint) / 1000.0 ELSE -1 END
        ELSE -1 END
FROM traces t
WHERE t.id = d.trace_id;

CREATE INDEX trace_summaries_duration ON trace_summaries (dataset_id, duration_ms, idx) WHERE dataset_id IS NOT NULL;
CREATE INDEX trace_summaries_tokens ON trace_summaries (dataset_id, tokens, idx) WHERE dataset_id IS NOT NULL;
CREATE INDEX trace_summaries_cost ON trace_summaries (dataset_id, cost, idx) WHERE dataset_id IS NOT NULL;
CREATE INDEX trace_summaries_violations ON trace_summaries (dataset_id, violations, idx) WHERE dataset_id IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION annotations_violation_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE trace_summaries SET violations = violations + 1 WHERE trace_id = NEW.trace_id;
    ELSE
        UPDATE trace_summaries SET violations = violations - 1 WHERE trace_id = OLD.trace_id;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER annotations_violation_add AFTER INSERT ON annotations
    FOR EACH ROW WHEN (NEW.source = 'analyzer') EXECUTE FUNCTION annotations_violation_count();
CREATE TRIGGER annotations_violation_remove AFTER DELETE ON annotations
    FOR EACH ROW WHEN (OLD.source = 'analyzer') EXECUTE FUNCTION annotations_violation_count();

CREATE TABLE score_keys (
    trace_id   uuid NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    criterion  text NOT NULL,
    dataset_id uuid NOT NULL,
    idx        bigint NOT NULL,
    value      float8 NOT NULL,
    PRIMARY KEY (trace_id, criterion)
);
CREATE INDEX score_keys_sort ON score_keys (dataset_id, criterion, value, idx);

INSERT INTO score_keys (trace_id, criterion, dataset_id, idx, value)
SELECT s.trace_id, s.criterion, t.dataset_id, t.idx, avg(v.n)
FROM scores s JOIN traces t ON t.id = s.trace_id,
    LATERAL (SELECT CASE s.value WHEN 'true' THEN 1.0::float8 WHEN 'false' THEN 0.0::float8 ELSE
        (CASE WHEN jsonb_typeof(s.value::jsonb) = 'number' THEN CASE WHEN abs((s.value::jsonb)::numeric) <= 1.7976931348623157e308 THEN (s.value::jsonb)::numeric::float8 END END) END AS n) v
WHERE s.current AND t.dataset_id IS NOT NULL
GROUP BY s.trace_id, s.criterion, t.dataset_id, t.idx
HAVING count(v.n) > 0;

-- +goose Down
DROP TABLE score_keys;
DROP TRIGGER annotations_violation_remove ON annotations;
DROP TRIGGER annotations_violation_add ON annotations;
DROP FUNCTION annotations_violation_count();
DROP INDEX trace_summaries_violations;
DROP INDEX trace_summaries_cost;
DROP INDEX trace_summaries_tokens;
DROP INDEX trace_summaries_duration;
ALTER TABLE trace_summaries DROP COLUMN violations, DROP COLUMN cost, DROP COLUMN tokens,
    DROP COLUMN duration_ms, DROP COLUMN idx, DROP COLUMN dataset_id;
