-- Retention (issue 43). `recbot prune` removes an old session's files and marks its rows
-- `pruned_at`, keeping the rows (and, unless asked, the events), so the catalog still tells
-- what was recorded and that it is gone. `recbot sessions hold` keeps a session from any prune
-- (`held_at`, `hold_reason`). `retain_until`: the session's own retention (`join --retention`,
-- a rule's `retention_days`), after which `recbot prune --expired` may remove it.
ALTER TABLE sessions ADD COLUMN held_at INTEGER;
ALTER TABLE sessions ADD COLUMN hold_reason TEXT;
ALTER TABLE sessions ADD COLUMN retain_until INTEGER;
ALTER TABLE sessions ADD COLUMN pruned_at INTEGER;
ALTER TABLE recordings ADD COLUMN pruned_at INTEGER;
