#!/usr/bin/env python3
"""Headless Chromium publishers for recbot's tests: real libwebrtc senders that publish the fake
camera and microphone through janus_publisher.html into a Janus VideoRoom.

The fake devices play files made once into a cache folder (make_media):
- a y4m (I420, FPS frames a second, LOOP_SECONDS long, then Chromium loops it): every frame
  carries its number in a band of BITS black/white cells along the bottom (most significant bit
  first, cell i spans columns i*W//BITS .. (i+1)*W//BITS, luma 16 for 0 and 235 for 1: big, flat
  cells survive lossy coding, even the quarter-size simulcast layer). Above the band, as in
  synthetic_media.py: frame n with n % FPS == 0 is a flash (luma MARKER_LUMA), every other frame
  the moving gradient kept within 16..PATTERN_LUMA_MAX, so mean luma tells the two apart;
- a wav (48 kHz mono s16, the same length): a BEEP_MS 1 kHz beep at each flash (starting on a
  zero crossing), silence between (so Opus DTX has something to do), or --audio-bed quiet: the
  quiet 440 Hz tone of synthetic_media.py.
`scheme()` describes this for a truth file; `read_frame_number()` reads a decoded frame back.

  chromium_publishers.py --page-url http://127.0.0.1:8080/publisher.html --codecs vp8,vp9 ...
is only used through sora_janus_server.py (which serves the page); the class is ChromiumPublishers.
"""
import asyncio
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "PythonSupport"))
from synthetic_media import MARKER_LUMA, MARKER_TONE, PATTERN_LUMA_MAX, QUIET_TONE, SAMPLE_RATE  # noqa: E402

FPS = 30
LOOP_SECONDS = 20
BITS = 12  # 4096 frame numbers: more than a loop holds (LOOP_SECONDS * FPS)
BLACK, WHITE = 16, 235
BEEP_MS = 40  # two Opus frames: long enough to come through Chromium's audio path whole
MEDIA_VERSION = 1  # bump when the files' content changes (the cache key)


