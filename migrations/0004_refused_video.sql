-- Video a sender offered in a codec WebM cannot hold (e.g. H265): refused and recorded as
-- such on the sender's recording (its audio is still recorded), never silently dropped.
ALTER TABLE recordings ADD COLUMN video_refused TEXT;
