-- Where each recording's file lives, for a fleet sharing one catalog (issue 28): `host` is
-- the name its data directory is cataloged under (the machine's host name, or RECBOT_HOST
-- where that changes with every run, as in a Kubernetes pod), so `recbot verify --pending`
-- takes only the files on its own disk. Rows from before are given their session's host.
ALTER TABLE recordings ADD COLUMN host TEXT;
UPDATE recordings SET host = (SELECT hostname FROM sessions WHERE sessions.id = recordings.session_id);
-- When `recbot verify` last looked for the file on its host and did not find it (NULL once it
-- is found). It never replaces a verdict: a file verified and then deleted keeps `verified`.
ALTER TABLE recordings ADD COLUMN missing_at INTEGER;
CREATE INDEX recordings_by_host ON recordings (host);
