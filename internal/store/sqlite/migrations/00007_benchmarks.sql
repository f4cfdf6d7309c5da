-- Benchmarks (issue 7): named, versioned, frozen selections of tasks with
-- their criteria and reference answers, and each dataset's result against a
-- version (the leaderboard).

-- +goose Up
CREATE TABLE benchmarks (
    id                TEXT PRIMARY KEY,
    owner_id          TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    version           INTEGER NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    public            INTEGER NOT NULL DEFAULT 0,
    source_dataset_id TEXT REFERENCES datasets (id) ON DELETE SET NULL,
    task_key          TEXT NOT NULL,
    criteria          TEXT NOT NULL, -- a JSON array, frozen
    items             TEXT NOT NULL, -- a JSON array of the tasks, frozen
    item_count        INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    CONSTRAINT benchmarks_version UNIQUE (owner_id, name, version)
);

CREATE TABLE benchmark_results (
    id           TEXT PRIMARY KEY,
    benchmark_id TEXT NOT NULL REFERENCES benchmarks (id) ON DELETE CASCADE,
    dataset_id   TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    accuracy     REAL NOT NULL,
    summary      TEXT NOT NULL, -- a JSON object
    items        TEXT NOT NULL, -- a JSON array
    created_at   INTEGER NOT NULL,
    CONSTRAINT benchmark_results_dataset UNIQUE (benchmark_id, dataset_id)
);
CREATE INDEX benchmark_results_dataset_id ON benchmark_results (dataset_id);

-- +goose Down
DROP TABLE benchmark_results;
DROP TABLE benchmarks;
