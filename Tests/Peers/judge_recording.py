#!/usr/bin/env python3
"""Judges recbot's files against what the senders say they sent (sora_janus_server.py's truth).

  judge_recording.py --data-dir /tmp/j/data --truth /tmp/j/truth.json [--session ID]
                     [--recbot /tmp/recbot-bin/recbot] [--min-kept 0.995] [--max-av-drift-ms 20]
                     [--max-missing-ratio 0.005] [--table]

For every publisher connection id of the truth, the recording(s) of that sender in the session
(all parts, in order) are decoded with PyAV and compared with the sender's own account:

- blocks: video and audio blocks in the file(s);
- verify: `recbot verify --json` per file (with --recbot): ok, decode errors, timeline faults;
- frame_numbers: the number each decoded video frame carries (chromium_publishers.read_frame):
  first, last, distinct, missing_inside_span (numbers between the first and the last that no block
  carries, the y4m's loop wrap unwrapped), repeated (a number on two blocks), backward, unreadable;
- sent: the page's getStats() (final, and the snapshots taken when the recorder's subscription came
  up and at each layer switch); kept_ratio = video blocks / frames sent on the forwarded layer while
  the recorder was subscribed (see `sent.how`);
- av_offset_ms: each flash (a frame whose luma above the band jumps far above its neighbours')
  paired with its beep (an onset of the beep's frequency in the decoded Opus audio): beep - flash
  on the blocks' timestamps, the first one and the largest drift from it. Chromium's fake camera
  delivers the y4m's frame 0 twice when it loops, so from there on the sender's own video is one
  frame period later against its audio: max_drift_source_corrected_ms adds those periods back (the
  av_drift check uses it). Its capturer also resets its schedule after a stall (a frame late, every
  later one as late): that shift is the sender's too, but shows as a step in video_clock (block time
  against frame number) that the judge cannot tell from the recorder's; audio_clock checks the
  beeps' one-second grid (the wav's samples: exact, but for ~1 ms at the wav's own loop). On a busy
  host the fake microphone also falls behind real time (microphone_rate: its media-source
  totalSamplesDuration per second of getStats time, start snapshot to final stats), which the SRs
  show as drift and a recorder keeping sync follows: max_drift_device_corrected_ms takes that out
  too, and leaves out single markers off their neighbours (blips: a beep whose first Opus packet
  was lost is detected a frame late); the av_drift check uses it;
- timeline: per track, the steps between consecutive block timestamps.

stdout: JSON {"session", "thresholds", "publishers": {connection_id: {...}}, "summary"}; --table
also prints a short table to stderr. Exit status 0 when every check passes, 1 otherwise, 2 when the
files or the truth cannot be read.
"""
import argparse
import datetime
import glob
import json
import os
import statistics
import subprocess
import sys

import av
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chromium_publishers  # noqa: E402

GRID_TOLERANCE_MS = 2.0
FLASH_JUMP = 60.0  # luma above the neighbours' median that makes a flash (pattern <= 180, flash 235)
BEEP_WINDOW_MS = 2.0  # the beep detector's moving average (its time resolution)
BEEP_THRESHOLD = 0.25  # of the track's own peak envelope: a beep is there
BEEP_MS = 40  # the wav's beep (media_scheme.audio.beep_ms)
BEEP_REFRACTORY_MS = 500  # one beep a second: a second onset within this is the same beep


# --- finding the files ---

def run_json(command):
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    try:
        return json.loads(result.stdout), result.returncode, result.stderr
    except json.JSONDecodeError:
        return None, result.returncode, result.stderr


def find_recordings(args):
    """[(connection_id, part, path, sidecar dict or None)] of the session, and the session id."""
    session = args.session
    if args.recbot:
        rows, code, error = run_json([args.recbot, "recordings", "list", "--data-dir", args.data_dir, "--json"])
        if rows is None:
            raise SystemExit(f"recbot recordings list failed ({code}): {error.strip()}")
        if not session:
            sessions = sorted({(r.get("started_at") or "", r["session_id"]) for r in rows})
            if not sessions:
                raise SystemExit("no recordings in the catalog")
            session = sessions[-1][1]
        found = [(r["connection_id"], r.get("part") or 0, r["path"], None) for r in rows if r["session_id"] == session]
    else:
        root = os.path.join(args.data_dir, "recordings")
        if not session:
            folders = [f for f in glob.glob(os.path.join(root, "*")) if os.path.isdir(f)]
            if not folders:
                raise SystemExit(f"no session folders under {root}")
            session = os.path.basename(max(folders, key=os.path.getmtime))
        found = []
        for path in sorted(glob.glob(os.path.join(root, session, "*.webm"))):
            sidecar_path = path[:-5] + ".json"
            sidecar = json.load(open(sidecar_path)) if os.path.exists(sidecar_path) else {}
            connection = sidecar.get("connection_id") or os.path.basename(path)[len("archive-"):-5].split("_")[0]
            found.append((connection, sidecar.get("part", 0) or 0, path, sidecar))
    out = []
    for connection, part, path, sidecar in found:
        if sidecar is None:
            sidecar_path = path[:-5] + ".json"
            sidecar = json.load(open(sidecar_path)) if os.path.exists(sidecar_path) else {}
        out.append((connection, part, path, sidecar))
    out.sort(key=lambda r: (r[0], r[1], r[3].get("start_time_offset_ms") or 0))
    return session, out


