-- Evaluation (issue 7): versioned scores, saved criteria, runs and the
-- per-trace, per-criterion status of each run.

-- +goose Up
CREATE TABLE scores (
    id         TEXT PRIMARY KEY,
    trace_id   TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    address    TEXT NOT NULL DEFAULT '', -- '' = the whole trace
    criterion  TEXT NOT NULL,
    value      TEXT NOT NULL,            -- JSON: a boolean, number or string
    comment    TEXT NOT NULL DEFAULT '',
    source     TEXT NOT NULL,
    author     TEXT NOT NULL DEFAULT '',
    run_id     TEXT NOT NULL DEFAULT '',
    extra      TEXT,                     -- a JSON object, or NULL
    version    INTEGER NOT NULL,
    current    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    CONSTRAINT scores_version UNIQUE (trace_id, criterion, address, version)
);
CREATE INDEX scores_current ON scores (trace_id, criterion, address) WHERE current;
CREATE INDEX scores_run ON scores (run_id) WHERE run_id <> '';

CREATE TABLE criteria (
    id         TEXT PRIMARY KEY,
    dataset_id TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    definition TEXT NOT NULL, -- a JSON object
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT criteria_dataset_name UNIQUE (dataset_id, name)
);

CREATE TABLE eval_runs (
    id         TEXT PRIMARY KEY,
    dataset_id TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    name       TEXT NOT NULL DEFAULT '',
    criteria   TEXT NOT NULL, -- a JSON array, frozen at creation
    state      TEXT NOT NULL,
    total      INTEGER NOT NULL DEFAULT 0,
    error      TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX eval_runs_dataset ON eval_runs (dataset_id, created_at);
CREATE INDEX eval_runs_state ON eval_runs (state);

CREATE TABLE eval_status (
    run_id     TEXT NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    trace_id   TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    criterion  TEXT NOT NULL,
    status     TEXT NOT NULL,
    error      TEXT NOT NULL DEFAULT '',
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, trace_id, criterion)
) WITHOUT ROWID;
CREATE INDEX eval_status_trace ON eval_status (trace_id);

-- +goose Down
DROP TABLE eval_status;
DROP TABLE eval_runs;
DROP TABLE criteria;
DROP TABLE scores;
