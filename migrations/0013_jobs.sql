-- Recording jobs for `recbot serve` (issue 43): a Sora webhook or an API call inserts a row,
-- and any worker with capacity leases it, runs a `recbot join` for it and stores its result.
-- `id` is also the recbot session id the recording gets, so a job that fails over to another
-- worker goes on in the same session.
-- A lease: `lease_owner` runs the job until `lease_until` (Unix ms) and renews it by
-- heartbeat; after that any worker may claim it again (the owner died or was cut off).
-- `fence` grows by one at every claim: a write carrying an older value is refused, so a
-- worker that lost its lease cannot change the job, nor its recording's rows, after another
-- worker took over.
CREATE TABLE jobs (
    id                 TEXT PRIMARY KEY NOT NULL,
    channel_id         TEXT NOT NULL,
    -- Sora's session id, for jobs a session webhook created: a second `session.created` for it adds nothing.
    sora_session_id    TEXT UNIQUE,
    -- 'webhook' or 'api'.
    origin             TEXT NOT NULL,
    -- The rule of the service's configuration that matched, for webhook jobs.
    rule               TEXT,
    -- How to record (JSON): the rule's options, or the API call's.
    options            TEXT NOT NULL,
    state              TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'ended', 'cancelled')),
    created_at         INTEGER NOT NULL,
    -- The recording ends here at the latest (Sora's expire_time); NULL for none.
    expires_at         INTEGER,
    stop_requested_at  INTEGER,
    -- 'session.destroyed', 'api', 'command line'.
    stop_reason        TEXT,
    lease_owner        TEXT,
    lease_until        INTEGER NOT NULL DEFAULT 0,
    fence              INTEGER NOT NULL DEFAULT 0,
    -- The host of the worker that claimed it last.
    worker_host        TEXT,
    started_at         INTEGER,
    ended_at           INTEGER,
    exit_status        INTEGER,
    end_reason         TEXT
);
CREATE INDEX jobs_claimable ON jobs (state, lease_until, created_at);
CREATE INDEX jobs_by_channel ON jobs (channel_id, state);
