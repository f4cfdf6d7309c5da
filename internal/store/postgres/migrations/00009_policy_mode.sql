-- Policy modes (issue 18): what the gateway does with a saved policy's
-- violation, block the call or only record it. Policies saved before
-- become 'log': a policy saved for offline checks must not start blocking
-- agents.

-- +goose Up
ALTER TABLE policies ADD COLUMN mode text NOT NULL DEFAULT 'log'
    CONSTRAINT policies_mode CHECK (mode IN ('block', 'log'));

-- +goose Down
ALTER TABLE policies DROP COLUMN mode;
