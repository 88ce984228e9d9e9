#!/usr/bin/python3
"""Past capacity (issue 42): recbot under a CPU quota that is a fraction of what the offered load
needs, then with the quota lifted; and under the kernel's default-sized receive buffer.

  bench/bench.sh --overload [--publishers 256] [--factors 2,4] [--capped 30] [--lifted 30]
                            [--rmem-publishers 512,768] [--json FILE]

First one run without a quota measures the CPU recbot needs for N publishers (C cores, and its
cost per packet), and one more what their audio alone needs (A cores: the publishers offer video
but send none, as if every video stream were paused). Then, for each factor F, recbot records N publishers for --capped seconds
under a quota of C/F cores (a cgroup of its own: cpu.max on cgroup v2, cpu.cfs_quota_us on v1;
the load generator keeps its own CPU), then --lifted seconds with the quota lifted. Per run,
over the publishers:
  audio %      audio frames in the files over those sent (ffprobe counts them), worst and median
  video %      video frames kept while capped, over those sent then: worst, median; and the
               median over what the quota can carry by the bench's own accounting (audio is
               carried first, at A; the rest of the quota goes to video, which costs C - A:
               (C/F - A) / (C - A))
  fair         the worst publisher's capped video share over the median's
  back s       from the lift to each publisher's first video frame after it: the worst
  verify       files `recbot verify` passes (it decodes every frame), of all files
  kernel       the kernel's UDP receive-buffer drops
  exit, died   recbot's exit status, and when the session would have died (consent lost: the
               log's first transport failure, seconds after start), or -
Then the same N (and more, --rmem-publishers) with net.core.rmem_max at 4 MiB and no quota, as a
fresh machine has it: audio %, video %, kernel drops, exit.

Needs root (the cgroup and the sysctl). Prints one table; --json writes every number.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import CPULimit, udp_receive_drops  # noqa: E402


def frame_times(path, stream):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time", "-of", "csv=p=0", path],
                         capture_output=True, text=True).stdout.split()
    return sorted(float(x) for x in out if x not in ("", "N/A"))


def sidecar(path):
    try:
        with open(path[:-5] + ".json") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


class Recording:
    """One recbot run against the load generator; the quota (if any) changes at `lift_at`."""

    def __init__(self, args, n, duration, cores=None, lift_at=None, keep=False, audio_only=False):
        self.work = tempfile.mkdtemp(prefix=f"recbot-overload-{n}-")
        self.args, self.n, self.duration, self.cores, self.lift_at, self.keep = args, n, duration, cores, lift_at, keep
        self.audio_only = audio_only

    def run(self):
        args, work = self.args, self.work
        truth_path = os.path.join(work, "truth.json")
        drops_before = udp_receive_drops()
        generator = subprocess.Popen([args.loadgen, "--publishers", str(self.n), "--duration", str(self.duration), "--ramp", "2",
                                      "--clip-cache", args.clip_cache, "--truth", truth_path, *(["--audio-only"] if self.audio_only else [])],
                                     stdout=subprocess.PIPE, stderr=open(os.path.join(work, "loadgen.log"), "w"), text=True)
        url = json.loads(generator.stdout.readline())["url"]
        out = os.path.join(work, "out")
        command = [args.recbot, "join", "--channel", "bench", "--url", url, "--data-dir", out, "--allow-address", "127.0.0.1/32",
                   "--no-rejoin", "--metrics-textfile", os.path.join(work, "metrics.prom")]
        limit = CPULimit(self.cores) if self.cores else None
        try:
            if limit:
                command = limit.wrap(command)
            started = time.time()
            self.started_unix = started
            log = open(os.path.join(work, "recbot.log"), "w")
            recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
            if limit and self.lift_at is not None:
                def lift():
                    time.sleep(self.lift_at)
                    if recorder.poll() is None:
                        limit.set_cores(os.cpu_count())
                        self.lifted_unix = time.time()
                threading.Thread(target=lift, daemon=True).start()
            _, status, usage = os.wait4(recorder.pid, 0)
            self.wall = time.time() - started
        finally:
            if limit:
                limit.remove()
        generator.wait(timeout=60)
        self.exit = os.waitstatus_to_exitcode(status)
        self.cpu = usage.ru_utime + usage.ru_stime
        self.kernel_drops = udp_receive_drops() - drops_before
        with open(truth_path) as handle:
            self.truth = json.load(handle)
        self.files = glob.glob(os.path.join(out, "recordings", "*", "*.webm"))
        return self

    def packets(self):
        return sum(p["sent"]["packets"] - p["sent"]["packets_dropped"] + p["sent"]["retransmissions"] for p in self.truth["publishers"])

    def died_at(self):
        """Whether the session lost its connection (ICE consent, a transport failure): the
        line that says so, shortened, or None."""
        with open(os.path.join(self.work, "recbot.log")) as handle:
            for line in handle:
                lowered = line.lower()
                if "consent lost" in lowered or "transport failed" in lowered or "connection lost" in lowered:
                    return line.strip()[:80]
        return None

    def verified(self):
        """Files `recbot verify` passes (one call; it decodes every frame)."""
        if not self.files:
            return 0
        result = subprocess.run([self.args.recbot, "verify", "--data-dir", os.path.join(self.work, "out"), "--json", "--jobs", "2", *self.files],
                                capture_output=True, text=True)
        try:
            return sum(1 for entry in json.loads(result.stdout) if entry.get("report", {}).get("ok"))
        except ValueError:
            return 0

    def per_publisher(self, capped_until=None, lifted_at=None):
        """Each publisher's audio and video kept, the video while capped, and when video came back."""
        rows = []
        for publisher in self.truth["publishers"]:
            cid = publisher["connection_id"]
            mine = [f for f in self.files if cid in os.path.basename(f)]
            audio = sum(len(frame_times(f, "a:0")) for f in mine)
            video = [t for f in mine for t in frame_times(f, "v:0")]
            sent = publisher["sent"]
            joined = publisher.get("joined_at_unix_milliseconds", 0) / 1000
            offset = joined - self.started_unix  # seconds from recbot's start to the publisher's join
            row = {"connection_id": cid, "audio": 100.0 * audio / max(1, sent["audio_frames"]),
                   "video": 100.0 * len(video) / max(1, sent["video_frames"])}
            if capped_until is not None:
                # File time 0 is about the publisher's first frame; the quota's phase in file time.
                until = capped_until - offset
                row["video_capped"] = 100.0 * sum(1 for t in video if t < until) / max(1, until * self.args.fps)
                after = [t for t in video if t >= lifted_at - offset]
                row["back_seconds"] = (min(after) - (lifted_at - offset)) if after else None
            rows.append(row)
        return rows

    def cleanup(self):
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)