def verify_files(recbot, data_dir, paths):
    if not recbot or not paths:
        return {}
    rows, code, error = run_json([recbot, "verify", "--json", "--data-dir", data_dir, *paths])
    if rows is None:
        return {path: {"error": f"recbot verify exit {code}: {error.strip()[:300]}"} for path in paths}
    results = {}
    for row in rows:
        report = row.get("report") or {}
        tracks = {}
        for track in report.get("tracks") or []:
            timeline = track.get("timeline") or {}
            tracks[track.get("kind")] = {"frames": track.get("frames"), "decoded": track.get("decoded"),
                                         "decode_errors": track.get("decode_errors"), "gaps": track.get("gap_count"),
                                         "backward_steps": timeline.get("backward_steps"),
                                         "repeated_timestamps": timeline.get("repeated_timestamps"),
                                         "off_grid_steps": timeline.get("off_grid_steps"),
                                         "off_grid_samples": timeline.get("off_grid_samples"),
                                         "largest_step_ms": timeline.get("largest_step_ms")}
        results[row.get("path") or report.get("path")] = {
            "verification": row.get("verification"), "ok": report.get("ok"), "tracks": tracks,
            "warnings": report.get("warnings"), "reader_rule_violations": report.get("reader_rule_violations"),
            "audio_video_start_offset_ms": report.get("audio_video_start_offset_ms")}
    return {"exit_status": code, "files": results}


# --- decoding ---

def luma_plane(frame):
    plane = frame.planes[0]
    array = np.frombuffer(plane, dtype=np.uint8)
    if frame.format.name.endswith(("10le", "10be", "12le", "16le")):
        array = (np.frombuffer(plane, dtype=np.uint16) >> 2).astype(np.uint8)
        return array.reshape(frame.height, -1)[:, :frame.width]
    return array.reshape(frame.height, plane.line_size)[:, :frame.width]


def decode_file(path, source_size):
    """Per track: the blocks' timestamps (ms, file order) and, decoded, each video frame's reading
    and the audio as one array on the blocks' timeline."""
    result = {"video": {"pts": [], "keyframes": 0, "frames": [], "decode_errors": 0, "sizes": {}},
              "audio": {"pts": [], "decode_errors": 0, "chunks": [], "sample_rate": None}}
    with av.open(path) as container:
        streams = [s for s in container.streams if s.type in ("video", "audio")]
        for stream in streams:
            stream.thread_type = "AUTO" if stream.type == "video" else stream.thread_type
        for packet in container.demux(*streams):
            if packet.size == 0 or packet.pts is None:
                continue
            kind = packet.stream.type
            track = result[kind]
            millis = float(packet.pts * packet.time_base * 1000)
            track["pts"].append(millis)
            if kind == "video" and packet.is_keyframe:
                track["keyframes"] += 1
            try:
                frames = packet.decode()
            except av.error.FFmpegError:
                track["decode_errors"] += 1
                continue
            for frame in frames:
                at = float(frame.pts * (frame.time_base or packet.time_base) * 1000) if frame.pts is not None else millis
                if kind == "video":
                    size = f"{frame.width}x{frame.height}"
                    track["sizes"][size] = track["sizes"].get(size, 0) + 1
                    read = chromium_publishers.read_frame(luma_plane(frame), frame.width, frame.height, source=source_size)
                    read["at_ms"] = at
                    read["size"] = size
                    track["frames"].append(read)
                else:
                    samples = frame.to_ndarray()
                    if samples.ndim == 2 and frame.format.is_planar:
                        samples = samples[0]
                    elif samples.ndim == 2:
                        samples = samples.reshape(-1, len(frame.layout.channels))[:, 0]
                    if samples.dtype.kind == "i":
                        samples = samples.astype(np.float32) / np.iinfo(samples.dtype).max
                    track["sample_rate"] = frame.sample_rate
                    track["chunks"].append((at, samples.astype(np.float32)))
        # flush the decoders
        for stream in streams:
            try:
                for frame in stream.codec_context.decode(None):
                    if stream.type == "video":
                        read = chromium_publishers.read_frame(luma_plane(frame), frame.width, frame.height, source=source_size)
                        read["at_ms"] = float(frame.pts * (frame.time_base or stream.time_base) * 1000) if frame.pts is not None else None
                        read["size"] = f"{frame.width}x{frame.height}"
                        result["video"]["frames"].append(read)
            except (av.error.FFmpegError, ValueError):
                pass
    return result


# --- analyses ---

def timeline(pts):
    """Steps between consecutive block timestamps (file order)."""
    if len(pts) < 2:
        return {"blocks": len(pts)}
    steps = np.diff(np.asarray(pts, dtype=np.float64))
    backward = int((steps < 0).sum())
    repeated = int((steps == 0).sum())
    forward = steps[steps > 0]
    median = float(np.median(forward)) if len(forward) else 0.0
    # The grid: the mean of the single steps (a 30 fps track in whole ms steps 33/34: 33.33 ms).
    single = forward[np.abs(forward - median) <= GRID_TOLERANCE_MS]
    period = float(single.mean()) if len(single) else median
    off_grid = []
    if period > 0:
        multiples = np.maximum(1, np.round(forward / period))
        error = np.abs(forward - multiples * period)
        off_grid = forward[error > GRID_TOLERANCE_MS]
    samples = {}
    for step in off_grid:
        samples[f"{step:g}"] = samples.get(f"{step:g}", 0) + 1
    return {"blocks": len(pts), "first_ms": pts[0], "last_ms": pts[-1], "min_step_ms": float(forward.min()) if len(forward) else None,
            "max_step_ms": float(forward.max()) if len(forward) else None, "median_step_ms": median,
            "grid_ms": round(period, 3), "off_grid_steps": int(len(off_grid)),
            "off_grid_samples": dict(sorted(samples.items(), key=lambda kv: -kv[1])[:8]),
            "backward_steps": backward, "repeated_timestamps": repeated}


