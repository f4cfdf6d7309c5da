-- Benchmarks (issue 7): named, versioned, frozen selections of tasks with
-- their criteria and reference answers, and each dataset's result against a
-- version (the leaderboard).

-- +goose Up
CREATE TABLE benchmarks (
    id                uuid PRIMARY KEY,
    owner_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name              text NOT NULL,
    version           integer NOT NULL,
    description       text NOT NULL DEFAULT '',
    public            boolean NOT NULL DEFAULT false,
    source_dataset_id uuid REFERENCES datasets (id) ON DELETE SET NULL,
    task_key          text NOT NULL,
    criteria          text NOT NULL, -- a JSON array, frozen
    items             text NOT NULL, -- a JSON array of the tasks, frozen
    item_count        integer NOT NULL,
    created_at        timestamptz NOT NULL,
    CONSTRAINT benchmarks_version UNIQUE (owner_id, name, version)
);

CREATE TABLE benchmark_results (
    id           uuid PRIMARY KEY,
    benchmark_id uuid NOT NULL REFERENCES benchmarks (id) ON DELETE CASCADE,
    dataset_id   uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    accuracy     double precision NOT NULL,
    summary      text NOT NULL, -- a JSON object
    items        text NOT NULL, -- a JSON array
    created_at   timestamptz NOT NULL,
    CONSTRAINT benchmark_results_dataset UNIQUE (benchmark_id, dataset_id)
);
CREATE INDEX benchmark_results_dataset_id ON benchmark_results (dataset_id);

-- +goose Down
DROP TABLE benchmark_results;
DROP TABLE benchmarks;
