-- Indexes for the query commands: sessions by channel and time, a session's
-- recordings and events, and recordings of one sender across sessions.
CREATE INDEX sessions_by_channel_started ON sessions (channel_id, started_at);
CREATE INDEX sessions_by_started ON sessions (started_at);
CREATE INDEX connections_by_session ON connections (session_id);
CREATE INDEX recordings_by_session ON recordings (session_id);
CREATE INDEX recordings_by_connection ON recordings (connection_id);
CREATE INDEX events_by_session_kind ON events (session_id, kind, event_type);
