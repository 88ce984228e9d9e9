-- `recbot compose` (issue 44) writes a session's senders into one file; each file it writes is
-- cataloged here, so `recordings list --kind composed` finds it. One row per output path of a
-- session: composing again to the same path replaces the row. `path` is relative to the data
-- directory when the file is inside it (as recordings' paths are), else absolute.
CREATE TABLE compositions (
    session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path           TEXT NOT NULL,
    -- The chat as WebVTT beside it (same rule), when a message fell within it.
    captions_path  TEXT,
    layout         TEXT NOT NULL,
    -- Where the composition starts on the session's timeline, and its length (milliseconds).
    from_ms        INTEGER NOT NULL,
    duration_ms    INTEGER NOT NULL,
    width          INTEGER NOT NULL,
    height         INTEGER NOT NULL,
    fps            INTEGER NOT NULL,
    video_codec    TEXT NOT NULL,
    audio_codec    TEXT NOT NULL,
    senders        INTEGER NOT NULL,
    bytes          INTEGER,
    host           TEXT,
    composed_at    INTEGER NOT NULL,
    PRIMARY KEY (session_id, path)
);
CREATE INDEX compositions_by_time ON compositions (composed_at);
