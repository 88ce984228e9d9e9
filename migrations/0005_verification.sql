-- `recbot verify`: NULL until a recording was verified; 'verified' when libwebm read it to
-- its end, every frame decoded and hisui's reader rules hold; 'failed' otherwise. The full
-- result (per track: frames, decode errors, gaps…) is kept as JSON.
ALTER TABLE recordings ADD COLUMN verification TEXT CHECK (verification IN ('verified', 'failed'));
ALTER TABLE recordings ADD COLUMN verified_at INTEGER;
ALTER TABLE recordings ADD COLUMN verification_report TEXT;