def frame_numbers(frames, wrap, period_ms):
    """Unwraps the numbers read (file order) and counts what is missing, repeated and unreadable.

    Each frame gets read["unwrapped"] (None when unreadable). A number on two blocks is either
    - source_loop: consecutive blocks a frame period apart carrying number 0 (mod the loop): Chromium's
      fake capture delivers the y4m's first frame twice when it loops (the sender's doing; everything
      after it is one frame period later against the audio), or
    - blocks: two blocks of one picture (e.g. both layers' keyframes of one instant at a layer
      switch) or a picture again later: the recording's doing. Only these count as `repeated`.
    A missing run is `no_room` when its neighbours' timestamps leave no room for it (they are less
    than len+0.5 periods apart: the sender never captured/sent those numbers at a time of their own,
    e.g. the capturer catching up after a stall) or `gap` (the timeline has a hole where they belong:
    lost on the way, dropped by the sender's encoder or by the recorder)."""
    unreadable = 0
    backward = 0
    previous = None
    readable = []  # indexes of readable frames
    for index, read in enumerate(frames):
        number = read["number"]
        if not read["readable"] or number >= wrap:
            unreadable += 1
            read["unwrapped"] = None
            continue
        if previous is None:
            value = number
        else:
            delta = (number - previous % wrap) % wrap
            if delta > wrap // 2:  # a step back (not a wrap)
                delta -= wrap
                backward += 1
            value = previous + delta
        read["unwrapped"] = value
        readable.append(index)
        previous = value
    if not readable:
        return {"decoded": len(frames), "unreadable": unreadable}
    seen = {}
    for index in readable:
        seen.setdefault(frames[index]["unwrapped"], []).append(index)
    repeats = []
    for value, indexes in sorted(seen.items()):
        for before, after in zip(indexes, indexes[1:]):
            step = (frames[after]["at_ms"] or 0) - (frames[before]["at_ms"] or 0)
            kind = "source_loop" if (after == before + 1 and value % wrap == 0 and step >= period_ms / 2) else "blocks"
            frames[after]["source_repeat"] = kind == "source_loop"
            repeats.append({"number": value % wrap, "at_ms": frames[after]["at_ms"], "step_ms": round(step, 2), "kind": kind,
                            "sizes": [frames[before]["size"], frames[after]["size"]]})
    first, last = frames[readable[0]]["unwrapped"], frames[readable[-1]]["unwrapped"]
    low, high = min(seen), max(seen)
    missing = [v for v in range(low, high + 1) if v not in seen]
    runs = []
    for value in missing:
        if runs and runs[-1]["from_unwrapped"] + runs[-1]["frames"] == value:
            runs[-1]["frames"] += 1
        else:
            runs.append({"from_unwrapped": value, "frames": 1})
    for run in runs:
        before = frames[seen[run["from_unwrapped"] - 1][-1]]
        after = frames[seen[run["from_unwrapped"] + run["frames"]][0]]
        step = after["at_ms"] - before["at_ms"]
        run.update({"from": run["from_unwrapped"] % wrap, "at_ms": before["at_ms"], "step_ms": round(step, 2),
                    "kind": "gap" if step >= (run["frames"] + 0.5) * period_ms else "no_room",
                    "sizes": sorted({before["size"], after["size"]})})
        del run["from_unwrapped"]
    span = high - low + 1
    block_repeats = [r for r in repeats if r["kind"] == "blocks"]
    return {"decoded": len(frames), "first": first % wrap, "last": last % wrap, "first_unwrapped": first, "last_unwrapped": last,
            "span": span, "wraps": (high // wrap) - (low // wrap), "distinct": len(seen),
            "missing_inside_span": len(missing), "missing_ratio": round(len(missing) / span, 5),
            "missing_in_gaps": sum(r["frames"] for r in runs if r["kind"] == "gap"),
            "missing_no_room": sum(r["frames"] for r in runs if r["kind"] == "no_room"),
            "missing_runs": runs[:20],
            "repeated": len(block_repeats), "repeated_source_loop": len(repeats) - len(block_repeats),
            "repeats": repeats[:20], "backward": backward, "unreadable": unreadable,
            "min_margin": round(min(r["margin"] for r in frames), 3) if frames else None}


def video_clock(frames, period_ms):
    """Block time against frame number: t - (number + source repeats so far) * period should be
    constant but for the sender's capture jitter; its linear trend (ppm) and spread."""
    points, repeats = [], 0
    for read in frames:
        if read.get("source_repeat"):
            repeats += 1
        if read.get("unwrapped") is None or read.get("source_repeat"):
            continue
        points.append((read["at_ms"], read["at_ms"] - (read["unwrapped"] + repeats) * period_ms))
    if len(points) < 10:
        return None
    t, residual = np.array(points).T
    slope, intercept = np.polyfit(t, residual, 1)
    spread = residual - (slope * t + intercept)
    # Steps: where the median of the next 15 residuals leaves the median of the previous 15 by > 8 ms.
    steps, index = [], 15
    while index < len(residual) - 15:
        jump = float(np.median(residual[index:index + 15]) - np.median(residual[index - 15:index]))
        if abs(jump) > 8:
            window = range(max(1, index - 8), min(len(t), index + 8))
            late = max(window, key=lambda k: t[k] - t[k - 1])
            steps.append({"at_ms": round(float(t[index])), "jump_ms": round(jump, 1),
                          "largest_block_step_near_ms": round(float(t[late] - t[late - 1]), 1)})
            index += 30
            continue
        index += 1
    return {"trend_ppm": round(float(slope) * 1e6, 1), "residual_p99_ms": round(float(np.percentile(np.abs(spread), 99)), 2),
            "residual_max_ms": round(float(np.abs(spread).max()), 2), "steps": steps,
            "how": "residual = block time - (frame number + source loop repeats so far) * frame period; steps: its level "
                   "changes (median of 15 frames after vs before) over 8 ms, with the longest block step near each "
                   "(a capture stall on the sender shows as one late frame, then the schedule stays that late)"}


def find_flashes(frames, every):
    """Frames whose luma above the band jumps far above their neighbours' (median of 4 each side);
    of consecutive flash frames (the loop's repeated frame 0) only the first."""
    luma = np.array([r["top_luma"] for r in frames], dtype=np.float64)
    flashes = []
    for index in range(len(frames)):
        around = np.concatenate([luma[max(0, index - 4):index], luma[index + 1:index + 5]])
        if len(around) and luma[index] - float(np.median(around)) > FLASH_JUMP:
            if flashes and flashes[-1] == index - 1 and frames[index].get("unwrapped") == frames[index - 1].get("unwrapped"):
                continue
            flashes.append(index)
    numbered = [frames[i].get("unwrapped") for i in flashes]
    off_schedule = sum(1 for n in numbered if n is not None and n % every != 0)
    return flashes, off_schedule


def audio_timeline(chunks, rate):
    """The decoded audio placed on the blocks' timeline (zeros where no block is: DTX, losses)."""
    if not chunks:
        return None, None
    start = chunks[0][0]
    end = max(at + len(s) * 1000 / rate for at, s in chunks)
    signal = np.zeros(int(round((end - start) * rate / 1000)) + 1, dtype=np.float32)
    for at, samples in chunks:
        offset = int(round((at - start) * rate / 1000))
        signal[offset:offset + len(samples)] = samples[:len(signal) - offset]
    return start, signal


def find_beeps(start, signal, rate, frequency):
    """Onsets of the beep's frequency: the signal shifted down by `frequency` and averaged over
    BEEP_WINDOW_MS (a ~500 Hz wide band around it), its magnitude the envelope; an onset is where
    the envelope first reaches half of that beep's own peak, less half the window (the average's
    ramp), once the envelope passes BEEP_THRESHOLD of the track's peak."""
    if signal is None or not len(signal):
        return [], 0.0
    n = np.arange(len(signal))
    shifted = signal * np.exp(-2j * np.pi * frequency * n / rate)
    window = max(1, int(rate * BEEP_WINDOW_MS / 1000))
    cumulative = np.concatenate([[0], np.cumsum(shifted)])
    envelope = np.abs(cumulative[window:] - cumulative[:-window]) / window * 2
    peak = float(np.percentile(envelope, 99.99)) if len(envelope) else 0.0
    if peak <= 1e-4:
        return [], peak
    loud = np.flatnonzero(envelope > BEEP_THRESHOLD * peak)
    onsets = []
    last = -10 ** 12
    refractory = int(rate * BEEP_REFRACTORY_MS / 1000)
    for index in loud:
        if index - last < refractory:
            continue
        last = index
        base = max(0, index - window * 4)
        span = envelope[base:index + int(rate * 0.05)]
        local_peak = float(span.max())
        crossing = base + int(np.flatnonzero(span >= local_peak / 2)[0])
        onsets.append(start + (crossing - window / 2) * 1000 / rate)
    return onsets, peak


def audio_clock(beeps):
    """The beeps are exactly one second apart in the wav: their spacing in the file, against that."""
    if len(beeps) < 3:
        return None
    beeps = np.asarray(beeps)
    seconds = np.round((beeps - beeps[0]) / 1000)
    slope, intercept = np.polyfit(seconds, beeps, 1)
    error = beeps - (beeps[0] + seconds * 1000)
    intervals = np.diff(beeps) / np.maximum(1, np.diff(seconds))
    return {"interval_median_ms": round(float(np.median(intervals)), 3), "interval_min_ms": round(float(intervals.min()), 2),
            "interval_max_ms": round(float(intervals.max()), 2), "trend_ppm": round((float(slope) - 1000) * 1000, 1),
            "max_off_1s_grid_ms": round(float(np.abs(error).max()), 2)}


def pair_markers(flash_times, beep_times):
    """Each flash's beep: the one nearest flash + the markers' typical offset (the median of every
    flash's nearest-beep offset, taken modulo the one-second marker period, so a beep a little
    earlier or later than its flash pairs alike). Returns (flash index, beep time) pairs."""
    if not flash_times or not beep_times:
        return []
    beeps = np.asarray(beep_times)
    nearest = []
    for flash in flash_times:
        offset = float(beeps[np.argmin(np.abs(beeps - flash))] - flash)
        nearest.append((offset + 500) % 1000 - 500)
    typical = float(np.median(nearest))
    pairs = []
    for index, flash in enumerate(flash_times):
        target = flash + typical
        beep = float(beeps[np.argmin(np.abs(beeps - target))])
        if abs(beep - target) < 250:
            pairs.append((index, beep))
    return pairs


def av_offsets(frames, audio, frame_every, beep_hz, period_ms):
    flashes, off_schedule = find_flashes(frames, frame_every)
    flash_times = [frames[i]["at_ms"] for i in flashes]
    # source loop repeats before each flash: the sender's video is that many periods later from there on
    repeats_before, count = [], 0
    flash_set = set(flashes)
    for index, read in enumerate(frames):
        if read.get("source_repeat"):
            count += 1
        if index in flash_set:
            repeats_before.append(count)
    rate = audio["sample_rate"] or 48000
    start, signal = audio_timeline(audio["chunks"], rate)
    beeps, peak = find_beeps(start, signal, rate, beep_hz)
    pairs = pair_markers(flash_times, beeps)
    # A beep at the audio track's very start may be cut (the track began inside it, after DTX
    # silence): its onset is the track's start, not the beep's. Such a pair says nothing.
    pairs = [(i, beep) for i, beep in pairs if beep - start >= BEEP_MS]
    video_seconds = (frames[-1]["at_ms"] - frames[0]["at_ms"]) / 1000 if len(frames) > 1 else 0
    audio_seconds = len(signal) / rate if signal is not None else 0
    out = {"flashes": len(flashes), "flashes_off_schedule": off_schedule, "beeps": len(beeps), "pairs": len(pairs),
           "video_seconds": round(video_seconds, 2), "audio_seconds": round(audio_seconds, 2),
           "flashes_per_second": round(len(flashes) / video_seconds, 3) if video_seconds else None,
           "beeps_per_second": round(len(beeps) / audio_seconds, 3) if audio_seconds else None,
           "beep_envelope_peak": round(peak, 4), "audio_clock": audio_clock(beeps)}
    if pairs:
        offsets = [beep - flash_times[i] for i, beep in pairs]
        corrected = [o + repeats_before[i] * period_ms for (i, _), o in zip(pairs, offsets)]
        first = offsets[0]
        out.update({"first_offset_ms": round(first, 2), "max_drift_from_first_ms": round(max(abs(o - first) for o in offsets), 2),
                    "max_drift_source_corrected_ms": round(max(abs(o - corrected[0]) for o in corrected), 2),
                    "source_loop_repeats": count,
                    "offset_min_ms": round(min(offsets), 2), "offset_max_ms": round(max(offsets), 2),
                    "drift_trend_ms_per_min": round(float(np.polyfit([flash_times[i] for i, _ in pairs], corrected, 1)[0]) * 60000, 2)
                    if len(pairs) > 2 else None,
                    "markers": [[round(flash_times[i]), frames[flashes[i]].get("unwrapped"), round(o, 1), round(c, 1)]
                                for (i, _), o, c in zip(pairs, offsets, corrected)],
                    "markers_columns": ["flash_at_ms", "frame_number_unwrapped", "offset_ms", "offset_source_corrected_ms"]})
    return out


def microphone_rate(publisher):
    """Seconds of samples Chromium's fake microphone delivered per real second between the start
    snapshot and the final stats (media-source totalSamplesDuration); None without both."""
    def audio_source(snapshot):
        return next((m for m in (snapshot or {}).get("media_source") or []
                     if m.get("kind") == "audio" and m.get("totalSamplesDuration") is not None and m.get("timestamp")), None)
    start, end = audio_source((publisher or {}).get("stats_at_start")), audio_source(publisher)
    if not start or not end:
        return None
    wall = (end["timestamp"] - start["timestamp"]) / 1000
    return (end["totalSamplesDuration"] - start["totalSamplesDuration"]) / wall if wall >= 5 else None


def isolated_blips(values, limit_ms=10.0, agree_ms=6.0):
    """Indexes of values off by more than limit_ms from the median of two neighbours each side,
    while those neighbours agree within agree_ms: one beep whose first Opus packet was lost (Opus
    goes without NACK; the onset is then a frame late), not a stream that moved (sync moves a
    whole stream, and its blocks stay on the 20 ms grid, which the timeline checks)."""
    out = []
    for index in range(len(values)):
        around = values[max(0, index - 2):index] + values[index + 1:index + 3]
        if len(around) < 2:
            continue
        middle = float(np.median(around))
        if max(abs(v - middle) for v in around) <= agree_ms and abs(values[index] - middle) > limit_ms:
            out.append(index)
    return out


def correct_for_microphone(marker, rate):
    """On a busy host the fake microphone falls behind real time: the wav's second k is captured
    (1/rate - 1) * k s late, so its beep is that much later against the flashes on the sender's
    own clocks too (the SRs say so, and a recorder that keeps sync keeps it). That is taken out
    of each pair's source-corrected offset."""
    rows = marker.get("markers")
    if not rows:
        return
    first = rows[0][0]
    device = [row[3] - (row[0] - first) * (1 / rate - 1 if rate else 0) for row in rows]
    blips = set(isolated_blips(device))
    kept = [d for index, d in enumerate(device) if index not in blips]
    if rate:
        marker["microphone_rate"] = round(rate, 6)
    marker["blips"] = [rows[index][0] for index in sorted(blips)]
    marker["max_drift_device_corrected_ms"] = round(max(abs(d - kept[0]) for d in kept), 2)


# --- what the sender sent ---

def layer_counts(snapshot):
    layers = (snapshot.get("video") or {}).get("layers") or {}
    return {rid: (values or {}).get("framesSent") or 0 for rid, values in layers.items()}


def sent_summary(publisher, truth):
    video = publisher.get("video") or {}
    out = {"video": {"frames_sent": video.get("frames_sent"), "frames_encoded": video.get("frames_encoded"),
                     "keyframes_encoded": video.get("keyframes_encoded"),
                     "layers": {rid: {k: v for k, v in (values or {}).items() if k in ("framesSent", "framesEncoded",
                                                                                         "keyFramesEncoded", "frameWidth",
                                                                                         "frameHeight", "scalabilityMode")}
                                for rid, values in (video.get("layers") or {}).items()}},
           "audio": {"packets_sent": (publisher.get("audio") or {}).get("packets_sent")}}
    snapshots = publisher.get("stats_snapshots") or []
    start = publisher.get("stats_at_start")
    if not start or not publisher.get("video"):
        out["how"] = "no stats_at_start snapshot in the truth: frames sent during the subscription unknown"
        return out, None, None
    # The forwarded layer over time: the recorder's initial rid, then each switch (at its snapshot).
    layers = layer_counts(publisher)
    single = len(layers) == 1
    rid = truth.get("initial_rid") or "r2"
    marks = [("at_start", start, rid)]
    for switch in truth.get("layer_switches") or []:
        if switch.get("why") == "initial" or publisher["connection_id"] not in (switch.get("senders") or []):
            continue
        snap = next((s for s in snapshots if s.get("name") == switch.get("snapshot")), None)
        if snap:
            marks.append((switch["snapshot"], snap, switch["rid"]))
    marks.append(("final", publisher, None))
    intervals, total = [], 0
    for (name, snap, rid), (next_name, next_snap, _) in zip(marks, marks[1:]):
        key = next(iter(layers)) if single else rid
        begin, end = layer_counts(snap).get(key, 0), layer_counts(next_snap).get(key, 0)
        intervals.append({"layer": key, "from": name, "to": next_name, "frames_sent": end - begin})
        total += end - begin
    audio_sent = (publisher.get("audio") or {}).get("packets_sent", 0) - ((start.get("audio") or {}).get("packets_sent") or 0)
    lag = (start.get("at_unix_ms") or 0) - (start.get("requested_at_unix_ms") or 0)
    elapsed = (publisher.get("stats_at_unix_ms") or 0) - (start.get("at_unix_ms") or 0)
    # What the lag hid, at the interval's own rate: the frames sent between webrtcup and the snapshot.
    lag_frames = round(total * lag / elapsed, 1) if elapsed > 0 and lag > 0 else 0
    out.update({"stats_at_start_unix_ms": start.get("at_unix_ms"), "snapshot_lag_ms": lag,
                "forwarded_intervals": intervals, "video_frames_sent_while_subscribed": total,
                "video_frames_sent_in_snapshot_lag": lag_frames,
                "audio_packets_sent_while_subscribed": audio_sent,
                "how": ("frames sent while subscribed = sum over the intervals between the snapshots (the recorder's "
                        "webrtcup -> each layer switch -> the page's final getStats) of the forwarded layer's framesSent "
                        "delta (one outbound-rtp without rid: that one); kept_ratio = video blocks / that. The start "
                        "snapshot is taken snapshot_lag_ms after webrtcup (frames sent in that lag count as before), "
                        "recbot can only start at the first keyframe Janus forwards after it, and a switch takes "
                        "effect at the new layer's next keyframe: a few frames either way at each boundary. "
                        "kept_ratio_lag_adjusted adds video_frames_sent_in_snapshot_lag (the lag at the interval's mean "
                        "rate) to the frames sent, or, when the file starts before the snapshot, "
                        "video_frames_sent_in_snapshot_lag_observed (the span of frame numbers the file shows before "
                        "it, missing ones included); the kept check uses it. kept_ratio_distinct counts distinct frame "
                        "numbers instead of blocks (a picture written twice counts once).")})
    return out, total + lag_frames, audio_sent


def frames_before_snapshot(parts, frames, snapshot_unix_ms):
    """The frames the sender can have sent between the file's first picture and the start snapshot:
    the span of frame numbers the first part shows before the snapshot's wall time, missing numbers
    included (an upper bound: a number lost on the way or by recbot counts as sent). None when the
    file starts after the snapshot (nothing recordable was hidden by the lag) or cannot be placed."""
    if not snapshot_unix_ms or not parts:
        return None
    start = (parts[0][2] or {}).get("start_timestamp")
    if not start:
        return None
    try:
        origin = datetime.datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return None
    numbers = [f["unwrapped"] for f in frames
               if f.get("unwrapped") is not None and f.get("at_ms") is not None and origin + f["at_ms"] <= snapshot_unix_ms]
    if not numbers:
        return None
    return max(numbers) - min(numbers) + 1


# --- one sender ---

def judge_sender(connection, parts, publisher, truth, verify, args):
    scheme = (publisher or {}).get("media_scheme") or {}
    source = (scheme.get("width"), scheme.get("height")) if scheme.get("width") else None
    wrap = scheme.get("loop_frames") or chromium_publishers.FPS * chromium_publishers.LOOP_SECONDS
    every = (scheme.get("flash") or {}).get("every_frames") or chromium_publishers.FPS
    beep_hz = (scheme.get("audio") or {}).get("beep_hz") or 1000
    entry = {"codec": (publisher or {}).get("codec"), "client_id": (publisher or {}).get("client_id"),
             "files": [p for _, p, _ in parts]}
    period = 1000 / ((scheme.get("fps")) or chromium_publishers.FPS)
    all_frames, timelines, markers, clocks, blocks = [], [], [], [], {"video": 0, "audio": 0, "video_keyframes": 0}
    decode_errors = {"video": 0, "audio": 0}
    sizes = {}
    for part, path, sidecar in parts:
        decoded = decode_file(path, source)
        blocks["video"] += len(decoded["video"]["pts"])
        blocks["audio"] += len(decoded["audio"]["pts"])
        blocks["video_keyframes"] += decoded["video"]["keyframes"]
        for kind in decode_errors:
            decode_errors[kind] += decoded[kind]["decode_errors"]
        for size, count in decoded["video"]["sizes"].items():
            sizes[size] = sizes.get(size, 0) + count
        timelines.append({"part": part, "video": timeline(decoded["video"]["pts"]), "audio": timeline(decoded["audio"]["pts"])})
        frames = decoded["video"]["frames"]
        frame_numbers(frames, wrap, period)  # unwraps and marks this part's frames
        markers.append({"part": part, **av_offsets(frames, decoded["audio"], every, beep_hz, period)})
        clocks.append({"part": part, "video": video_clock(frames, period)})
        all_frames.extend(frames)
    entry["blocks"] = {**blocks, "decoded_video_frames": len(all_frames), "decode_errors": decode_errors, "video_sizes": sizes}
    entry["frame_numbers"] = frame_numbers(all_frames, wrap, period)
    entry["video_clock"] = clocks[0]["video"] if len(clocks) == 1 else clocks
    entry["verify"] = {p: verify.get("files", {}).get(p) for _, p, _ in parts} if verify else None
    sent, video_sent, audio_sent = sent_summary(publisher or {}, truth) if publisher else ({"how": "not in the truth"}, None, None)
    observed = frames_before_snapshot(parts, all_frames, sent.get("stats_at_start_unix_ms"))
    if observed is not None and video_sent is not None:
        # What the file itself shows of the lag replaces the mean-rate estimate: a page whose
        # snapshot lags is stalled, and its encoder with it (CI: a 1.6 s lag estimated at 42
        # frames where the numbers show 13 were captured).
        sent["video_frames_sent_in_snapshot_lag_observed"] = observed
        video_sent = (sent.get("video_frames_sent_while_subscribed") or 0) + observed
    entry["sent"] = sent
    raw_sent = sent.get("video_frames_sent_while_subscribed")
    entry["kept_ratio"] = round(blocks["video"] / raw_sent, 5) if raw_sent else None
    entry["kept_ratio_lag_adjusted"] = round(blocks["video"] / video_sent, 5) if video_sent else None
    entry["kept_ratio_distinct"] = (round(entry["frame_numbers"].get("distinct", 0) / video_sent, 5)
                                    if video_sent and "frame_numbers" in entry else None)
    entry["audio_kept_ratio"] = round(blocks["audio"] / audio_sent, 5) if audio_sent else None
    entry["av_offset_ms"] = markers[0] if len(markers) == 1 else {"parts": markers}
    entry["timeline"] = timelines[0] if len(timelines) == 1 else {"parts": timelines}
    # checks
    checks = {}
    if entry["kept_ratio_lag_adjusted"] is not None:
        checks["kept"] = {"value": entry["kept_ratio_lag_adjusted"], "min": args.min_kept,
                          "pass": entry["kept_ratio_lag_adjusted"] >= args.min_kept}
    else:
        checks["kept"] = {"value": None, "min": args.min_kept, "pass": False, "why": "frames sent while subscribed unknown"}
    fn = entry["frame_numbers"]
    ratio = fn.get("missing_ratio")
    checks["missing"] = {"value": ratio, "max": args.max_missing_ratio, "pass": ratio is not None and ratio <= args.max_missing_ratio}
    repeated_max = args.max_repeated
    checks["repeated"] = {"value": fn.get("repeated"), "max": repeated_max, "pass": (fn.get("repeated") or 0) <= repeated_max}
    rate = microphone_rate(publisher)
    for marker in markers:
        correct_for_microphone(marker, rate)
    drifts = [m.get("max_drift_device_corrected_ms", m.get("max_drift_source_corrected_ms")) for m in markers]
    worst = max((d for d in drifts if d is not None), default=None)
    checks["av_drift"] = {"value": worst, "max": args.max_av_drift_ms, "pass": worst is not None and worst <= args.max_av_drift_ms and
                          all(d is not None for d in drifts)}
    monotonic = all(t[k].get("backward_steps", 0) == 0 and t[k].get("repeated_timestamps", 0) == 0
                    for t in timelines for k in ("video", "audio"))
    checks["timeline_monotonic"] = {"pass": monotonic}
    checks["decode"] = {"value": decode_errors, "pass": sum(decode_errors.values()) == 0}
    if verify:
        oks = [(verify.get("files", {}).get(p) or {}).get("ok") for _, p, _ in parts]
        checks["verify"] = {"value": oks, "pass": all(ok is True for ok in oks)}
    entry["checks"] = checks
    entry["pass"] = all(c["pass"] for c in checks.values())
    return entry


def table(result):
    lines = [f"{'connection':<27} {'codec':<5} {'video':>5} {'audio':>5} {'sent':>5} {'kept':>7} {'miss':>4} {'rep':>3} "
             f"{'unrd':>4} {'fl/bp/pr':>9} {'av1st':>7} {'drift':>6} {'drift*':>6} {'offgrid v/a':>11} {'verify':>6} pass"]
    for connection, entry in result["publishers"].items():
        fn, av_ = entry.get("frame_numbers") or {}, entry.get("av_offset_ms") or {}
        if "parts" in av_:
            av_ = av_["parts"][0]
        tl = entry.get("timeline") or {}
        if "parts" in tl:
            tl = tl["parts"][0]
        verify = entry["checks"].get("verify", {}).get("pass")
        sent = entry["sent"].get("video_frames_sent_while_subscribed")
        lines.append(f"{connection:<27} {entry.get('codec') or '?':<5} {entry['blocks']['video']:>5} {entry['blocks']['audio']:>5} "
                     f"{sent if sent is not None else '-':>5} {entry['kept_ratio_lag_adjusted'] if entry['kept_ratio_lag_adjusted'] is not None else '-':>7} "
                     f"{fn.get('missing_inside_span', '-'):>4} {fn.get('repeated', '-'):>3} {fn.get('unreadable', '-'):>4} "
                     f"{str(av_.get('flashes')) + '/' + str(av_.get('beeps')) + '/' + str(av_.get('pairs')):>9} "
                     f"{av_.get('first_offset_ms', '-'):>7} {av_.get('max_drift_from_first_ms', '-'):>6} {av_.get('max_drift_source_corrected_ms', '-'):>6} "
                     f"{str(tl.get('video', {}).get('off_grid_steps')) + '/' + str(tl.get('audio', {}).get('off_grid_steps')):>11} "
                     f"{'-' if verify is None else ('ok' if verify else 'FAIL'):>6} {'PASS' if entry['pass'] else 'FAIL'}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--truth", required=True, help="sora_janus_server.py's --truth file")
    parser.add_argument("--session", help="recbot's session id (default: the latest)")
    parser.add_argument("--recbot", help="recbot binary: lists recordings through the catalog and runs `recbot verify --json`")
    parser.add_argument("--min-kept", type=float, default=0.995)
    parser.add_argument("--max-av-drift-ms", type=float, default=20.0)
    parser.add_argument("--max-missing-ratio", type=float, default=0.005)
    parser.add_argument("--max-repeated", type=int, default=0,
                        help="pictures allowed twice (a layer switch whose second keyframe came after recbot's keyframe wait)")
    parser.add_argument("--table", action="store_true", help="also print a table to stderr")
    args = parser.parse_args()
    try:
        truth = json.load(open(args.truth))
        session, recordings = find_recordings(args)
    except (OSError, json.JSONDecodeError) as error:
        print(f"cannot read: {error}", file=sys.stderr)
        return 2
    publishers = {p["connection_id"]: p for p in truth.get("publishers") or []}
    by_sender = {}
    for connection, part, path, sidecar in recordings:
        by_sender.setdefault(connection, []).append((part, path, sidecar))
    verify = verify_files(args.recbot, args.data_dir, [path for _, _, path, _ in recordings])
    result = {"session": session, "truth": os.path.abspath(args.truth),
              "thresholds": {"min_kept": args.min_kept, "max_av_drift_ms": args.max_av_drift_ms,
                             "max_missing_ratio": args.max_missing_ratio},
              "publishers": {}}
    for connection in list(publishers) + [c for c in by_sender if c not in publishers]:
        parts = by_sender.get(connection)
        if not parts:
            result["publishers"][connection] = {"codec": publishers[connection].get("codec"), "files": [], "pass": False,
                                                "checks": {"recorded": {"pass": False}}, "blocks": {"video": 0, "audio": 0},
                                                "sent": {}, "kept_ratio": None}
            continue
        result["publishers"][connection] = judge_sender(connection, parts, publishers.get(connection), truth, verify, args)
    failed = {c: [name for name, check in e["checks"].items() if not check["pass"]]
              for c, e in result["publishers"].items() if not e["pass"]}
    result["summary"] = {"publishers": len(result["publishers"]), "passed": len(result["publishers"]) - len(failed),
                         "failed": failed, "pass": not failed and bool(result["publishers"])}
    json.dump(result, sys.stdout, indent=2, default=float)
    print()
    if args.table:
        print(table(result), file=sys.stderr)
    return 0 if result["summary"]["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
