#!/usr/bin/env python3
"""Measures A/V sync in a recording of synthetic_media's publishers.

  av_sync_check.py FILE.webm [--json]

The synthetic tracks put a marker on both tracks at the same instant once a second: a full-bright
video frame (mean luma 235; other frames stay at or below 180, mean about 98) and a loud 1 kHz
burst in the audio (other audio is a quiet 440 Hz tone). This decodes the file with PyAV (VP8,
H.264, Opus, ...), finds the marker instants in both tracks, pairs each video marker with the
nearest audio marker (within half a second) and prints

  {"video_markers": n, "audio_markers": n, "pairs": n, "offsets_ms": [...], "median_offset_ms": x,
   "max_abs_offset_ms": y, "video_frames_decoded": n, "video_decode_errors": n,
   "audio_frames_decoded": n, "video_marker_times": [...], "audio_marker_times": [...],
   "audio_first_pts": t}

offset = audio marker time - video marker time (positive: the sound comes late). Times are in
seconds of the file's own timeline (pts x time base), as a player would present them. Median and
max are null when nothing paired. Exit status 0 unless the file cannot be opened (then 2).

Video marker: the first frame of a run of frames whose mean luma (sampled every 2nd pixel of
every 2nd row of the luma plane) exceeds --luma-threshold (170, between the pattern's mean of
about 98 and the marker's 235) with at least 90 % of those pixels above it too (the marker is
flat; a frame garbled by decode errors seldom is); the frame's pts.

Audio marker: the onset of the burst. The decoded samples are laid out on a continuous timeline
(each run of contiguous frames starts at its first frame's pts and advances sample by sample, so
a container time base of 1 ms does not round each frame; a jump of more than 3 ms starts a new
run), the per-sample energy (mean square over channels) is averaged over a centred 1 ms window,
bursts are regions above a tenth of the loudest 1 ms block, and the onset is the first sample
where the windowed energy reaches half the burst's median energy: for a sine that starts at t0
that is t0 itself, so the onset is found to well within 1 ms (each run's anchor is only as exact
as the container's time base: WebM's 1 ms gives offsets like 6.67 for 6.5). A burst already
loud at the first sample of a run (the file, or a gap, begins inside it) has no onset and is
skipped; so is a video marker with no audio marker within half a second (lost audio).

Opus pre-skip / codec delay: nothing is subtracted here. FFmpeg's Opus decoder drops the
pre-skip the file declares (OpusHead pre-skip, Matroska CodecDelay) and PyAV's first decoded
frame then has pts 0 (a libopus-made WebM: first packet pts -7 ms, first frame pts 0 with
960 - 312 samples), so the timeline is already the one a player presents. The first audio
frame's pts is reported as audio_first_pts. A file that declares no pre-skip but carries packets
from an encoder with lookahead (aiortc's and browsers' Opus senders: 312 samples, 6.5 ms) shows
that lookahead as a constant positive offset.
"""
import argparse
import json
import statistics
import sys

import av

LUMA_THRESHOLD = 170
BRIGHT_SHARE = 0.9  # a marker frame is flat: nearly all of it is above the threshold (a garbled frame rarely is)
PAIR_WINDOW = 0.5  # seconds: markers are one second apart
RUN_JUMP = 0.003  # seconds: a pts this far from where the previous frame ended starts a new run


def luma_stats(frame, threshold):
    """Mean luma and the share of pixels above `threshold`, sampling every 2nd pixel of every 2nd row."""
    plane = frame.planes[0]
    data = bytes(plane)
    width, height, stride = frame.width, frame.height, plane.line_size
    above = bytes(1 if v > threshold else 0 for v in range(256))
    total = bright = count = 0
    for y in range(0, height, 2):
        row = data[y * stride: y * stride + width: 2]
        total += sum(row)
        bright += sum(row.translate(above))
        count += len(row)
    return (total / count, bright / count) if count else (0.0, 0.0)


SAMPLE_FORMATS = {"flt": ("f", 1.0), "dbl": ("d", 1.0), "s16": ("h", 32768.0), "s32": ("i", 2147483648.0)}


def frame_energy(frame):
    """Per-sample mean square over the channels, samples scaled to -1..1."""
    name = frame.format.name
    planar = name.endswith("p")
    code, scale = SAMPLE_FORMATS.get(name.rstrip("p"), (None, None))
    if code is None:
        frame = av.AudioResampler(format="flt", layout=frame.layout.name, rate=frame.sample_rate).resample(frame)[0]
        code, scale, planar = "f", 1.0, False
    samples, channels = frame.samples, len(frame.layout.channels)
    if planar:
        planes = [memoryview(bytes(p)).cast(code)[:samples] for p in frame.planes[:channels]]
    else:
        packed = memoryview(bytes(frame.planes[0])).cast(code)[: samples * channels]
        planes = [packed[c::channels] for c in range(channels)] if channels > 1 else [packed]
    factor = 1.0 / (scale * scale * len(planes))
    if len(planes) == 1:
        return [v * v * factor for v in planes[0]]
    if len(planes) == 2:
        return [(a * a + b * b) * factor for a, b in zip(planes[0], planes[1])]
    return [sum(v * v for v in values) * factor for values in zip(*planes)]