def band_height(height):
    return max(8, (height // 6) & ~1)


def scheme(width, height, audio_bed="silence"):
    """What the fake media carries, for a truth file."""
    return {"fps": FPS, "loop_seconds": LOOP_SECONDS, "loop_frames": FPS * LOOP_SECONDS, "width": width, "height": height,
            "frame_number": {"bits": BITS, "order": "msb-first", "band_rows": [height - band_height(height), height],
                             "cell_columns": "i*W//bits..(i+1)*W//bits", "luma_zero": BLACK, "luma_one": WHITE,
                             "wraps_at": FPS * LOOP_SECONDS},
            "flash": {"every_frames": FPS, "luma": MARKER_LUMA, "pattern_luma_max": PATTERN_LUMA_MAX, "area": "above the band"},
            "audio": {"sample_rate": SAMPLE_RATE, "channels": 1, "beep_hz": MARKER_TONE[0], "beep_ms": BEEP_MS,
                      "beep_at": "each flash (frame n, n % fps == 0) starts at n / fps s", "bed": audio_bed}}


def frame_luma(index, width, height):
    band = band_height(height)
    picture = height - band
    if index % FPS == 0:
        top = bytes([MARKER_LUMA]) * (width * picture)
    else:
        ramp = bytes(16 + v * (PATTERN_LUMA_MAX - 16) // 255 for v in range(256)) * 2
        shift = (index * 3) & 0xFF
        row = (ramp[shift:shift + 256] * (width // 256 + 1))[:width]
        top = row * picture
    cells = bytearray(width)
    for bit in range(BITS):
        value = WHITE if (index >> (BITS - 1 - bit)) & 1 else BLACK
        start, end = bit * width // BITS, (bit + 1) * width // BITS
        cells[start:end] = bytes([value]) * (end - start)
    return top + bytes(cells) * band


def read_frame(luma, width, height, stride=None, source=None):
    """Reads a decoded frame back: its frame number, whether it is a flash, and how sure the read is.

    luma: the luma plane, as bytes (rows of `stride` bytes, default width) or a 2-D numpy array
    (height x stride); width x height: the decoded picture's size. source: the y4m's (width, height)
    when known (a scaled layer, e.g. VP8 simulcast r0 at 1/4, keeps the geometry, so the band and
    cells are found by proportion); without it the band is band_height(height) rows, as made.
    Each cell is the mean of its inner half (across and down the band), so blocking and ringing at
    cell edges, scaling and lossy coding hardly move it. Returns a dict:
      number: the 12-bit value; flash: mean luma above the band past the flash/pattern midpoint;
      top_luma: that mean; margin: the least clear cell, 0 (mid grey) .. 1 (exact black/white);
      readable: margin >= 0.3 (every cell's mean outside roughly 82..169)."""
    import numpy as np

    stride = stride or width
    plane = luma if isinstance(luma, np.ndarray) else np.frombuffer(luma, dtype=np.uint8, count=stride * height).reshape(height, stride)
    plane = plane[:height, :width]
    if source:
        source_width, source_height = source
        band_top = (source_height - band_height(source_height)) * height / source_height
        scale_x = width / source_width
        edges = [bit * source_width // BITS * scale_x for bit in range(BITS + 1)]
    else:
        band_top = height - band_height(height)
        edges = [bit * width / BITS for bit in range(BITS + 1)]
    band = height - band_top
    y0, y1 = int(round(band_top + band / 4)), int(round(height - band / 4))
    y1 = max(y1, y0 + 1)
    rows = plane[y0:y1].astype(np.float32)
    middle = (BLACK + WHITE) / 2
    number, margin = 0, 1.0
    for bit in range(BITS):
        x0, x1 = edges[bit], edges[bit + 1]
        a, b = int(round(x0 + (x1 - x0) / 4)), int(round(x1 - (x1 - x0) / 4))
        value = float(rows[:, a:max(b, a + 1)].mean())
        number = number << 1 | (value > middle)
        margin = min(margin, abs(value - middle) / (middle - BLACK))
    top_rows = max(1, int(band_top * 0.95))
    top_luma = float(plane[:top_rows:2, ::2].mean())
    return {"number": number, "flash": top_luma > (PATTERN_LUMA_MAX + MARKER_LUMA) / 2, "top_luma": top_luma,
            "margin": round(min(margin, 1.0), 3), "readable": margin >= 0.3}


def read_frame_number(luma, width, height, stride=None, source=None):
    """The frame number in a decoded frame's luma plane and whether it is a flash (read_frame)."""
    read = read_frame(luma, width, height, stride, source)
    return read["number"], read["flash"]


def write_y4m(path, width, height):
    chroma = bytes([128]) * (width // 2 * height // 2)
    with open(path + ".tmp", "wb") as out:
        out.write(f"YUV4MPEG2 W{width} H{height} F{FPS}:1 Ip A1:1 C420jpeg\n".encode())
        for index in range(FPS * LOOP_SECONDS):
            out.write(b"FRAME\n")
            out.write(frame_luma(index, width, height))
            out.write(chroma)
            out.write(chroma)
    os.replace(path + ".tmp", path)


def write_wav(path, audio_bed):
    samples = SAMPLE_RATE * LOOP_SECONDS
    beep = SAMPLE_RATE * BEEP_MS // 1000
    frequency, amplitude = MARKER_TONE
    quiet_frequency, quiet_amplitude = QUIET_TONE
    data = bytearray()
    for n in range(samples):
        offset = n % SAMPLE_RATE
        if offset < beep:
            value = amplitude * math.sin(2 * math.pi * frequency * offset / SAMPLE_RATE)
        elif audio_bed == "quiet":
            value = quiet_amplitude * math.sin(2 * math.pi * quiet_frequency * n / SAMPLE_RATE)
        else:
            value = 0
        data += struct.pack("<h", int(value))
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, SAMPLE_RATE, SAMPLE_RATE * 2, 2, 16)
    header += b"data" + struct.pack("<I", len(data))
    with open(path + ".tmp", "wb") as out:
        out.write(header + bytes(data))
    os.replace(path + ".tmp", path)


def make_media(cache_dir, width, height, audio_bed="silence"):
    """The y4m and wav for these settings, made once (cached by their parameters)."""
    os.makedirs(cache_dir, exist_ok=True)
    stem = os.path.join(cache_dir, f"recbot-fake-v{MEDIA_VERSION}-{width}x{height}-{FPS}fps-{LOOP_SECONDS}s")
    video, audio = stem + ".y4m", f"{stem}-{audio_bed}.wav"
    if not os.path.exists(video):
        write_y4m(video, width, height)
    if not os.path.exists(audio):
        write_wav(audio, audio_bed)
    return video, audio


def chromium_version():
    try:
        return subprocess.run(["chromium", "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


class ChromiumPublishers:
    """One headless Chromium per publisher, each in its own process group and profile folder;
    stop() kills every one of them (and their helper processes) and removes the profiles."""

    def __init__(self, log_dir=None):
        self.log_dir = log_dir
        self.processes = []  # (process, profile dir, log file)

    async def start(self, page_url, query, video_file, audio_file):
        profile = tempfile.mkdtemp(prefix="recbot-chromium-")
        url = f"{page_url}?{urllib.parse.urlencode(query)}"
        arguments = [
            "chromium", "--headless=new", "--no-sandbox",  # root here: Chromium's sandbox refuses root
            "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-video-capture={video_file}", f"--use-file-for-fake-audio-capture={audio_file}",
            f"--user-data-dir={profile}", "--autoplay-policy=no-user-gesture-required",
            # Janus offers loopback candidates only; libwebrtc skips loopback unless told.
            "--allow-loopback-in-peer-connection",
            # Three simulcast layers even below 960x540 (libwebrtc limits the layer count by resolution).
            "--force-fieldtrials=WebRTC-LegacySimulcastLayerLimit/Disabled/",
            "--disable-gpu", "--mute-audio", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-timer-throttling", "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows",
            "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
            url]
        log_path = os.path.join(self.log_dir or profile, f"chromium-{query.get('id', len(self.processes))}.log")
        log = open(log_path, "wb")
        process = await asyncio.create_subprocess_exec(*arguments, stdin=asyncio.subprocess.DEVNULL, stdout=log,
                                                       stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        self.processes.append((process, profile, log))
        return process, log_path

    def kill(self, index):
        """A tab closed abruptly: the browser's whole process group gets SIGKILL (no BYE, no DTLS
        close alert, nothing more on the wire)."""
        if index < len(self.processes) and self.processes[index][0].returncode is None:
            try:
                os.killpg(self.processes[index][0].pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def stop(self):
        for process, _, _ in self.processes:
            if process.returncode is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process, profile, log in self.processes:
            try:
                await asyncio.wait_for(process.wait(), 5)
            except asyncio.TimeoutError:
                pass
            # The renderer, GPU and utility processes share the group: none may outlive the browser.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await process.wait()
            log.close()
            shutil.rmtree(profile, ignore_errors=True)
        self.processes = []


if __name__ == "__main__":
    # Makes the media and says where it is: chromium_publishers.py CACHE_DIR [WIDTH HEIGHT [BED]]
    cache = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.gettempdir(), "recbot-fake-media")
    w, h = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (320, 240)
    print(make_media(cache, w, h, sys.argv[4] if len(sys.argv) > 4 else "silence"))
