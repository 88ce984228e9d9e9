#!/usr/bin/python3
"""Capacity benchmark (issue 13): recbot against a GStreamer webrtcbin remux recorder on the
same synthetic channel, from recbot-loadgen, for each publisher count N.

  bench/bench.sh [--publishers 32,64,128] [--duration 30] [--no-gstreamer] [--no-extend] [--loss 0] [--faults 32]
                  [--burst-loss 15:4] [--jitter-ms 60]

--burst-loss PERCENT:BURST and --jitter-ms N put every publisher's path through bursty loss
(Gilbert-Elliott, retransmissions included) and a random 0..N ms delay per packet that reorders
packets, as the test server's options of the same names do (a harsh network).

Per N and recorder, one run: the load generator serves N VP8+Opus publishers (a clip it made
once with ffmpeg, paced to its timestamps) for --duration seconds, then closes the session; the
recorder records until then. Columns:
  cpu cores      the recorder's user+sys CPU over its wall time (wait4 rusage)
  ms/pub-s       that CPU in ms per publisher-second of media
  us/pkt         that CPU per RTP packet the generator put on the wire
  xfloor         us/pkt as a multiple of the floor's: recbot-floor on the same N, the same
                 batched reads and libsrtp, decrypting each packet into a file and nothing else
  rss MB, MB/pub peak RSS (ru_maxrss), and per publisher
  +MB/p          marginal RSS per publisher: from the previous N to this one (the fixed base excluded)
  frames %       video frames in the worst publisher's file over the frames the generator sent
                 it (ffprobe -count_packets: an independent reader of the files)
  rcv drops      the kernel's UDP receive-buffer drops during the run (/proc/net/snmp RcvbufErrors)
  1st key s      publisher start to its first cluster (a keyframe) on disk: median / worst,
                 polled every 200 ms
  gen            the load generator's own CPU in cores (it must drive the channel from one)
  lag99          how late the generator sent frames (its own schedule), so an overloaded
                 generator is not mistaken for a slow recorder
and the recbot/GStreamer ratios of CPU and RSS. Past the listed N, it goes on (×1.5) until
recbot keeps less than 99.9 % of the frames of its worst publisher and reports the last N that
held as the capacity (--no-extend stops at the list).

Then the fault runs (--faults N publishers, recbot only, one fault each from recbot-loadgen:
loss, reordering, duplicates, 10x bursts, publishers vanishing without a BYE): peak RSS beside
the clean run's, the worst publisher's frames and the worst bystander's (a publisher the fault
did not single out).

With --count-allocations, a perf uprobe counts recbot's and the floor's malloc calls over 10 s of
each run and prints them per packet (allocations.py; root and linux-perf).

With --relay N[,N...], only the TURN relay comparison runs instead (see relay.py).
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

from allocations import AllocationCount, ensure_probe
from relay import relay_runs

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER_ID = b"\x1f\x43\xb6\x75"


def udp_receive_drops():
    with open("/proc/net/snmp") as handle:
        rows = [line.split() for line in handle if line.startswith("Udp:")]
    header, values = rows[0], rows[1]
    return int(values[header.index("RcvbufErrors")])


class FirstClusterWatch(threading.Thread):
    """Notes when each file under a directory first holds a Cluster (unix ms)."""

    def __init__(self, pattern):
        super().__init__(daemon=True)
        self.pattern = pattern
        self.seen = {}
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.wait(0.2):
            now = time.time() * 1000
            for path in glob.glob(self.pattern, recursive=True):
                if path in self.seen:
                    continue
                try:
                    with open(path, "rb") as handle:
                        head = handle.read(1 << 20)
                except OSError:
                    continue
                at = head.find(CLUSTER_ID)
                if at >= 0 and len(head) > at + 64:
                    self.seen[path] = now


def video_frames(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                          "stream=nb_read_packets", "-of", "csv=p=0", path], capture_output=True, text=True)
    try:
        return int(out.stdout.strip().split(",")[0])
    except ValueError:
        return 0


def count_allocations(args, pid):
    """With --count-allocations: a counter of `pid`'s mallocs over 10 s once every publisher runs."""
    if not args.count_allocations:
        return None
    window = max(1.0, min(10.0, args.duration - args.ramp - 6))
    counter = AllocationCount(pid, delay=args.ramp + 3, window=window)
    counter.start()
    return counter