class AudioRun:
    def __init__(self, start, rate):
        self.start, self.rate = start, rate
        self.energy = []

    @property
    def end(self):
        return self.start + len(self.energy) / self.rate


def audio_onsets(runs):
    """Onset times of the loud bursts across the runs."""
    prepared = []
    peak = 0.0
    for run in runs:
        n = len(run.energy)
        if n == 0:
            continue
        prefix = [0.0]
        total = 0.0
        for value in run.energy:
            total += value
            prefix.append(total)
        block = max(1, round(run.rate / 1000))
        blocks = [(prefix[min(n, k + block)] - prefix[k]) / min(block, n - k) for k in range(0, n, block)]
        peak = max(peak, max(blocks))
        prepared.append((run, prefix, block, blocks))
    coarse = max(0.1 * peak, 1e-4)  # never below -40 dBFS RMS: a silent file has no markers
    onsets = []
    for run, prefix, block, blocks in prepared:
        n = len(run.energy)
        half = max(1, block // 2)

        def windowed(i):
            lo, hi = max(0, i - half), min(n, i + half)
            return (prefix[hi] - prefix[lo]) / (hi - lo)

        regions = []
        for k, value in enumerate(blocks):
            if value < coarse:
                continue
            if regions and k - regions[-1][1] <= 50:  # a dip shorter than 50 ms is the same burst
                regions[-1][1] = k
            else:
                regions.append([k, k])
        for first, last in regions:
            plateau = statistics.median(blocks[first:last + 1])
            level = 0.5 * plateau
            i = max(0, (first - 3) * block)
            stop = min(n, (last + 1) * block)
            while i < stop and windowed(i) < level:
                i += 1
            if i >= stop or i < half:
                continue  # no clean onset, or the run begins inside the burst
            onsets.append(run.start + i / run.rate)
    return sorted(onsets)


def analyse(path, luma_threshold=LUMA_THRESHOLD):
    container = av.open(path)
    video = container.streams.video[0] if container.streams.video else None
    audio = container.streams.audio[0] if container.streams.audio else None
    result = {"video_frames_decoded": 0, "video_decode_errors": 0, "audio_frames_decoded": 0, "audio_first_pts": None}
    video_marks = []  # (time, is_marker)
    runs = []

    def on_video(frame, packet):
        pts = frame.pts if frame.pts is not None else (packet.pts if packet is not None else None)
        if pts is None:
            return
        result["video_frames_decoded"] += 1
        if getattr(frame, "is_corrupt", False):
            result["video_decode_errors"] += 1
        mean, bright = luma_stats(frame, luma_threshold)
        video_marks.append((float(pts * (frame.time_base or video.time_base)), mean > luma_threshold and bright >= BRIGHT_SHARE))

    def on_audio(frame):
        if frame.pts is None or frame.samples == 0:
            return
        result["audio_frames_decoded"] += 1
        start = float(frame.pts * (frame.time_base or audio.time_base))
        if result["audio_first_pts"] is None:
            result["audio_first_pts"] = round(start, 6)
        if not runs or abs(start - runs[-1].end) > RUN_JUMP or runs[-1].rate != frame.sample_rate:
            runs.append(AudioRun(start, frame.sample_rate))
        runs[-1].energy.extend(frame_energy(frame))

    streams = [s for s in (video, audio) if s is not None]
    # demux() ends each stream with an empty packet, whose decode() flushes the decoder.
    try:
        for packet in container.demux(streams):
            is_video = packet.stream is video
            try:
                frames = packet.decode()
            except av.error.FFmpegError:
                if is_video:
                    result["video_decode_errors"] += 1
                continue
            for frame in frames:
                if is_video:
                    on_video(frame, packet)
                else:
                    on_audio(frame)
    except av.error.FFmpegError:
        if video is not None:
            result["video_decode_errors"] += 1  # the rest of the file could not be read
    container.close()

    video_marks.sort()
    video_markers = [t for i, (t, bright) in enumerate(video_marks) if bright and (i == 0 or not video_marks[i - 1][1])]
    audio_markers = audio_onsets(runs)
    offsets = []
    for t in video_markers:
        nearest = min(audio_markers, key=lambda a: abs(a - t), default=None)
        if nearest is not None and abs(nearest - t) <= PAIR_WINDOW:
            offsets.append(round((nearest - t) * 1000, 2))
    return {
        "video_markers": len(video_markers), "audio_markers": len(audio_markers), "pairs": len(offsets),
        "offsets_ms": offsets,
        "median_offset_ms": round(statistics.median(offsets), 2) if offsets else None,
        "max_abs_offset_ms": max(abs(o) for o in offsets) if offsets else None,
        **result,
        "video_marker_times": [round(t, 4) for t in video_markers],
        "audio_marker_times": [round(t, 4) for t in audio_markers],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--json", action="store_true", help="one line of JSON (default: the same JSON, indented)")
    parser.add_argument("--luma-threshold", type=float, default=LUMA_THRESHOLD)
    args = parser.parse_args()
    try:
        report = analyse(args.file, args.luma_threshold)
    except (OSError, av.error.FFmpegError) as error:
        sys.stderr.write(f"av_sync_check: cannot read {args.file}: {error}\n")
        return 2
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
