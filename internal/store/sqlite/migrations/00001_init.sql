-- Lookout's SQLite schema. Times are microseconds since the Unix epoch (UTC);
-- ids are UUIDs in text form; JSON is kept verbatim as text.

-- +goose Up
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL DEFAULT '',
    is_local      INTEGER NOT NULL DEFAULT 0, -- the implicit local-mode user
    created_at    INTEGER NOT NULL
);
CREATE UNIQUE INDEX users_one_local ON users (is_local) WHERE is_local;

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    hash       TEXT NOT NULL UNIQUE, -- hex SHA-256 of the key
    last4      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    last_used  INTEGER
);
CREATE INDEX api_keys_user ON api_keys (user_id);

CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE datasets (
    id          TEXT PRIMARY KEY,
    owner_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    public      INTEGER NOT NULL DEFAULT 0,
    metadata    TEXT NOT NULL DEFAULT '{}', -- a JSON object
    created_at  INTEGER NOT NULL,
    last_pushed INTEGER,
    next_index  INTEGER NOT NULL DEFAULT 0, -- the index the next trace gets
    trace_count INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT datasets_owner_name UNIQUE (owner_id, name)
);
CREATE INDEX datasets_public ON datasets (created_at) WHERE public;

-- A trace: the list columns first, the content (canonical JSON without
-- name, metadata and annotations; deflated when encoding = 1) last, so that a
-- list reads no content pages.
CREATE TABLE traces (
    id          TEXT PRIMARY KEY,
    dataset_id  TEXT REFERENCES datasets (id) ON DELETE CASCADE, -- NULL: in no dataset
    owner_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    name        TEXT NOT NULL DEFAULT '',
    metadata    TEXT,          -- a JSON object, or NULL
    hierarchy   TEXT,          -- a JSON array of strings, or NULL
    event_count INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    encoding    INTEGER NOT NULL,
    content     BLOB NOT NULL
);
-- The per-dataset index is unique (traces in no dataset have a NULL
-- dataset_id and are not constrained); it also serves pagination.
CREATE UNIQUE INDEX traces_dataset_index ON traces (dataset_id, idx);

CREATE TABLE annotations (
    id         TEXT PRIMARY KEY,
    trace_id   TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    address    TEXT NOT NULL,
    content    TEXT NOT NULL,
    source     TEXT NOT NULL,
    author     TEXT NOT NULL DEFAULT '',
    extra      TEXT, -- a JSON object, or NULL
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX annotations_trace ON annotations (trace_id, source);

CREATE TABLE policies (
    id         TEXT PRIMARY KEY,
    dataset_id TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    source     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
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
