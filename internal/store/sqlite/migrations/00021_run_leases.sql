-- Evaluation runs claimed with leases (issue 22): the server that works on
-- a running run holds its lease (lease_owner, a server's random name)
-- until lease_until (Unix milliseconds by the database's clock, so servers
-- with skewed clocks agree) and renews it while it works; a run whose
-- lease has expired, its server gone, is taken by another server. Runs
-- written before have no lease: the next server to look takes them.

-- +goose Up
ALTER TABLE eval_runs ADD COLUMN lease_owner text NOT NULL DEFAULT '';
ALTER TABLE eval_runs ADD COLUMN lease_until bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE eval_runs DROP COLUMN lease_until;
ALTER TABLE eval_runs DROP COLUMN lease_owner;
