-- A session that lost its connection to Sora and joined again (issue 27): one row per
-- outage, numbered from 1 within the session. It is written when the outage begins (so a
-- kill during it leaves the row) and again when it ends. `ended_at` stays NULL while recbot
-- is still rejoining, and for an outage no rejoin ended before the session did.
-- `media_lost_ms`: from the last media received before the failure to the first after the
-- rejoin (or to the end of the outage when nothing was flowing). `connection_id`: recbot's
-- connection id in the connection that ended the outage.
CREATE TABLE interruptions (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    ordinal        INTEGER NOT NULL,
    started_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    cause          TEXT NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0,
    media_lost_ms  INTEGER,
    connection_id  TEXT,
    UNIQUE (session_id, ordinal)
);
