#!/usr/bin/python3
"""Soak run (issue 28): one recbot records N publishers (default 64) from recbot-loadgen for a
long time (default an hour), and what a fleet's host must not do over hours is measured.

  bench/bench.sh --soak 60m [--publishers 64]     (or: soak.py --recbot R --loadgen L --duration 3600)

Every 30 s: recbot's RSS and open file descriptors (/proc), and its Prometheus metrics. Checks:
  rss growth    RSS after the first 5 minutes grows by at most --max-rss-growth MB (default 5)
  fds           the descriptor count after the first 5 minutes stays within 2 of where it was
  verify        `recbot verify SESSION`: every file verifies
  catalog       the session ended with exit 0, one complete recording per publisher
  metrics       the last scrape's frames recorded agree with the catalog's (within what the
                last seconds, after the scrape, added)
Prints the samples' summary and a verdict; exit 1 when a check fails. --json writes the numbers.
The samples go to WORK/samples.jsonl as they are taken; `soak.py --recbot R --check WORK` judges
a finished (or interrupted) run's directory again, without recording it anew.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dev"))
from ports import free_port  # noqa: E402  (the one port picker)


def rss_and_fds(pid):
    try:
        with open(f"/proc/{pid}/status") as handle:
            rss = int(re.search(r"VmRSS:\s+(\d+) kB", handle.read()).group(1)) / 1024
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, AttributeError):
        return None, None


def scrape(port):
    """Sums of the frame counters, from the metrics endpoint."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return None
    frames = 0
    for line in text.splitlines():
        if line.startswith("recbot_frames_recorded_total"):
            frames += float(line.rsplit(" ", 1)[1])
    return frames


def run_json(command):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        return done.returncode, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recbot", required=True)
    parser.add_argument("--loadgen")
    parser.add_argument("--publishers", type=int, default=64)
    parser.add_argument("--duration", type=float, default=3600, help="seconds")
    parser.add_argument("--max-rss-growth", type=float, default=5.0, help="MB after the first 5 minutes")
    parser.add_argument("--warmup", type=float, default=300, help="seconds before the RSS and fd baseline")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--check", metavar="WORK", help="judge an earlier run's directory again")
    args = parser.parse_args()
    if args.check:
        # A directory asked to be judged is never deleted, and is judged with the settings it
        # was recorded with (run.json), not today's defaults.
        args.keep = True
        work, samples, status = load_run(args, parser)
    else:
        if not args.loadgen:
            parser.error("--loadgen is needed to record (or give --check WORK)")
        work, samples, status = record(args)
    judge(args, work, samples, status)


def load_run(args, parser):
    """An earlier run's settings, samples and recbot's exit status, from its directory."""
    work, status = args.check, None
    try:
        with open(os.path.join(work, "run.json")) as handle:
            run = json.load(handle)
        args.publishers, args.duration, args.warmup = run["publishers"], run["duration"], run["warmup"]
        status = run.get("status")
    except (OSError, ValueError, KeyError):
        print(f"soak: no run.json in {work}; judging with --publishers {args.publishers} --duration {args.duration:g} "
              f"--warmup {args.warmup:g}", flush=True)
    samples = []
    try:
        with open(os.path.join(work, "samples.jsonl")) as handle:
            for line in handle:
                try:
                    samples.append(json.loads(line))
                except ValueError:
                    pass  # a line cut short when the run was interrupted
    except OSError as error:
        parser.error(f"{work} has no samples to judge ({error})")
    return work, samples, status


def record(args):
    """Runs the load generator and recbot for the duration, sampling recbot every 30 s."""
    work = tempfile.mkdtemp(prefix="recbot-soak-")
    cache = os.path.join(tempfile.gettempdir(), "recbot-bench-clip")
    os.makedirs(cache, exist_ok=True)
    print(f"soak: {args.publishers} publishers for {args.duration:.0f} s; work {work}", flush=True)
    write_run(work, args, None)
    generator = subprocess.Popen([args.loadgen, "--publishers", str(args.publishers), "--duration", str(args.duration), "--ramp", "2",
                                  "--clip-cache", cache, "--truth", os.path.join(work, "truth.json")],
                                 stdout=subprocess.PIPE, stderr=open(os.path.join(work, "loadgen.log"), "w"), text=True)
    url = json.loads(generator.stdout.readline())["url"]
    data, port = os.path.join(work, "data"), free_port()
    recbot = subprocess.Popen([args.recbot, "join", "--channel", "soak", "--url", url, "--data-dir", data, "--allow-address", "127.0.0.1/32",
                               "--metrics-listen", f"127.0.0.1:{port}", "--metrics-textfile", os.path.join(work, "recbot.prom")],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "recbot.log"), "w"))
    started = time.monotonic()
    samples = []
    while recbot.poll() is None:
        time.sleep(30 if args.duration > 300 else 5)
        rss, fds = rss_and_fds(recbot.pid)
        if rss is None:
            break
        samples.append({"t": round(time.monotonic() - started), "rss_mb": round(rss, 1), "fds": fds, "frames": scrape(port)})
        print(f"soak: {samples[-1]}", flush=True)
        with open(os.path.join(work, "samples.jsonl"), "a") as handle:
            handle.write(json.dumps(samples[-1]) + "\n")
    status = recbot.wait()
    generator.wait(timeout=60)
    write_run(work, args, status)
    return work, samples, status


