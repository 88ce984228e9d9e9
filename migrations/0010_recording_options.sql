-- The Sora recording options a session was recorded with (issue 30): its split duration and
-- split_only, and the operator's recording_metadata (JSON text). `recbot repair` writes the
-- report of a killed session from them, as the session would have.
ALTER TABLE sessions ADD COLUMN split_duration INTEGER;
ALTER TABLE sessions ADD COLUMN split_only INTEGER;
ALTER TABLE sessions ADD COLUMN recording_metadata TEXT;
