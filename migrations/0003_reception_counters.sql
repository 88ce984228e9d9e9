-- What the media receive core counted for each recording (loss recovery, keyframe
-- requests, jitter, why frames were dropped) and the picture sizes its video had.
ALTER TABLE recordings ADD COLUMN pli_sent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recordings ADD COLUMN fir_sent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recordings ADD COLUMN packets_late INTEGER NOT NULL DEFAULT 0;       -- arrived after being given up
ALTER TABLE recordings ADD COLUMN packets_duplicate INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recordings ADD COLUMN jitter_ms REAL;                                 -- largest interarrival jitter among its streams
ALTER TABLE recordings ADD COLUMN frames_dropped_incomplete INTEGER NOT NULL DEFAULT 0;     -- a packet was lost for good
ALTER TABLE recordings ADD COLUMN frames_dropped_keyframe_wait INTEGER NOT NULL DEFAULT 0;  -- delta frames after a loss
ALTER TABLE recordings ADD COLUMN frames_dropped_malformed INTEGER NOT NULL DEFAULT 0;      -- depacketizer refused, or oversized
ALTER TABLE recordings ADD COLUMN frames_dropped_recorder INTEGER NOT NULL DEFAULT 0;       -- file order or write backpressure
ALTER TABLE recordings ADD COLUMN video_sizes TEXT;                               -- e.g. "640x360,1280x720", in order seen
