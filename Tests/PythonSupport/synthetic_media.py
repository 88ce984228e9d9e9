"""Synthetic media tracks for recbot's test peers: a moving test pattern and a tone,
paced in real time, counting the frames they produce.

A/V sync markers: the tracks of one publisher share a `MediaClock`, so video frame i is due at
epoch + i / fps and audio frame j at epoch + j * 0.020. Once per second of that shared timeline
both tracks carry a marker at the same instant:

- video: the frame with i % fps == 0 has its whole luma plane at MARKER_LUMA (235); every other
  frame is the moving gradient with luma kept within 16..PATTERN_LUMA_MAX (180), so a detector
  can tell the two apart by mean luma even after lossy compression;
- audio: the 20 ms frame with j % 50 == 0 is a loud 1 kHz burst (starting at a zero crossing at
  the frame's first sample); every other frame is a quiet 440 Hz tone.

pts stay index based (video 1/90000, audio 1/48000), as the frame counters (`index`) do.
"""
import asyncio
import fractions
import math
import time

import av
from aiortc import MediaStreamTrack

MARKER_LUMA = 235
PATTERN_LUMA_MAX = 180
SAMPLE_RATE = 48000
AUDIO_FRAME_SAMPLES = 960  # 20 ms
AUDIO_FRAMES_PER_SECOND = SAMPLE_RATE // AUDIO_FRAME_SAMPLES
QUIET_TONE = (440, 600)  # Hz, peak amplitude (about -35 dBFS)
SPEAKING_TONE = (440, 6000)  # a publisher that "talks" (about -15 dBFS): what a speaker layout enlarges
MARKER_TONE = (1000, 20000)  # Hz, peak amplitude (about -4 dBFS)


class MediaClock:
    """The epoch shared by the tracks of one publisher: set by whichever track asks first."""

    def __init__(self):
        self.epoch = None

    def start(self):
        if self.epoch is None:
            self.epoch = time.monotonic()
        return self.epoch

    async def wait_until(self, offset):
        """Sleeps until epoch + offset seconds (at once when that is past)."""
        target = self.start() + offset
        await asyncio.sleep(max(0.0, target - time.monotonic()))


class PatternVideo(MediaStreamTrack):
    """A moving gradient at a steady frame rate, with a full-bright marker frame once a second."""

    kind = "video"

    def __init__(self, width=320, height=240, fps=30, clock=None):
        super().__init__()
        self.fps = fps
        self.clock = clock or MediaClock()
        self.index = 0
        # Every size produced, from the frame index it started at.
        self.sizes = []
        self._resize = None  # (frame index, width, height) still to come
        # The gradient, scaled into 16..PATTERN_LUMA_MAX, indexed by (x + shift) & 0xFF.
        self._ramp = bytes(16 + v * (PATTERN_LUMA_MAX - 16) // 255 for v in range(256)) * 2
        self._set_size(width, height)

    def resize_at(self, seconds, width, height):
        """From the first frame due at or after `seconds` on this track's timeline, frames are
        width x height (both even: yuv420p). Marker frames and pts go on as before."""
        self._resize = (math.ceil(seconds * self.fps), width, height)

    def _set_size(self, width, height):
        self.width, self.height = width, height
        self._marker_luma = bytes([MARKER_LUMA]) * (width * height)
        self._chroma = bytes([128]) * (width // 2 * height // 2)
        self.sizes.append({"from_frame": self.index, "width": width, "height": height})

    @property
    def start(self):
        return self.clock.epoch

    def is_marker(self, index):
        return index % self.fps == 0

    def skip_to_now(self):
        """A live camera keeps no frames nobody took: after an outage (no sender pulling), the
        next frame is the one due now, not a burst of the missed ones."""
        if self.clock.epoch is not None:
            self.index = max(self.index, int((time.monotonic() - self.clock.epoch) * self.fps))

    async def recv(self):
        await self.clock.wait_until(self.index / self.fps)
        if self._resize and self.index >= self._resize[0]:
            self._set_size(*self._resize[1:])
            self._resize = None
        frame = av.VideoFrame(width=self.width, height=self.height, format="yuv420p")
        if self.is_marker(self.index):
            luma = self._marker_luma
        else:
            shift = (self.index * 3) & 0xFF
            row = (self._ramp[shift:shift + 256] * (self.width // 256 + 1))[: self.width]
            luma = row * self.height
        frame.planes[0].update(luma)
        frame.planes[1].update(self._chroma)
        frame.planes[2].update(self._chroma)
        frame.pts = self.index * (90000 // self.fps)
        frame.time_base = fractions.Fraction(1, 90000)
        self.index += 1
        return frame


def _tone(frequency, amplitude, first_sample):
    """One 20 ms stereo s16 frame of a sine, phase-continuous from `first_sample`."""
    samples = bytearray()
    for n in range(AUDIO_FRAME_SAMPLES):
        value = int(amplitude * math.sin(2 * math.pi * frequency * (first_sample + n) / SAMPLE_RATE))
        samples += value.to_bytes(2, "little", signed=True) * 2
    return bytes(samples)


class ToneAudio(MediaStreamTrack):
    """A quiet 440 Hz tone in 20 ms stereo frames, with a loud 1 kHz burst frame once a second."""

    kind = "audio"

    def __init__(self, clock=None, speaking=False):
        super().__init__()
        self.clock = clock or MediaClock()
        self.index = 0
        self._cache = {}
        self.tone = SPEAKING_TONE if speaking else QUIET_TONE

    @property
    def start(self):
        return self.clock.epoch

    @staticmethod
    def is_marker(index):
        return index % AUDIO_FRAMES_PER_SECOND == 0

    def skip_to_now(self):
        """As PatternVideo.skip_to_now: the next frame is the one due now."""
        if self.clock.epoch is not None:
            self.index = max(self.index, int((time.monotonic() - self.clock.epoch) * AUDIO_FRAMES_PER_SECOND))

    def _samples(self, index):
        if self.is_marker(index):
            # 1 kHz is a whole number of cycles per frame: the burst starts at a zero crossing.
            key = ("marker",)
            frequency, amplitude, first = MARKER_TONE[0], MARKER_TONE[1], 0
        else:
            frequency, amplitude = self.tone
            first = index * AUDIO_FRAME_SAMPLES
            # The phase at a frame's start repeats with the frame index modulo this period.
            period = SAMPLE_RATE // math.gcd(frequency * AUDIO_FRAME_SAMPLES, SAMPLE_RATE)
            key = ("quiet", index % period)
        if key not in self._cache:
            self._cache[key] = _tone(frequency, amplitude, first)
        return self._cache[key]

    async def recv(self):
        await self.clock.wait_until(self.index * AUDIO_FRAME_SAMPLES / SAMPLE_RATE)
        frame = av.AudioFrame(format="s16", layout="stereo", samples=AUDIO_FRAME_SAMPLES)
        frame.planes[0].update(self._samples(self.index))
        frame.sample_rate = SAMPLE_RATE
        frame.pts = self.index * AUDIO_FRAME_SAMPLES
        frame.time_base = fractions.Fraction(1, SAMPLE_RATE)
        self.index += 1
        return frame
