-- Where `recbot upload` (or `join --upload`) put each file of a session in object storage:
-- one row per file and destination. `upload_id` keeps an unfinished multipart upload so a
-- later run resumes it; `etag` is the server's once the upload was verified (HEAD: size and
-- ETag match what was sent). `local_deleted_at` is set when --delete-after-upload removed the
-- local copy.
CREATE TABLE uploads (
    id                INTEGER PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    file_name         TEXT NOT NULL,      -- in recordings/<session id>/
    object_url        TEXT NOT NULL,      -- s3://bucket/key
    endpoint          TEXT NOT NULL,      -- the S3 server (no credentials)
    bytes             INTEGER NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('uploading', 'uploaded', 'failed')),
    upload_id         TEXT,
    part_size         INTEGER,
    etag              TEXT,
    attempts          INTEGER NOT NULL DEFAULT 0,
    error             TEXT,
    started_at        INTEGER NOT NULL,
    uploaded_at       INTEGER,
    local_deleted_at  INTEGER,
    UNIQUE (session_id, file_name, object_url)
);
CREATE INDEX uploads_by_status ON uploads (status, session_id);
