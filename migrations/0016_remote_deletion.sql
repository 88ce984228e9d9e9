-- `recbot prune --uploaded-objects` (issue 43) deletes a pruned session's objects from the
-- storage they were uploaded to, when asked: the upload's row stays, with when its object was
-- deleted, so the catalog tells where each file was and that it is gone there too.
ALTER TABLE uploads ADD COLUMN remote_deleted_at INTEGER;
