#!/usr/bin/env python3
"""recbot and the GStreamer webrtcbin recorder (bench/gst_recorder.py) recording the same Janus room
side by side: real Chromium publishers (Tests/Peers/sora_janus_server.py --recorders 2), one run.

  bench/janus_side_by_side.py --recbot PATH [--codecs vp8,vp9,av1,h264] [--duration 30] [--work DIR]
                              [--loss PERCENT] [--gst-arg=--h264-matroska ...]

recbot connects first (recorder 1: --simulcast-rid r1), webrtcbin a second later (recorder 2: it
asks for no rid, so the front forwards r2); both get the --layer-switch-after switches (8 s: r0,
16 s: r2) counted from their own answers, and the server ends both at once after --duration.
For each publisher, the table gives the frames it sent on the layers forwarded to each recorder
while that recorder was subscribed (judge_recording.sent_summary over the truth seen from that
connection, lag adjusted), and what each recorder's file holds: video packets (blocks) and the
frames PyAV decodes without error, and the share of the frames sent.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import av

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "Tests", "Peers")
sys.path.insert(0, PEERS)
import judge_recording  # noqa: E402
from janus_room import media_address  # noqa: E402


def count_frames(path):
    """(video packets, frames decoded, decode errors, audio packets) of a WebM/Matroska file."""
    packets = decoded = errors = audio = 0
    try:
        with av.open(path) as container:
            video = container.streams.video[0] if container.streams.video else None
            for packet in container.demux():
                if packet.size == 0:
                    continue
                if packet.stream.type == "audio":
                    audio += 1
                    continue
                if packet.stream is not video:
                    continue
                packets += 1
                try:
                    decoded += len(video.codec_context.decode(packet))
                except av.error.FFmpegError:
                    errors += 1
            if video is not None:
                try:
                    decoded += len(video.codec_context.decode(None))
                except av.error.FFmpegError:
                    pass
    except (av.error.FFmpegError, OSError) as error:
        return None, None, str(error), None
    return packets, decoded, errors, audio


def wait_listening(path, process, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as text:
                line = text.readline()
            if line.endswith("\n"):
                return json.loads(line)
        if process.poll() is not None:
            break
        time.sleep(0.25)
    raise SystemExit(f"the front did not start: see {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recbot", required=True)
    parser.add_argument("--codecs", default="vp8,vp9,av1,h264")
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--loss", type=float, default=None, help="the front's --loss for both recorders' paths")
    parser.add_argument("--work", help="default: a new temporary directory")
    parser.add_argument("--gst-arg", action="append", default=[], help="extra gst_recorder.py flag (e.g. --gst-arg=--h264-matroska)")
    args = parser.parse_args()
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="recbot-side-by-side-"))
    os.makedirs(work, exist_ok=True)
    truth_path = os.path.join(work, "truth.json")
    server_command = [sys.executable, os.path.join(PEERS, "sora_janus_server.py"), "--chromium", args.codecs, "--duration", str(args.duration),
                      "--truth", truth_path, "--recorders", "2", "--layer-switch-after", "8:r0", "--layer-switch-after", "16:r2",
                      "--max-seconds", str(args.duration + 120)]
    if args.loss is not None:
        server_command += ["--loss", str(args.loss)]
    processes = []
    with open(os.path.join(work, "server.out"), "wb") as out, open(os.path.join(work, "server.log"), "wb") as log:
        server = subprocess.Popen(server_command, stdout=out, stderr=log, stdin=subprocess.DEVNULL)
    processes.append(server)
    try:
        listening = wait_listening(os.path.join(work, "server.out"), server)
        url = listening["url"]
        with open(os.path.join(work, "recbot.log"), "wb") as log:
            recbot = subprocess.Popen([args.recbot, "join", "--channel", "sora", "--url", url, "--duration", f"{int(args.duration + 60)}s",
                                       "--simulcast-rid", "r1", "--data-dir", os.path.join(work, "recbot")],
                                      stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        processes.append(recbot)
        time.sleep(1.0)  # recbot is recorder 1 (the truth's top level), webrtcbin recorder 2
        ice = [arg for ip in filter(None, [media_address()]) for arg in ("--ice-address", ip)]
        with open(os.path.join(work, "gst.out"), "wb") as out, open(os.path.join(work, "gst.log"), "wb") as log:
            gst = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "bench", "gst_recorder.py"), "--url", url, "--channel", "sora",
                                    "--out", os.path.join(work, "gst"), *ice, *args.gst_arg],
                                   stdout=out, stderr=log, stdin=subprocess.DEVNULL)
        processes.append(gst)
        recbot_status = recbot.wait(args.duration + 180)
        gst_status = gst.wait(60)
        server.wait(60)
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
    truth = json.load(open(truth_path))
    views = {1: truth}
    second = os.path.join(work, "truth.recorder2.json")
    if os.path.exists(second):
        views[2] = json.load(open(second))
    rows = []
    for publisher in truth["publishers"]:
        connection = publisher["connection_id"]
        row = {"codec": publisher["codec"], "connection_id": connection, "frames_encoded_total": (publisher.get("video") or {}).get("frames_sent")}
        for index, name in ((1, "recbot"), (2, "gst")):
            view = views.get(index)
            entry = next((p for p in (view or {}).get("publishers", []) if p["connection_id"] == connection), None)
            sent = None
            if entry is not None:
                _, sent, _ = judge_recording.sent_summary(entry, view)
            files = (sorted(glob.glob(os.path.join(work, "recbot", "recordings", "*", f"archive-{connection}*.webm"))) if name == "recbot"
                     else sorted(glob.glob(os.path.join(work, "gst", f"{connection}.*"))))
            packets = decoded = errors = audio = 0
            for path in files:
                p, d, e, a = count_frames(path)
                if p is None:
                    errors = e
                    continue
                packets, decoded, audio = packets + p, decoded + d, audio + a
                errors = errors + e if isinstance(errors, int) else errors
            row[name] = {"files": files, "sent": sent, "packets": packets, "decoded": decoded, "decode_errors": errors, "audio_packets": audio}
        rows.append(row)
    result = {"work": work, "recbot_exit": recbot_status, "gst_exit": gst_status,
              "relay": {1: truth.get("relay"), 2: views.get(2, {}).get("relay")} if args.loss is not None else None,
              "publishers": rows}
    with open(os.path.join(work, "comparison.json"), "w") as out:
        json.dump(result, out, indent=2)
    header = f"{'codec':<5} {'sent→recbot':>11} {'recbot pkts':>11} {'decoded':>7} {'kept':>6}   {'sent→gst':>8} {'gst pkts':>8} {'decoded':>7} {'kept':>6}  gst file"
    print(f"side by side: {work} (recbot exit {recbot_status}, gst_recorder exit {gst_status})")
    print(header)
    for row in rows:
        cells = []
        for name in ("recbot", "gst"):
            r = row[name]
            kept = f"{r['decoded'] / r['sent']:.3f}" if r["sent"] and r["files"] else "-"
            cells.append((f"{r['sent']:.0f}" if r["sent"] else "-", r["packets"] if r["files"] else "-",
                          r["decoded"] if r["files"] else "-", kept))
        gst_file = os.path.basename(row["gst"]["files"][0]) if row["gst"]["files"] else "none"
        print(f"{row['codec']:<5} {cells[0][0]:>11} {cells[0][1]:>11} {cells[0][2]:>7} {cells[0][3]:>6}   "
              f"{cells[1][0]:>8} {cells[1][1]:>8} {cells[1][2]:>7} {cells[1][3]:>6}  {gst_file}")


if __name__ == "__main__":
    main()