def worst_median(values):
    values = [v for v in values if v is not None]
    return (min(values), statistics.median(values)) if values else (None, None)


def overload_runs(args, baseline, audio_cores):
    need = baseline.cpu / baseline.wall
    results = []
    print(f"\npast capacity: {args.publishers} publishers need {need:.2f} cores "
          f"({1e6 * baseline.cpu / baseline.packets():.1f} us/pkt), their audio alone (video offered, none sent) {audio_cores:.2f}; "
          + ("each quota caps recbot at that many cores (F = the need over it)" if args.cores else "each factor caps recbot at that over F")
          + f" for {args.capped} s, then lifts the cap for {args.lifted} s")
    print("  F  cores  audio% worst/med  video% capped worst/med  of carriable  fair  back s  verify  kernel  exit  died")
    # Fixed quotas (--cores) compare builds and settings across runs: C itself moves by a tenth
    # from run to run on a shared host, and with it every C/F quota.
    quotas = [(need / cores, cores) for cores in args.cores] if args.cores else [(factor, need / factor) for factor in args.factors]
    for factor, cores in quotas:
        run = Recording(args, args.publishers, args.capped + args.lifted, cores=cores, lift_at=args.capped, keep=args.keep).run()
        lifted_at = getattr(run, "lifted_unix", run.started_unix + args.capped) - run.started_unix
        rows = run.per_publisher(capped_until=lifted_at, lifted_at=lifted_at)
        audio = worst_median([r["audio"] for r in rows])
        capped = worst_median([r["video_capped"] for r in rows])
        # What the quota carries: all audio first, at what audio alone was measured to cost
        # with the video paused (an audio packet costs more than the average packet: every
        # one is a frame), then video, at what it adds to that.
        carriable = max(0.0, min(1.0, (cores - audio_cores) / max(1e-9, need - audio_cores)))
        of_carriable = None if carriable == 0 else capped[1] / (100 * carriable)
        fair = capped[0] / capped[1] if capped[1] else None
        back = max((r["back_seconds"] for r in rows if r["back_seconds"] is not None), default=None)
        missing_back = sum(1 for r in rows if r["back_seconds"] is None)
        verified = run.verified()
        result = {"factor": factor, "cores": cores, "audio_worst": audio[0], "audio_median": audio[1], "video_capped_worst": capped[0],
                  "video_capped_median": capped[1], "carriable_video": carriable, "of_carriable": of_carriable, "fair": fair,
                  "back_seconds_worst": back, "publishers_not_back": missing_back, "verified": verified, "files": len(run.files),
                  "kernel_drops": run.kernel_drops, "exit": run.exit, "died": run.died_at(), "work": run.work, "publishers": rows}
        results.append(result)
        fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731
        print(f"{factor:>3.3g} {cores:>6.2f}  {fmt(audio[0], '6.2f')}/{fmt(audio[1], '6.2f')}      {fmt(capped[0], '6.2f')}/{fmt(capped[1], '6.2f')}"
              f"        {fmt(of_carriable, '5.2f')}  {fmt(fair, '4.2f')}  {fmt(back, '5.1f')}{'+' if missing_back else ' '}"
              f" {verified:>3}/{len(run.files):<3} {run.kernel_drops:>7} {run.exit:>5}  {run.died_at() or '-'}", flush=True)
        run.cleanup()
    return results


