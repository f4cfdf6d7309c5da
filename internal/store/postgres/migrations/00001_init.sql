-- Lookout's PostgreSQL schema. Times are timestamptz (UTC, microseconds);
-- ids are UUIDs; JSON is kept verbatim as text (jsonb would reorder keys).

-- +goose Up
CREATE TABLE users (
    id            uuid PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    password_hash text NOT NULL DEFAULT '',
    is_local      boolean NOT NULL DEFAULT false, -- the implicit local-mode user
    created_at    timestamptz NOT NULL
);
CREATE UNIQUE INDEX users_one_local ON users (is_local) WHERE is_local;

CREATE TABLE api_keys (
    id         uuid PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       text NOT NULL,
    hash       text NOT NULL UNIQUE, -- hex SHA-256 of the key
    last4      text NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz,
    last_used  timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_id);

CREATE TABLE sessions (
    token_hash text PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE datasets (
    id          uuid PRIMARY KEY,
    owner_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        text NOT NULL,
    public      boolean NOT NULL DEFAULT false,
    metadata    text NOT NULL DEFAULT '{}', -- a JSON object
    created_at  timestamptz NOT NULL,
    last_pushed timestamptz,
    next_index  bigint NOT NULL DEFAULT 0, -- the index the next trace gets
    trace_count bigint NOT NULL DEFAULT 0,
    CONSTRAINT datasets_owner_name UNIQUE (owner_id, name)
);
CREATE INDEX datasets_public ON datasets (created_at) WHERE public;

-- A trace. The content is the canonical JSON without metadata and
-- annotations, deflated when encoding = 1; it is stored out of line without
-- PostgreSQL's own compression (it is compressed already when large).
CREATE TABLE traces (
    id          uuid PRIMARY KEY,
    dataset_id  uuid REFERENCES datasets (id) ON DELETE CASCADE, -- NULL: in no dataset
    owner_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    idx         bigint NOT NULL,
    name        text NOT NULL DEFAULT '',
    metadata    text,          -- a JSON object, or NULL
    hierarchy   text,          -- a JSON array of strings, or NULL
    event_count integer NOT NULL,
    created_at  timestamptz NOT NULL,
    encoding    smallint NOT NULL,
    content     bytea NOT NULL,
    -- The per-dataset index is unique (traces in no dataset have a NULL
    -- dataset_id and are not constrained); its index serves pagination.
    CONSTRAINT traces_dataset_index UNIQUE (dataset_id, idx)
);
ALTER TABLE traces ALTER COLUMN content SET STORAGE EXTERNAL;

CREATE TABLE annotations (
    seq        bigint GENERATED ALWAYS AS IDENTITY, -- creation order
    id         uuid PRIMARY KEY,
    trace_id   uuid NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    address    text NOT NULL,
    content    text NOT NULL,
    source     text NOT NULL,
    author     text NOT NULL DEFAULT '',
    extra      text, -- a JSON object, or NULL
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX annotations_trace ON annotations (trace_id, source);

CREATE TABLE policies (
    id         uuid PRIMARY KEY,
    dataset_id uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    name       text NOT NULL,
    source     text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT policies_dataset_name UNIQUE (dataset_id, name)
);

-- +goose Down
DROP TABLE policies;
DROP TABLE annotations;
DROP TABLE traces;
DROP TABLE datasets;
DROP TABLE sessions;
DROP TABLE api_keys;
DROP TABLE users;