def generator_command(args, n, cache, truth_path, extra=()):
    loss = [] if "--loss" in extra else ["--loss", str(args.loss)]  # a fault run's own loss replaces the bench's
    harsh = (["--burst-loss", args.burst_loss] if args.burst_loss else []) + (["--jitter-ms", str(args.jitter_ms)] if args.jitter_ms else [])
    return [args.loadgen, "--publishers", str(n), "--duration", str(args.duration), "--ramp", str(args.ramp),
            *loss, *harsh, "--clip-cache", cache, "--truth", truth_path, *extra]


def run_floor(n, args, cache):
    """recbot-floor on the same N: batched receive, SRTP unprotect, append to a file."""
    work = tempfile.mkdtemp(prefix=f"recbot-bench-floor-{n}-")
    floor = subprocess.Popen([args.floor, "--out", os.path.join(work, "floor.bin")], stdout=subprocess.PIPE,
                             stderr=open(os.path.join(work, "floor.log"), "w"), text=True)
    port = json.loads(floor.stdout.readline())["port"]
    counter = count_allocations(args, floor.pid)
    started = time.time()
    generator = subprocess.Popen(generator_command(args, n, cache, os.path.join(work, "truth.json"), ["--floor", f"127.0.0.1:{port}"]),
                                 stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "loadgen.log"), "w"))
    generator.wait()
    done = json.loads(floor.stdout.readline() or "{}")
    _, status, usage = os.wait4(floor.pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    packets = done.get("packets", 0)
    if counter:
        counter.join()
    return {"kind": "floor", "n": n, "cpu_cores": cpu / (time.time() - started), "packets": packets,
            "us_per_packet": 1e6 * cpu / max(1, packets), "failures": done.get("failures"), "exit": os.waitstatus_to_exitcode(status),
            "mallocs_per_packet": counter.per_packet(packets, args.duration, args.ramp) if counter else None}


class CPULimit:
    """A CPU quota for recbot alone (--recbot-cpus): a cgroup of its own (v2 cpu.max, or v1's
    cpu controller), so that recbot, not the load generator beside it on the same cores, is what
    runs out. Needs root and a writable cgroup filesystem; says so plainly when it has neither.
    Made once per bench, before anything starts, and removed at its end."""

    def __init__(self, cpus):
        name = f"recbot-bench-{os.getpid()}"
        # A short period: with the default 100 ms, a 0.25-core recbot is frozen for 75 ms at a
        # time and the kernel's receive buffer overflows in the pauses, which is the quota's
        # doing, not recbot's. 10 ms pauses are what a busy host's scheduler would impose.
        self.period = period = 10000
        quota = max(1000, int(cpus * period))
        self.v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        if self.v2:
            self.path = os.path.join("/sys/fs/cgroup", name)
            settings = [("cpu.max", f"{quota} {period}")]
            with open("/sys/fs/cgroup/cgroup.subtree_control") as handle:
                if "cpu" not in handle.read().split():
                    sys.exit("bench: --recbot-cpus needs the cpu controller enabled for child cgroups "
                             "(echo +cpu > /sys/fs/cgroup/cgroup.subtree_control)")
        else:
            self.path = os.path.join("/sys/fs/cgroup/cpu", name)
            settings = [("cpu.cfs_period_us", str(period)), ("cpu.cfs_quota_us", str(quota))]
        try:
            os.mkdir(self.path)
            for file, value in settings:
                with open(os.path.join(self.path, file), "w") as handle:
                    handle.write(value)
        except OSError as error:
            self.remove()
            sys.exit(f"bench: --recbot-cpus needs a writable cgroup (root, cgroup v2 or v1 cpu): {error}")

    def set_cores(self, cpus):
        """Changes the quota while recbot runs (bench/recovery.py: the load drops)."""
        quota = max(1000, int(cpus * self.period))
        file, value = ("cpu.max", f"{quota} {self.period}") if self.v2 else ("cpu.cfs_quota_us", str(quota))
        with open(os.path.join(self.path, file), "w") as handle:
            handle.write(value)

    def wrap(self, command):
        """The command, started inside the cgroup by a shell that joins it and then execs (a
        preexec_fn is unsafe here: the first-cluster watcher thread is running)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.path, *command]

    def remove(self):
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            pass
        except OSError as error:
            print(f"bench: could not remove the cgroup {self.path}: {error}", file=sys.stderr)


def run(kind, n, args, cache, extra=(), recorder_extra=()):
    work = tempfile.mkdtemp(prefix=f"recbot-bench-{kind}-{n}-")
    truth_path = os.path.join(work, "truth.json")
    drops_before = udp_receive_drops()
    generator = subprocess.Popen(generator_command(args, n, cache, truth_path, extra),
                                 stdout=subprocess.PIPE, stderr=open(os.path.join(work, "loadgen.log"), "w"), text=True)
    url = json.loads(generator.stdout.readline())["url"]
    out = os.path.join(work, "out")
    if kind == "recbot":
        # --no-rejoin: a run that loses its connection (an overloaded generator stops answering
        # ICE consent) ends with exit 69 instead of waiting for a generator that is gone.
        command = [args.recbot, "join", "--channel", "bench", "--url", url, "--data-dir", out, "--allow-address", "127.0.0.1/32",
                   "--no-rejoin", *recorder_extra]
        pattern = os.path.join(out, "recordings", "*", "*.webm")
    else:
        command = ["/usr/bin/python3", os.path.join(HERE, "gst_recorder.py"), "--url", url, "--channel", "bench", "--out", out]
        pattern = os.path.join(out, "*.webm")
    os.makedirs(out, exist_ok=True)
    watch = FirstClusterWatch(pattern)
    watch.start()
    started = time.time()
    if kind == "recbot" and args.cpu_limit:
        command = args.cpu_limit.wrap(command)
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"{kind}.log"), "w"))
    # Under a CPU limit the recorder is the cgroup wrapper's child: its allocations are not counted.
    counter = count_allocations(args, recorder.pid) if not args.cpu_limit else None
    _, status, usage = os.wait4(recorder.pid, 0)
    if counter:
        counter.join()
    wall = time.time() - started
    generator_cpu = None  # the generator's own CPU: it should stay under one core
    deadline = time.time() + 30
    while time.time() < deadline:
        pid, _, generator_usage = os.wait4(generator.pid, os.WNOHANG)
        if pid:
            generator.returncode = 0
            generator_cpu = generator_usage.ru_utime + generator_usage.ru_stime
            break
        time.sleep(0.05)
    else:
        generator.kill()
        generator.wait()
    watch.stopping.set()
    watch.join()
    drops = udp_receive_drops() - drops_before
    with open(truth_path) as handle:
        truth = json.load(handle)
    files = glob.glob(pattern, recursive=True)
    shares, first_key, bystanders = [], [], []
    for publisher in truth["publishers"]:
        cid, sent = publisher["connection_id"], publisher["sent"]["video_frames"]
        mine = [f for f in files if cid in os.path.basename(f) and "audio" not in os.path.basename(f)]
        got = sum(video_frames(f) for f in mine)
        shares.append(100.0 * got / sent if sent else 100.0)
        # Bystanders: publishers the fault did not single out (no burst of their own, not vanished).
        if not publisher["sent"].get("bursts") and not publisher.get("vanished"):
            bystanders.append(shares[-1])
        seen = [watch.seen[f] for f in mine if f in watch.seen]
        if seen and publisher.get("joined_at_unix_milliseconds"):
            first_key.append((min(seen) - publisher["joined_at_unix_milliseconds"]) / 1000)
    cpu = usage.ru_utime + usage.ru_stime
    result = {
        "kind": kind, "n": n, "exit": os.waitstatus_to_exitcode(status), "cpu_cores": cpu / wall,
        "ms_per_pub_s": 1000 * cpu / (n * args.duration), "rss_mb": usage.ru_maxrss / 1024,
        "mb_per_pub": usage.ru_maxrss / 1024 / n, "worst_share": min(shares) if shares else 0.0,
        "median_share": statistics.median(shares) if shares else 0.0,
        "drops": drops, "first_key_median": statistics.median(first_key) if first_key else None,
        "first_key_worst": max(first_key) if first_key else None, "gen_lag_p99": truth["send_lag"]["p99_milliseconds"],
        "packets": sum(p["sent"]["packets"] - p["sent"]["packets_dropped"] + p["sent"]["retransmissions"] + p["sent"].get("packets_duplicated", 0)
                       for p in truth["publishers"]),
        "worst_bystander": min(bystanders) if bystanders else None,
        "generator_cores": None if generator_cpu is None else generator_cpu / wall,
        "files": len(files), "work": work,
    }
    result["us_per_packet"] = 1e6 * cpu / max(1, result["packets"])
    result["mallocs_per_packet"] = counter.per_packet(result["packets"], args.duration, args.ramp) if counter else None
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


def row(r, baseline=None, floor=None, previous=None):
    marginal = "" if not previous else f"{(r['rss_mb'] - previous['rss_mb']) / max(1, r['n'] - previous['n']):.2f}"
    generator = "-" if r.get("generator_cores") is None else f"{r['generator_cores']:.2f}"
    key = "-" if r["first_key_median"] is None else f"{r['first_key_median']:.2f}/{r['first_key_worst']:.2f}"
    ratio = "" if not baseline else f"{r['cpu_cores'] / max(1e-9, baseline['cpu_cores']):.2f}x / {r['rss_mb'] / max(1e-9, baseline['rss_mb']):.2f}x"
    over_floor = "" if not floor else f"{r['us_per_packet'] / max(1e-9, floor['us_per_packet']):.1f}x"
    return (f"{r['n']:>5} {r['kind']:<9} {r['cpu_cores']:>6.2f} {r['ms_per_pub_s']:>9.2f} {r['us_per_packet']:>7.1f} {over_floor:>6} {r['rss_mb']:>7.0f} "
            f"{r['mb_per_pub']:>7.2f} {marginal:>6} {r['worst_share']:>8.2f} {r['drops']:>9} {key:>11} {generator:>5} {r['gen_lag_p99']:>5} {r['exit']:>4}  {ratio}")


def floor_row(f):
    return f"{f['n']:>5} {'floor':<9} {f['cpu_cores']:>6.2f} {'':>9} {f['us_per_packet']:>7.1f} {'1.0x':>6}   (receive + SRTP + append; {f['packets']} packets, {f['failures']} failures)"


# Each fault on its own run of recbot (see recbot-loadgen --help).
FAULTS = [
    ("none", []),
    ("loss 5 %", ["--loss", "5"]),
    ("reorder 5 %", ["--reorder", "5"]),
    ("duplicate 5 %", ["--duplicate", "5"]),
    ("10x bursts", ["--burst-interval", "2", "--burst-seconds", "0.5"]),
    ("vanish", ["--vanish-interval", "3"]),
]


def fault_runs(n, args, cache):
    print(f"\nfaults, recbot only, N={n}: every publisher's video kept, and the others' (not bursting, not vanished)")
    print("fault             cores  rss MB  frames% bystanders%  rcv drops exit")
    results = []
    for name, extra in FAULTS:
        r = run("recbot", n, args, cache, extra)
        r["fault"] = name
        bystanders = "-" if r["worst_bystander"] is None else f"{r['worst_bystander']:.2f}"
        print(f"{name:<16} {r['cpu_cores']:>6.2f} {r['rss_mb']:>7.0f} {r['worst_share']:>8.2f} {bystanders:>11} {r['drops']:>10} {r['exit']:>4}", flush=True)
        results.append(r)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--publishers", default="32,64,128,256,512")
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--ramp", type=float, default=2.0)
    parser.add_argument("--loss", type=float, default=0.0)
    parser.add_argument("--burst-loss", metavar="PERCENT:BURST", help="bursty loss on every publisher's path (e.g. 15:4)")
    parser.add_argument("--jitter-ms", type=float, default=0.0, help="random 0..N ms delay per packet (reorders)")
    parser.add_argument("--recbot", required=True)
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--floor", required=True, help="the recbot-floor binary")
    parser.add_argument("--no-gstreamer", action="store_true")
    parser.add_argument("--gstreamer-up-to", type=int, default=256, help="skip GStreamer above this N (it falls behind first)")
    parser.add_argument("--no-extend", action="store_true")
    parser.add_argument("--recbot-cpus", type=float, help="run recbot under a CPU quota of this many cores (a cgroup), to find where "
                        "recbot itself runs out and what it does past that")
    parser.add_argument("--faults", type=int, default=32, help="publishers in the fault runs (0: none)")
    parser.add_argument("--keep", action="store_true", help="keep each run's files")
    parser.add_argument("--json", help="also write every run's numbers here")
    parser.add_argument("--count-allocations", action="store_true", help="count recbot's and the floor's malloc calls per packet "
                        "(a perf uprobe: root and linux-perf; slows the counted runs, so their CPU columns do not compare)")
    parser.add_argument("--relay", metavar="N[,N...]", help="instead: the TURN relay's cost at these publisher counts (bench/relay.py)")
    args = parser.parse_args()
    args.cpu_limit = CPULimit(args.recbot_cpus) if args.recbot_cpus else None
    if args.count_allocations:
        ensure_probe()
    try:
        bench(args)
    finally:
        if args.cpu_limit:
            args.cpu_limit.remove()


def bench(args):
    """The runs main() asked for."""
    cache = os.path.join(tempfile.gettempdir(), "recbot-loadgen-clips")
    if args.relay:
        results = relay_runs([int(x) for x in args.relay.split(",")], args, cache, run)
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(results, handle, indent=2)
        return
    counts = [int(x) for x in args.publishers.split(",")]
    print(f"recbot bench: {os.cpu_count()} CPUs, {open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}, "
          f"{args.duration:.0f} s per run, loss {args.loss} %, burst loss {args.burst_loss or '-'}, jitter {args.jitter_ms:g} ms, net.core.rmem_max {open('/proc/sys/net/core/rmem_max').read().strip()}"
          + (f", recbot limited to {args.recbot_cpus:g} cores" if args.recbot_cpus else ""))
    print("    N recorder   cores  ms/pub-s  us/pkt xfloor  rss MB  MB/pub  +MB/p  frames%  rcv drops   1st key s  gen lag99 exit  recbot/gst cpu / rss")
    results, capacity, previous = [], None, {}
    index = 0
    while index < len(counts):
        n = counts[index]
        floor = run_floor(n, args, cache)
        ours = run("recbot", n, args, cache)
        theirs = None if args.no_gstreamer or n > args.gstreamer_up_to else run("gstreamer", n, args, cache)
        print(row(ours, theirs, floor, previous.get("recbot")), flush=True)
        if ours["worst_share"] < 99.9:
            print(f"             median publisher kept {ours['median_share']:.2f} % of its frames", flush=True)
        if theirs:
            print(row(theirs, None, floor, previous.get("gstreamer")), flush=True)
            previous["gstreamer"] = theirs
        previous["recbot"] = ours
        print(floor_row(floor), flush=True)
        if args.count_allocations:
            counted = [f"{r['kind']} {r['mallocs_per_packet']:.2f}" for r in (ours, theirs, floor) if r and r.get("mallocs_per_packet") is not None]
            print(f"             mallocs per packet: {', '.join(counted) or 'not counted'}", flush=True)
        results += [r for r in (ours, theirs, floor) if r]
        if ours["worst_share"] >= 99.9 and ours["exit"] == 0:
            capacity = n
            if index == len(counts) - 1 and not args.no_extend:
                counts.append(int(n * 1.5 + 31) // 32 * 32)
        else:
            break
        index += 1
    print(f"capacity: {capacity if capacity is not None else 'below ' + str(counts[0])} publishers with >= 99.9 % of frames "
          f"(the last N at which recbot kept 99.9 % of every publisher's video)")
    if args.faults:
        results += fault_runs(args.faults, args, cache)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    sys.exit(main())
