"""Synthetic media tracks for recbot's test peers: a moving test pattern and a tone,
paced in real time, counting the frames they produce."""
import asyncio
import fractions
import math
import time

import av
from aiortc import MediaStreamTrack


class PatternVideo(MediaStreamTrack):
    """A moving gradient at a steady frame rate."""

    kind = "video"

    def __init__(self, width=320, height=240, fps=30):
        super().__init__()
        self.width, self.height, self.fps = width, height, fps
        self.index = 0
        self.start = None

    async def recv(self):
        if self.start is None:
            self.start = time.monotonic()
        target = self.start + self.index / self.fps
        await asyncio.sleep(max(0.0, target - time.monotonic()))
        frame = av.VideoFrame(width=self.width, height=self.height, format="yuv420p")
        shift = self.index * 3
        luma = bytes((x + shift) & 0xFF for x in range(self.width)) * self.height
        frame.planes[0].update(luma)
        chroma = bytes([128]) * (self.width // 2 * self.height // 2)
        frame.planes[1].update(chroma)
        frame.planes[2].update(chroma)
        frame.pts = self.index * (90000 // self.fps)
        frame.time_base = fractions.Fraction(1, 90000)
        self.index += 1
        return frame


class ToneAudio(MediaStreamTrack):
    """A 440 Hz tone in 20 ms stereo frames."""

    kind = "audio"

    def __init__(self):
        super().__init__()
        self.index = 0
        self.start = None

    async def recv(self):
        if self.start is None:
            self.start = time.monotonic()
        target = self.start + self.index * 0.02
        await asyncio.sleep(max(0.0, target - time.monotonic()))
        samples = bytearray()
        for n in range(960):
            value = int(8000 * math.sin(2 * math.pi * 440 * (self.index * 960 + n) / 48000))
            samples += value.to_bytes(2, "little", signed=True) * 2
        frame = av.AudioFrame(format="s16", layout="stereo", samples=960)
        frame.planes[0].update(bytes(samples))
        frame.sample_rate = 48000
        frame.pts = self.index * 960
        frame.time_base = fractions.Fraction(1, 48000)
        self.index += 1
        return frame
