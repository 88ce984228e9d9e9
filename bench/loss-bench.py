#!/usr/bin/env python3
"""Loss-recovery and A/V-sync benchmark: recbot against the bundled test server on loopback.

  bench/loss-bench.py [--recbot PATH] [--loss 0,5,20] [--seconds 20] [--seeds 1,2] [--delay-audio-ms 300]
                       [--harsh 15:4:60,30:6:120] [--server-arg=--audio-nack] [--server-arg=--no-rtx]

For each loss level (and seed) the test server's publisher (aiortc: VP8 + RTX, Opus) sends
through a path that drops that share of its RTP, retransmissions included; recbot records it.
The table shows, per run: video frames the publisher sent and the file holds (decoded with
PyAV: every frame must decode), that share, the share relative to the loss-free run of the same
invocation (both lose the frames sent while recbot connects and leaves, so the ratio isolates
what loss costs), audio frames likewise, and recbot's catalog counters (packets recovered,
lost after recovery, keyframe requests per 10 s). --harsh adds runs on a harsh path: bursty
loss (Gilbert-Elliott, PERCENT in bursts of about BURST packets, on the publisher's whole path,
retransmissions included) plus JITTER ms of per-packet random delay that reorders packets; their
rows also show the video timeline as `recbot verify` sees it (steps off the frame grid, and
steps that go back or repeat). A last run delays the publisher's audio on the wire and reports
the file's audio-minus-video offset at the sync markers, from the first marker on.
Needs the packages deploy/install-deps.sh installs; prints a table and exits 0.
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "..", "Tests", "Peers")


def run_session(recbot, seconds, server_args):
    work = tempfile.mkdtemp(prefix="recbot-bench-")
    truth_path = os.path.join(work, "truth.json")
    server = subprocess.Popen([sys.executable, os.path.join(PEERS, "sora_test_server.py"), "--publisher", "vp8", "--truth", truth_path,
                               *server_args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = json.loads(server.stdout.readline())["url"]
    data = os.path.join(work, "data")
    joined = subprocess.run([recbot, "join", "--channel", "bench", "--url", url, "--data-dir", data, "--allow-address", "127.0.0.1/32",
                             "--duration", f"{seconds}s"], capture_output=True, text=True)
    server.wait(timeout=30)
    with open(truth_path) as handle:
        truth = json.load(handle)
    db = sqlite3.connect(os.path.join(data, "catalog.sqlite"))
    db.row_factory = sqlite3.Row
    row = dict(db.execute("SELECT * FROM recordings").fetchone())
    return joined.returncode, truth["publishers"][0], row, os.path.join(data, row["path"])


def timeline(recbot, path):
    """recbot verify's view of the video track's timeline: (off-grid steps, backward + repeated)."""
    checked = subprocess.run([recbot, "verify", path, "--json"], capture_output=True, text=True)
    try:
        tracks = json.loads(checked.stdout)[0]["report"]["tracks"]
    except (ValueError, IndexError, KeyError):
        return None
    video = next((t for t in tracks if t["kind"] == "video"), None)
    if video is None:
        return None
    line = video["timeline"]
    return line["off_grid_steps"], line["backward_steps"] + line["repeated_timestamps"]


def decode(path):
    import av
    counts = {"video": 0, "audio": 0, "errors": 0}
    with av.open(path) as container:
        for stream_kind in ("video", "audio"):
            container.seek(0)
            streams = [s for s in container.streams if s.type == stream_kind]
            if not streams:
                continue
            for packet in container.demux(streams[0]):
                if packet.size == 0:
                    continue
                counts[stream_kind] += 1
                try:
                    packet.decode()
                except av.error.FFmpegError:
                    counts["errors"] += 1
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recbot", default=os.path.join(HERE, "..", ".build", "debug", "recbot"))
    parser.add_argument("--loss", default="0,5,20", help="loss percentages; 0 first, as the baseline")
    parser.add_argument("--seeds", default="1", help="loss seeds, one run each")
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--delay-audio-ms", type=int, default=300)
    parser.add_argument("--harsh", default="", help="PERCENT:BURST:JITTER_MS runs, comma-separated (e.g. 15:4:60,30:6:120)")
    parser.add_argument("--server-arg", action="append", default=[], help="extra test-server flag for the loss runs (e.g. --audio-nack, --no-rtx)")
    args = parser.parse_args()

    header = f"{'loss':>5} {'seed':>4} {'exit':>4} {'video sent':>10} {'in file':>8} {'share':>7} {'vs clean':>8} " \
             f"{'audio share':>11} {'decode err':>10} {'recovered':>9} {'lost':>6} {'NACKed':>7} {'KF req/10s':>10}"
    print(header)
    baseline = None
    for loss in [float(x) for x in args.loss.split(",")]:
        for seed in [int(x) for x in args.seeds.split(",")]:
            status, publisher, row, path = run_session(args.recbot, args.seconds, ["--loss", str(loss), "--loss-seed", str(seed), *args.server_arg])
            counts = decode(path)
            share = counts["video"] / max(1, publisher["video_frames_sent"])
            audio_share = counts["audio"] / max(1, publisher["audio_frames_sent"])
            if loss == 0 and baseline is None:
                baseline = share
            relative = share / baseline if baseline else float("nan")
            requests = row["keyframe_requests"] * 10 / max(1, args.seconds)
            print(f"{loss:>5.0f} {seed:>4} {status:>4} {publisher['video_frames_sent']:>10} {counts['video']:>8} {share:>7.2%} {relative:>8.2%} "
                  f"{audio_share:>11.2%} {counts['errors']:>10} {row['packets_recovered']:>9} {row['packets_lost']:>6} {row['nacks_sent']:>7} "
                  f"{requests:>10.1f}")

    harsh = [spec.split(":") for spec in args.harsh.split(",") if spec]
    if harsh:
        print(f"\n{'burst loss':>10} {'jitter':>6} {'seed':>4} {'exit':>4} {'video sent':>10} {'in file':>8} {'share':>7} {'vs clean':>8} "
              f"{'decode err':>10} {'off-grid':>8} {'back/rep':>8} {'recovered':>9} {'lost':>6} {'NACKed':>7} {'KF req/10s':>10}")
    for percent, burst, jitter in harsh:
        for seed in [int(x) for x in args.seeds.split(",")]:
            status, publisher, row, path = run_session(args.recbot, args.seconds, ["--burst-loss", f"{percent}:{burst}", "--jitter-ms", jitter,
                                                                                   "--loss-seed", str(seed), *args.server_arg])
            counts = decode(path)
            share = counts["video"] / max(1, publisher["video_frames_sent"])
            relative = share / baseline if baseline else float("nan")
            grid, backwards = timeline(args.recbot, path) or ("?", "?")
            requests = row["keyframe_requests"] * 10 / max(1, args.seconds)
            print(f"{percent + '%/' + burst:>10} {jitter + 'ms':>6} {seed:>4} {status:>4} {publisher['video_frames_sent']:>10} {counts['video']:>8} "
                  f"{share:>7.2%} {relative:>8.2%} {counts['errors']:>10} {grid:>8} {backwards:>8} {row['packets_recovered']:>9} "
                  f"{row['packets_lost']:>6} {row['nacks_sent']:>7} {requests:>10.1f}")

    status, publisher, row, path = run_session(args.recbot, args.seconds, ["--delay-audio-ms", str(args.delay_audio_ms)])
    checked = subprocess.run([sys.executable, os.path.join(HERE, "..", "Tests", "Checkers", "av_sync_check.py"), path, "--json"], capture_output=True, text=True)
    sync = json.loads(checked.stdout)
    video, audio = sync.get("video_marker_times", []), sync.get("audio_marker_times", [])
    offsets = []
    for t in video:
        nearest = min(audio, key=lambda a: abs(a - t), default=None)
        if nearest is not None and abs(nearest - t) < 0.5:
            offsets.append((nearest - t) * 1000)
    if offsets:
        print(f"\naudio delayed {args.delay_audio_ms} ms on the wire: {len(offsets)} markers from the first on, audio - video "
              f"median {statistics.median(offsets):+.1f} ms, worst {max(offsets, key=abs):+.1f} ms (exit {status})")
    else:
        print(f"\naudio delayed {args.delay_audio_ms} ms: no markers paired ({sync})")


if __name__ == "__main__":
    main()
