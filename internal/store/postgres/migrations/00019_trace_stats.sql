-- What a dataset's dashboard adds up of each trace (issue #20), kept apart
-- from the digest (trace_summaries) in columns so that a dashboard does
-- not parse the digest's JSON (with its first user message) at read time:
-- the dataset and the trace's time (its first span's start, else its
-- first event's timestamp, else when it was stored, in microseconds), its
-- duration, tokens, recorded cost, and the digest's small objects
-- (by_model, models, tools, tool_errors, llm_lat) as jsonb. Triggers on
-- trace_summaries keep it, so every writer of digests keeps it without
-- knowing of it.

-- +goose Up
CREATE TABLE trace_stats (
    trace_id   uuid PRIMARY KEY REFERENCES traces (id) ON DELETE CASCADE,
    dataset_id uuid NOT NULL,
    at         bigint NOT NULL,
    dur        bigint,
    input      bigint NOT NULL,
    output     bigint NOT NULL,
    cost       double precision NOT NULL,
    unpriced   bigint NOT NULL,
    by_model   jsonb,
    models     jsonb,
    tools      jsonb,
    tool_errors jsonb,
    llm_lat    jsonb
);
CREATE INDEX trace_stats_dataset ON trace_stats (dataset_id, at);

-- Statement triggers over the rows written (transition tables), so that a
-- batch of digests (COPY of an upload) costs one insert, not one call a
-- row.
-- +goose StatementBegin
CREATE FUNCTION trace_stats_put() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM trace_stats WHERE trace_id IN (SELECT trace_id FROM written);
    INSERT INTO trace_stats (trace_id, dataset_id, at, dur, input, output, cost, unpriced, by_model, models, tools, tool_errors, llm_lat)
    SELECT d.trace_id, t.dataset_id,
        COALESCE((j ->> 'span_first')::bigint, (j ->> 'event_first')::bigint, (extract(epoch FROM t.created_at) * 1000000)::bigint),
        CASE WHEN j ? 'span_first' THEN (j ->> 'span_last')::bigint - (j ->> 'span_first')::bigint
            WHEN j ? 'event_first' THEN (j ->> 'event_last')::bigint - (j ->> 'event_first')::bigint END,
        COALESCE((j ->> 'input_tokens')::bigint, 0), COALESCE((j ->> 'output_tokens')::bigint, 0),
        COALESCE((j ->> 'cost')::double precision, 0), COALESCE((j ->> 'unpriced')::bigint, 0),
        j -> 'by_model', j -> 'models', j -> 'tools', j -> 'tool_errors', j -> 'llm_lat'
    FROM (SELECT trace_id, summary::jsonb AS j FROM written) d JOIN traces t ON t.id = d.trace_id WHERE t.dataset_id IS NOT NULL;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER trace_stats_insert AFTER INSERT ON trace_summaries REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION trace_stats_put();
-- An update of other columns (a list's sort keys, kept by triggers on
-- annotations) leaves the figures alone: only rows whose summary changed
-- are written again.
-- +goose StatementBegin
CREATE FUNCTION trace_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM trace_stats WHERE trace_id IN (SELECT w.trace_id FROM changed_after w JOIN changed_before b ON b.trace_id = w.trace_id WHERE b.summary IS DISTINCT FROM w.summary);
    INSERT INTO trace_stats (trace_id, dataset_id, at, dur, input, output, cost, unpriced, by_model, models, tools, tool_errors, llm_lat)
    SELECT d.trace_id, t.dataset_id,
        COALESCE((j ->> 'span_first')::bigint, (j ->> 'event_first')::bigint, (extract(epoch FROM t.created_at) * 1000000)::bigint),
        CASE WHEN j ? 'span_first' THEN (j ->> 'span_last')::bigint - (j ->> 'span_first')::bigint
            WHEN j ? 'event_first' THEN (j ->> 'event_last')::bigint - (j ->> 'event_first')::bigint END,
        COALESCE((j ->> 'input_tokens')::bigint, 0), COALESCE((j ->> 'output_tokens')::bigint, 0),
        COALESCE((j ->> 'cost')::double precision, 0), COALESCE((j ->> 'unpriced')::bigint, 0),
        j -> 'by_model', j -> 'models', j -> 'tools', j -> 'tool_errors', j -> 'llm_lat'
    FROM (SELECT w.trace_id, w.summary::jsonb AS j FROM changed_after w JOIN changed_before b ON b.trace_id = w.trace_id
        WHERE b.summary IS DISTINCT FROM w.summary) d JOIN traces t ON t.id = d.trace_id WHERE t.dataset_id IS NOT NULL;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER trace_stats_update AFTER UPDATE ON trace_summaries REFERENCING OLD TABLE AS changed_before NEW TABLE AS changed_after
    FOR EACH STATEMENT EXECUTE FUNCTION trace_stats_update();

-- The digests stored before.
INSERT INTO trace_stats (trace_id, dataset_id, at, dur, input, output, cost, unpriced, by_model, models, tools, tool_errors, llm_lat)
SELECT d.trace_id, t.dataset_id,
    COALESCE((j ->> 'span_first')::bigint, (j ->> 'event_first')::bigint, (extract(epoch FROM t.created_at) * 1000000)::bigint),
    CASE WHEN j ? 'span_first' THEN (j ->> 'span_last')::bigint - (j ->> 'span_first')::bigint
        WHEN j ? 'event_first' THEN (j ->> 'event_last')::bigint - (j ->> 'event_first')::bigint END,
    COALESCE((j ->> 'input_tokens')::bigint, 0), COALESCE((j ->> 'output_tokens')::bigint, 0),
    COALESCE((j ->> 'cost')::double precision, 0), COALESCE((j ->> 'unpriced')::bigint, 0),
    j -> 'by_model', j -> 'models', j -> 'tools', j -> 'tool_errors', j -> 'llm_lat'
FROM (SELECT trace_id, summary::jsonb AS j FROM trace_summaries) d JOIN traces t ON t.id = d.trace_id WHERE t.dataset_id IS NOT NULL;

-- +goose Down
DROP TRIGGER trace_stats_update ON trace_summaries;
DROP TRIGGER trace_stats_insert ON trace_summaries;
DROP FUNCTION trace_stats_update();
DROP FUNCTION trace_stats_put();
DROP TABLE trace_stats;
