-- What a recording or a session lost, so an operator can see it without the logs.
-- recordings.error: why a recording is `interrupted` (a file that could not be created, a
-- write that failed mid-file: the file then ends at its last good cluster).
ALTER TABLE recordings ADD COLUMN error TEXT;
-- sessions: events stored, and what the per-session event limits refused (count and payload
-- bytes); signaling and data-channel messages dropped because more arrived than could be
-- handled; catalog writes dropped because the catalog could not keep up. NULL until the
-- session ends (or when a repair ended it).
ALTER TABLE sessions ADD COLUMN events_stored INTEGER;
ALTER TABLE sessions ADD COLUMN events_refused INTEGER;
ALTER TABLE sessions ADD COLUMN events_refused_bytes INTEGER;
ALTER TABLE sessions ADD COLUMN messages_dropped INTEGER;
ALTER TABLE sessions ADD COLUMN catalog_writes_dropped INTEGER;
