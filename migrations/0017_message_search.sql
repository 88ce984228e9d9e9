-- Message search (issue 44): `recbot search TEXT` finds a substring, Japanese included, in
-- data-channel messages and notify/push payloads across sessions.
--
-- `search_text` is what is searched when it differs from `payload_text`: a binary message
-- that is UTF-8 text, or JSON whose strings were written with \u escapes (then its strings,
-- unescaped). NULL means `payload_text` itself, or nothing searchable (other bytes).
ALTER TABLE events ADD COLUMN search_text TEXT;

-- recbot:sqlite-only
-- SQLite: an FTS5 index with the trigram tokenizer, which answers any substring of three
-- characters or more (case-folded) without splitting words, so Japanese needs no tokenizer.
-- Contentless: the text stays in `events`; triggers keep the index in step with it.
CREATE VIRTUAL TABLE event_search USING fts5(body, content = '', tokenize = 'trigram');
CREATE TRIGGER event_search_insert AFTER INSERT ON events
WHEN coalesce(new.search_text, new.payload_text) IS NOT NULL BEGIN
    INSERT INTO event_search (rowid, body) VALUES (new.id, coalesce(new.search_text, new.payload_text));
END;
CREATE TRIGGER event_search_delete AFTER DELETE ON events
WHEN coalesce(old.search_text, old.payload_text) IS NOT NULL BEGIN
    INSERT INTO event_search (event_search, rowid, body) VALUES ('delete', old.id, coalesce(old.search_text, old.payload_text));
END;
CREATE TRIGGER event_search_update_old AFTER UPDATE OF search_text, payload_text ON events
WHEN coalesce(old.search_text, old.payload_text) IS NOT NULL BEGIN
    INSERT INTO event_search (event_search, rowid, body) VALUES ('delete', old.id, coalesce(old.search_text, old.payload_text));
END;
CREATE TRIGGER event_search_update_new AFTER UPDATE OF search_text, payload_text ON events
WHEN coalesce(new.search_text, new.payload_text) IS NOT NULL BEGIN
    INSERT INTO event_search (rowid, body) VALUES (new.id, coalesce(new.search_text, new.payload_text));
END;
INSERT INTO event_search (rowid, body) SELECT id, payload_text FROM events WHERE payload_text IS NOT NULL;

-- recbot:postgres-only
-- PostgreSQL: pg_trgm's GIN index answers LIKE/ILIKE '%…%'. It sees non-ASCII letters only
-- in a database whose LC_CTYPE is a UTF-8 locale (C.UTF-8, ja_JP.UTF-8…); under plain C a
-- Japanese query is still answered right, by a scan (`recbot search` warns).
-- pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX events_search_trigrams ON events USING gin ((coalesce(search_text, payload_text)) gin_trgm_ops);
-- recbot:both
-- Results come newest first, and --since/--until bound them.
CREATE INDEX events_by_time ON events (received_at);
