-- Webhooks (issue 30): a durable outbox. An event is a row before anything is sent, so a
-- receiver that is down, slow or failing costs queued rows and nothing else, and a kill loses
-- no event (the next join, repair, upload or `recbot webhooks retry` sends it). One row per
-- event and receiver URL; `event_id` is the payload's id, so a replayed write adds nothing.
-- Rows of one recording and URL go out in `id` order: a later one waits for an earlier one.
CREATE TABLE webhook_outbox (
    id               INTEGER PRIMARY KEY,
    event_id         TEXT NOT NULL,
    session_id       TEXT,
    event_type       TEXT NOT NULL,
    url              TEXT NOT NULL,
    body             TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    status           TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    delivered_at     INTEGER,
    last_error       TEXT,
    UNIQUE (event_id, url)
);
CREATE INDEX webhook_outbox_by_status ON webhook_outbox (status, id);