def receive_buffer_runs(args):
    """No quota, net.core.rmem_max at 4 MiB (a fresh machine's order of size)."""
    with open("/proc/sys/net/core/rmem_max") as handle:
        saved = handle.read().strip()
    results = []
    print(f"\nnet.core.rmem_max 4 MiB, no quota, {args.rmem_duration} s:")
    print("    N  audio% worst/med  video% worst/med  kernel  exit  died")
    try:
        with open("/proc/sys/net/core/rmem_max", "w") as handle:
            handle.write(str(4 << 20))
        for n in args.rmem_publishers:
            run = Recording(args, n, args.rmem_duration, keep=args.keep).run()
            rows = run.per_publisher()
            audio = worst_median([r["audio"] for r in rows])
            video = worst_median([r["video"] for r in rows])
            results.append({"n": n, "audio_worst": audio[0], "audio_median": audio[1], "video_worst": video[0], "video_median": video[1],
                            "kernel_drops": run.kernel_drops, "exit": run.exit, "died": run.died_at()})
            print(f"{n:>5}  {audio[0]:6.2f}/{audio[1]:6.2f}      {video[0]:6.2f}/{video[1]:6.2f}  {run.kernel_drops:>6} {run.exit:>5}  {run.died_at() or '-'}",
                  flush=True)
            run.cleanup()
    finally:
        with open("/proc/sys/net/core/rmem_max", "w") as handle:
            handle.write(saved)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recbot", required=True)
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--floor", help="accepted for bench.sh's sake; unused")
    parser.add_argument("--publishers", type=int, default=256)
    parser.add_argument("--factors", default="2,4", type=lambda text: [float(x) for x in text.split(",") if x])
    parser.add_argument("--cores", default="", type=lambda text: [float(x) for x in text.split(",") if x],
                        help="fixed quotas in cores instead of --factors (F is then reported as C over the quota)")
    parser.add_argument("--capped", type=float, default=30, help="seconds under the quota")
    parser.add_argument("--lifted", type=float, default=30, help="seconds after the quota is lifted")
    parser.add_argument("--rmem-publishers", default="512,768", type=lambda text: [int(x) for x in text.split(",") if x],
                        help="publisher counts for the 4 MiB receive-buffer runs (empty: none)")
    parser.add_argument("--rmem-duration", type=float, default=30)
    parser.add_argument("--fps", type=float, default=30, help="the clip's frame rate (the load generator's default)")
    parser.add_argument("--keep", action="store_true", help="keep each run's files")
    parser.add_argument("--json", help="also write every number here")
    args = parser.parse_args()
    args.clip_cache = os.path.join(tempfile.gettempdir(), "recbot-loadgen-clips")  # bench.py's
    baseline = Recording(args, args.publishers, 20).run()
    results = {"baseline": {"cores": baseline.cpu / baseline.wall, "us_per_packet": 1e6 * baseline.cpu / baseline.packets(), "exit": baseline.exit}}
    baseline.cleanup()
    audio = Recording(args, args.publishers, 20, audio_only=True).run()
    results["baseline"]["audio_only_cores"] = audio.cpu / audio.wall
    audio.cleanup()
    results["overload"] = overload_runs(args, baseline, audio.cpu / audio.wall)
    if args.rmem_publishers:
        results["receive_buffer"] = receive_buffer_runs(args)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
