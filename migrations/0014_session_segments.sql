-- One recbot session recorded by more than one process (issue 43): when the worker recording
-- it dies, another worker's `join --continue-session` goes on in the same session. Each
-- process is a segment, numbered from 1; `sessions.segment` is the one recording now (or
-- last), and each recording row names the segment that wrote it, so `recbot repair` finishes
-- a dead segment's files without touching a live one's, and a dead process's late writes
-- (`endSession` from a worker cut off from the catalog) cannot end the session another
-- process continues. NULL in `sessions.segment`/`recordings.segment` is segment 1 (rows from
-- before this migration, and writes spooled by older versions).
CREATE TABLE session_segments (
    session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    segment         INTEGER NOT NULL,
    hostname        TEXT,
    pid             INTEGER,
    -- The job's fencing token the process held (NULL for a join no service started).
    job_fence       INTEGER,
    recbot_version  TEXT,
    started_at      INTEGER NOT NULL,
    ended_at        INTEGER,
    end_reason      TEXT,
    exit_status     INTEGER,
    PRIMARY KEY (session_id, segment)
);
ALTER TABLE sessions ADD COLUMN segment INTEGER;
ALTER TABLE recordings ADD COLUMN segment INTEGER;
INSERT INTO session_segments (session_id, segment, hostname, pid, recbot_version, started_at, ended_at, end_reason, exit_status)
    SELECT id, 1, hostname, pid, recbot_version, started_at, ended_at, end_reason, exit_status FROM sessions;
