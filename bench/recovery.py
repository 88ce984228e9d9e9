#!/usr/bin/python3
"""Recovery after overload (issue 28): recbot records N publishers under a small CPU quota
(--low cores) that it cannot keep up with, then the quota rises (--high, at --switch-at s) as if
the load had dropped. Reports each publisher's video frames before the switch and from
--settle s after it to the end, against the clip's frame rate (ffprobe reads the files).

  python3 bench/recovery.py --recbot R --loadgen L [--publishers 256] [--low 0.25]
                                   [--high 1.5] [--switch-at 22] [--duration 60]

Needs root and a cgroup with the cpu controller (as bench.py --recbot-cpus). Passes when every
publisher keeps at least 95 % of its frames from the settle point on, and recbot exits 0.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import CPULimit  # noqa: E402


def frame_times(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path],
                         capture_output=True, text=True).stdout.split()
    return sorted(float(x) for x in out if x not in ("", "N/A"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recbot", required=True)
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--publishers", type=int, default=256)
    parser.add_argument("--low", type=float, default=0.25, help="cores while overloaded")
    parser.add_argument("--high", type=float, default=1.5, help="cores after the switch")
    parser.add_argument("--switch-at", type=float, default=22, help="seconds after recbot starts")
    parser.add_argument("--settle", type=float, default=8, help="seconds after the switch before frames are counted")
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--fps", type=float, default=30, help="the clip's frame rate (the load generator's default)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="recbot-recovery-")
    limit = CPULimit(args.low)
    try:
        status = record(args, work, limit)
    finally:
        limit.remove()
    counted_from = args.switch_at + args.settle
    before, after = [], []
    for path in glob.glob(os.path.join(work, "out", "recordings", "*", "*.webm")):
        times = frame_times(path)
        if not times:
            before.append(0.0)
            after.append(0.0)
            continue
        before.append(100 * sum(1 for t in times if t < args.switch_at - 2) / max(1, (args.switch_at - 2) * args.fps))
        expected = (times[-1] - counted_from) * args.fps + 1
        after.append(100 * sum(1 for t in times if t >= counted_from) / max(1, expected))
    print(f"recovery: {args.publishers} publishers, {args.low:g} cores then {args.high:g} at {args.switch_at:g} s; work {work}")
    if not after:
        print("recovery: FAIL: no files")
        return 1
    print(f"  overloaded (before the switch): median {statistics.median(before):.1f} %, worst {min(before):.1f} % of frames")
    print(f"  from {counted_from:g} s to the end: median {statistics.median(after):.1f} %, worst {min(after):.1f} %, "
          f"{sum(r >= 95 for r in after)} of {len(after)} publishers at >= 95 %; recbot exit {status}")
    passed = status == 0 and min(after) >= 95 and len(after) == args.publishers
    print("recovery: " + ("PASS" if passed else "FAIL"))
    return 0 if passed else 1


def record(args, work, limit):
    """Runs the generator and recbot (in the cgroup), raising the quota at --switch-at."""
    generator = subprocess.Popen([args.loadgen, "--publishers", str(args.publishers), "--duration", str(args.duration), "--ramp", "2",
                                  "--clip-cache", os.path.join(tempfile.gettempdir(), "recbot-loadgen-clips"),
                                  "--truth", os.path.join(work, "truth.json")],
                                 stdout=subprocess.PIPE, stderr=open(os.path.join(work, "loadgen.log"), "w"), text=True)
    url = json.loads(generator.stdout.readline())["url"]
    recbot = subprocess.Popen(limit.wrap([args.recbot, "join", "--channel", "recovery", "--url", url, "--data-dir", os.path.join(work, "out"),
                                          "--allow-address", "127.0.0.1/32", "--no-rejoin"]),
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "recbot.log"), "w"))
    time.sleep(args.switch_at)
    limit.set_cores(args.high)
    status = recbot.wait()
    generator.wait(timeout=60)
    return status


if __name__ == "__main__":
    sys.exit(main())
