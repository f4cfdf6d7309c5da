-- Evaluation (issue 7): versioned scores, saved criteria, runs and the
-- per-trace, per-criterion status of each run.

-- +goose Up
CREATE TABLE scores (
    seq        bigint GENERATED ALWAYS AS IDENTITY, -- creation order
    id         uuid PRIMARY KEY,
    trace_id   uuid NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    address    text NOT NULL DEFAULT '', -- '' = the whole trace
    criterion  text NOT NULL,
    value      text NOT NULL,            -- JSON: a boolean, number or string
    comment    text NOT NULL DEFAULT '',
    source     text NOT NULL,
    author     text NOT NULL DEFAULT '',
    run_id     text NOT NULL DEFAULT '',
    extra      text,                     -- a JSON object, or NULL
    version    integer NOT NULL,
    current    boolean NOT NULL,
    created_at timestamptz NOT NULL,
    CONSTRAINT scores_version UNIQUE (trace_id, criterion, address, version)
);
CREATE INDEX scores_current ON scores (trace_id, criterion, address) WHERE current;
CREATE INDEX scores_run ON scores (run_id) WHERE run_id <> '';

CREATE TABLE criteria (
    id         uuid PRIMARY KEY,
    dataset_id uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    name       text NOT NULL,
    definition text NOT NULL, -- a JSON object
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT criteria_dataset_name UNIQUE (dataset_id, name)
);

CREATE TABLE eval_runs (
    id         uuid PRIMARY KEY,
    dataset_id uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    name       text NOT NULL DEFAULT '',
    criteria   text NOT NULL, -- a JSON array, frozen at creation
    state      text NOT NULL,
    total      bigint NOT NULL DEFAULT 0,
    error      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX eval_runs_dataset ON eval_runs (dataset_id, created_at);
CREATE INDEX eval_runs_state ON eval_runs (state);

CREATE TABLE eval_status (
    run_id     uuid NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    trace_id   uuid NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    criterion  text NOT NULL,
    status     text NOT NULL,
    error      text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, trace_id, criterion)
);
CREATE INDEX eval_status_trace ON eval_status (trace_id);

-- +goose Down
DROP TABLE eval_status;
DROP TABLE eval_runs;
DROP TABLE criteria;
DROP TABLE scores;
