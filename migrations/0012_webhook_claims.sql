-- Webhook outbox for a fleet (issue 39): a row is sent by one process at a time and with its
-- own credentials.
-- `credentials`: which secret and header set the row is sent with, as a reference (an HMAC
-- of them, never the secret itself); '' for none. A process sends a row only when the row's
-- reference is '' or its own, and leaves other rows queued. Rows queued before this migration
-- have NULL: they are sent with the sending process's credentials, as they were then.
ALTER TABLE webhook_outbox ADD COLUMN credentials TEXT;
-- A claim: `lease_owner` sends the row until `lease_until` (Unix ms); then any process may
-- take it again (the owner was killed). The attempt's outcome is stored only while the lease
-- is still the owner's, so a stale write never overwrites another's delivery.
ALTER TABLE webhook_outbox ADD COLUMN lease_owner TEXT;
ALTER TABLE webhook_outbox ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
-- Each (URL, recording)'s oldest pending row is the one that may go next.
CREATE INDEX webhook_outbox_heads ON webhook_outbox (status, url, session_id, id);
CREATE INDEX webhook_outbox_by_due ON webhook_outbox (status, next_attempt_at);
