-- Policy modes (issue 18): what the gateway does with a saved policy's
-- violation, block the call or only record it. Policies saved before
-- become 'log': a policy saved for offline checks must not start blocking
-- agents.

-- +goose Up
ALTER TABLE policies ADD COLUMN mode TEXT NOT NULL DEFAULT 'log' CHECK (mode IN ('block', 'log'));

-- +goose Down
ALTER TABLE policies DROP COLUMN mode;