def write_run(work, args, status):
    """The run's settings (and recbot's exit status once known), for --check."""
    with open(os.path.join(work, "run.json"), "w") as handle:
        json.dump({"publishers": args.publishers, "duration": args.duration, "warmup": args.warmup, "status": status}, handle)


def judge(args, work, samples, status):
    """The checks of the module's docstring over a run's directory and samples; exits."""
    data = os.path.join(work, "data")
    problems = []
    # The last samples may fall in the session's end (64 files finalized at once, their Cues
    # built): that peak is reported, not counted as growth over the run.
    recording = [s for s in samples if s["t"] < args.duration]
    shutdown_peak = max((s["rss_mb"] for s in samples if s["t"] >= args.duration), default=None)
    settled = [s for s in recording if s["t"] >= args.warmup] or recording[-1:]
    if settled:
        growth = max(s["rss_mb"] for s in settled) - settled[0]["rss_mb"]
        fd_spread = max(s["fds"] for s in settled) - min(s["fds"] for s in settled)
        if growth > args.max_rss_growth:
            problems.append(f"RSS grew {growth:.1f} MB after the warm-up (at most {args.max_rss_growth})")
        if fd_spread > 2:
            problems.append(f"fds moved by {fd_spread} after the warm-up")
    else:
        growth = fd_spread = None
        problems.append("no samples")
    if status not in (0, None):
        problems.append(f"recbot exited {status}")
    _, sessions = run_json([args.recbot, "sessions", "list", "--data-dir", data, "--json"])
    session = (sessions or [{}])[0]
    _, shown = run_json([args.recbot, "sessions", "show", session.get("id", "-"), "--data-dir", data, "--json"])
    recordings = (shown or {}).get("recordings", [])
    complete = [r for r in recordings if r.get("status") == "complete"]
    if session.get("exit_status") != 0 or len(complete) < args.publishers:
        problems.append(f"catalog: exit {session.get('exit_status')}, {len(complete)} complete recordings of {args.publishers}")
    verify_status, checks = run_json([args.recbot, "verify", session.get("id", "-"), "--data-dir", data, "--json",
                                        "--jobs", str(os.cpu_count() or 1)])
    verified = sum(1 for c in checks or [] if c.get("verification") == "verified")
    if verify_status != 0 or verified != len(recordings):
        problems.append(f"verify: exit {verify_status}, {verified}/{len(recordings)}")
    cataloged = sum((r.get("video_frames") or 0) + (r.get("audio_frames") or 0) for r in recordings)
    final_frames = None
    try:
        with open(os.path.join(work, "recbot.prom")) as handle:
            final_frames = sum(float(line.rsplit(" ", 1)[1]) for line in handle if line.startswith("recbot_frames_recorded_total"))
    except OSError:
        problems.append("no metrics textfile")
    if final_frames is not None and abs(final_frames - cataloged) > max(10, 0.001 * cataloged):
        problems.append(f"metrics say {final_frames:.0f} frames recorded, the catalog {cataloged}")
    summary = {"publishers": args.publishers, "seconds": args.duration, "rss_growth_mb": growth, "fd_spread": fd_spread,
               "rss_mb_first": settled[0]["rss_mb"] if settled else None, "rss_mb_last": samples[-1]["rss_mb"] if samples else None,
               "fds_last": samples[-1]["fds"] if samples else None, "rss_mb_shutdown_peak": shutdown_peak, "recordings": len(recordings), "verified": verified,
               "frames_catalog": cataloged, "frames_metrics": final_frames, "problems": problems}
    print(json.dumps(summary, indent=2))
    print("soak: " + ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"summary": summary, "samples": samples}, handle, indent=2)
    if not args.keep and not problems:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
