-- recbot catalog, first schema.
-- Times are integer milliseconds since the Unix epoch (UTC).
-- JSON columns hold JSON text exactly as received.

-- One row per `recbot join`. The id is a ULID and doubles as the Sora-layout
-- recording id: recordings/<id>/ holds the session's files.
CREATE TABLE sessions (
    id               TEXT PRIMARY KEY NOT NULL,
    channel_id       TEXT NOT NULL,
    sora_session_id  TEXT,
    connection_id    TEXT,             -- the bot's own connection id
    client_id        TEXT,
    bundle_id        TEXT,
    signaling_url    TEXT,             -- the URL actually used
    recbot_version   TEXT,
    hostname         TEXT,
    pid              INTEGER,
    started_at       INTEGER NOT NULL,
    ended_at         INTEGER,
    end_reason       TEXT,
    exit_status      INTEGER
);

-- Every sender (and other participant) seen in the channel during a session.
CREATE TABLE connections (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    connection_id    TEXT NOT NULL,
    client_id        TEXT,
    bundle_id        TEXT,
    role             TEXT,
    metadata         TEXT,             -- JSON
    authn_metadata   TEXT,             -- JSON
    authz_metadata   TEXT,             -- JSON
    first_seen_at    INTEGER NOT NULL,
    last_seen_at     INTEGER NOT NULL,
    left_at          INTEGER,
    UNIQUE (session_id, connection_id)
);

-- One row per media file. part 0 is archive-<connection>.webm; split parts count from 1.
CREATE TABLE recordings (
    id                 INTEGER PRIMARY KEY,
    session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    connection_id      TEXT NOT NULL,
    part               INTEGER NOT NULL DEFAULT 0 CHECK (part >= 0),
    path               TEXT NOT NULL,  -- relative to the data directory
    video_codec        TEXT,
    audio_codec        TEXT,
    started_at         INTEGER NOT NULL,
    ended_at           INTEGER,
    duration_ms        INTEGER,
    bytes              INTEGER NOT NULL DEFAULT 0,
    video_frames       INTEGER NOT NULL DEFAULT 0,
    audio_frames       INTEGER NOT NULL DEFAULT 0,
    packets_received   INTEGER NOT NULL DEFAULT 0,
    packets_lost       INTEGER NOT NULL DEFAULT 0,
    nacks_sent         INTEGER NOT NULL DEFAULT 0,
    packets_recovered  INTEGER NOT NULL DEFAULT 0,
    frames_dropped     INTEGER NOT NULL DEFAULT 0,
    keyframe_requests  INTEGER NOT NULL DEFAULT 0,
    status             TEXT NOT NULL DEFAULT 'recording'
                       CHECK (status IN ('recording', 'complete', 'interrupted', 'repaired')),
    UNIQUE (session_id, connection_id, part)
);

-- notify / push signaling messages and data-channel messages, as received.
CREATE TABLE events (
    id                    INTEGER PRIMARY KEY,
    session_id            TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    kind                  TEXT NOT NULL,  -- notify, push, datachannel, signaling
    event_type            TEXT,           -- e.g. connection.created; NULL when the message has none
    label                 TEXT,           -- data channel label
    sender_connection_id  TEXT,
    received_at           INTEGER NOT NULL,
    payload_format        TEXT NOT NULL CHECK (payload_format IN ('json', 'text', 'binary')),
    payload_text          TEXT,           -- json and text payloads
    payload_blob          BLOB,           -- binary payloads
    CHECK ((payload_format = 'binary' AND payload_blob IS NOT NULL AND payload_text IS NULL)
        OR (payload_format IN ('json', 'text') AND payload_text IS NOT NULL AND payload_blob IS NULL))
);
