#!/usr/bin/env python3
"""The fault campaign behind dev/faults.sh: runs recbot against the bundled Sora-compatible test
server under faults and prints what survived, one row per part.

  faults.py --recbot PATH [--kills 50] [--short] [--seed N] [--work DIR]
            [--only kill,diskfull,concurrent,hostile,rejoin,hygiene,fleet,service,real-senders]

Parts:
  kill        N times: a test server (VP8 and H.264 publishers, each with Opus), `recbot join` on ONE
              shared data dir, SIGKILL at a random instant 1-8 s after its start (seeded), then
              `recbot repair --all` and `recbot verify SESSION`. Checks: repair exits 0 and ends the
              killed session (found by its pid) as `crashed`, every recording is `repaired` and
              verifies, one recording per publisher, and the media lost at the kill (the kill's wall
              time minus the recording's start, minus its duration) stays within --max-loss. A kill
              while a publisher's first frames still wait for its RTCP sender reports (at most 2 s,
              docs/timeline.md) leaves it no file: then its loss is all the media it sent before the
              kill, which must stay within --max-loss too.
  diskfull    (root, and `mount -t tmpfs` works) the data dir, catalog included (recbot has no
              option to put the catalog elsewhere), on a small tmpfs that fills after a few seconds
              of recording. Checks: `join` ends with exit 74 (storage failure), not by a signal, and
              every WebM it wrote decodes with `ffmpeg -v error -i FILE -enc_time_base:v 1:1000 -fps_mode passthrough -f null -` (the file's own timestamps) with nothing to
              say. Also reported: when the disk filled and when recbot exited, `recbot verify` on the
              files as left, and, after the tmpfs is grown, `recbot repair --all` and `recbot verify`.
  concurrent  N test servers (one VP8 publisher each) and N `recbot join` started at one moment on
              ONE fresh data dir, ~6 s each. Checks: every join exits 0, `sessions list` has N
              sessions, each with a recording, and every file verifies.
  hostile     one run per --hostile KIND of the test server (sps, timestamp-jumps, endless-frame,
              ssrc-flood, datachannel-flood), publishers VP8 and H.264 (honest) and H.264 (hostile).
              Checks: `join` exits 0, every honest publisher's file verifies, and the report's
              `events_stored` matches the events in the catalog. Reported: peak RSS (/usr/bin/time -v),
              what the hostile publisher sent, and the recordings' counters.
  rejoin      recbot's connection broken on purpose (each test-server fault, and as root a 20 s
              blackout), and the median time from the network's return to the first frame on disk;
  hygiene     50 forced rejoins in one session: fds and RSS stay where the first rejoin left them
              (both described in dev/faults_rejoin.py).
  fleet       a shared PostgreSQL catalog turned read-only, restarted and slowed mid-session; S3
              answering SlowDown for a minute; upload, repair and verify SIGKILLed; (root) the disk
              full during repair and upload: nothing lost, mislabelled or deleted early, no crash,
              and the next run finishes the work (dev/faults_fleet.py).
  service     three `recbot serve` workers on one PostgreSQL, Sora-like webhooks as 20 channels open
              and close over about 5 minutes (8 over about 2 with --short): each channel recorded
              exactly once, started within 2 s of session.created, ended within 2 s of
              session.destroyed, its files verified (dev/faults_service.py).
  overload    (root, a cgroup) recbot-loadgen's publishers recorded under a CPU quota of half what
              they need, then without it: the session survives, every publisher keeps >= 99 % of its
              audio, every file verifies, video is shed and back within 5 s of the lift
              (dev/faults_overload.py; --short: 48 publishers, 12 s capped and 8 s lifted).
  real-senders  (full run only, not --short) four Chromium publishers (VP8 simulcast, VP9, AV1,
              H.264) through Janus for 60 s with layer switches, recorded and judged against the
              senders' own getStats and frame numbers (Tests/Peers/judge_recording.py: kept >= 0.995,
              drift <= 20 ms, no repeats, verify ok); then the same with 5 % of the SRTP/SRTCP
              datagrams from Janus to recbot dropped (kept >= 0.99) (dev/faults_real_senders.py).

Every run's logs stay under the work directory, whose path is printed. Exit status 1 when a part fails.
"""
import argparse
import collections
import datetime
import glob
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "Tests", "Peers", "sora_test_server.py")
HOSTILE_KINDS = ("sps", "timestamp-jumps", "endless-frame", "ssrc-flood", "datachannel-flood")
PARTS = ("kill", "diskfull", "concurrent", "hostile", "rejoin", "hygiene", "fleet", "service", "overload", "real-senders")
LONG_PARTS = ("real-senders",)  # not in --short (CI) unless named with --only
LOOPBACK = ["--allow-address", "127.0.0.1/32"]

started_processes = []  # everything this script started, stopped by pid on the way out


# --- processes ---------------------------------------------------------------------------------


def spawn(command, log_path, **kwargs):
    log = open(log_path, "ab")
    process = subprocess.Popen(command, stdout=kwargs.pop("stdout", log), stderr=log, stdin=subprocess.DEVNULL, **kwargs)
    process.log = log
    started_processes.append(process)
    return process


def finish(process, timeout=10):
    """Waits for a process we started; terminates, then kills it, if it does not end in time."""
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            return process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()
    finally:
        process.log.close()


def stop_all():
    for process in started_processes:
        if process.poll() is None:
            try:
                process.kill()
                process.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass


def run(command, log_path, timeout=300):
    """Runs a command to its end: (exit status, stdout). Its stderr goes to the log."""
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(command)}\n".encode())
        log.flush()
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            log.write(b"(timed out)\n")
            return None, ""
    return done.returncode, done.stdout.decode(errors="replace")


def run_json(command, log_path, timeout=300, save=None):
    """run(), with stdout parsed as JSON (None if it is not); `save` keeps stdout in that file."""
    status, out = run(command, log_path, timeout)
    if save:
        with open(save, "w") as text:
            text.write(out)
    try:
        return status, json.loads(out) if out.strip() else None
    except ValueError:
        return status, None


class TestServer:
    """sora_test_server.py in the background; `url` once it listens."""

    def __init__(self, directory, arguments, name="server"):
        os.makedirs(directory, exist_ok=True)
        self.out_path = os.path.join(directory, f"{name}.out")
        self.truth_path = os.path.join(directory, f"{name}-truth.json")
        self.out = open(self.out_path, "wb")
        self.process = spawn([sys.executable, SERVER, *arguments, "--truth", self.truth_path],
                             os.path.join(directory, f"{name}.log"), stdout=self.out)
        self.url = None

    def wait_listening(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.out_path) as text:
                line = text.readline()
            if line.endswith("\n"):
                self.url = json.loads(line)["url"]
                return self.url
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"test server did not start (see {self.out_path[:-4]}.log)")

    def truth(self, wait=5.0):
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and not os.path.exists(self.truth_path):
            time.sleep(0.1)
        try:
            with open(self.truth_path) as text:
                return json.load(text)
        except (OSError, ValueError):
            return None

    def stop(self, wait=5.0):
        self.truth(wait)
        finish(self.process, timeout=3)
        self.out.close()


def peak_rss_mb(time_output_path):
    try:
        with open(time_output_path) as text:
            match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text.read())
        return int(match.group(1)) / 1024 if match else None
    except OSError:
        return None


def timed(command, time_path):
    return ["/usr/bin/time", "-v", "-o", time_path, *command]


def exit_description(status):
    if status is None:
        return "timed out"
    return f"signal {signal.Signals(-status).name}" if status < 0 else f"exit {status}"


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def verified(entries):
    """verify --json entries: (verified, total)."""
    entries = entries or []
    return sum(1 for e in entries if e.get("verification") == "verified"), len(entries)


# --- parts -------------------------------------------------------------------------------------


class Result:
    def __init__(self, part):
        self.part = part
        self.runs = 0
        self.passed = 0
        self.numbers = []
        self.failures = []
        self.details = []  # extra lines printed under the table
        self.skipped = None
        self.seconds = 0.0

    @property
    def verdict(self):
        if self.skipped:
            return "SKIPPED"
        return "PASS" if self.runs and self.passed == self.runs else "FAIL"


def part_kill(options, work, result):
    rng = random.Random(options.seed)
    data = os.path.join(work, "data")  # shared by every run: repair must pick the killed session
    losses = []
    for index in range(options.kills):
        result.runs += 1
        directory = os.path.join(work, f"run-{index + 1:03d}")
        os.makedirs(directory, exist_ok=True)
        log = os.path.join(directory, "commands.log")
        delay = rng.uniform(1.0, 8.0)
        problems = []
        server = TestServer(directory, ["--publisher", "vp8", "--publisher", "h264", "--max-seconds", "30"])
        try:
            url = server.wait_listening()
            channel = f"kill-{index + 1}"
            started = time.time()
            join = spawn([options.recbot, "join", "--channel", channel, "--url", url, "--duration", "60s",
                          "--data-dir", data, *LOOPBACK], os.path.join(directory, "join.log"))
            while time.time() < started + delay and join.poll() is None:
                time.sleep(0.01)
            if join.poll() is not None:
                problems.append(f"join ended by itself before the kill ({exit_description(join.returncode)})")
            killed_at = time.time()
            join.kill()
            finish(join)
        finally:
            server.stop()
        status, _ = run_json([options.recbot, "repair", "--all", "--data-dir", data, "--json"], log,
                                    save=os.path.join(directory, "repair.json"))
        if status != 0:
            problems.append(f"repair: {exit_description(status)}")
        _, sessions = run_json([options.recbot, "sessions", "list", "--data-dir", data, "--json", "--channel", channel], log)
        session = next((s for s in sessions or [] if s.get("pid") == join.pid), None)
        worst = None
        if session is None:
            problems.append("the killed session is not in the catalog")
        else:
            if session.get("end_reason") != "crashed":
                problems.append(f"end reason {session.get('end_reason')!r}, not 'crashed'")
            _, recordings = run_json([options.recbot, "recordings", "list", "--session", session["id"], "--data-dir", data,
                                      "--json"], log)
            recordings = recordings or []
            # A publisher whose first frames still waited for its RTCP sender reports (at most 2 s,
            # docs/timeline.md) has no file yet: the kill cost all it had sent, which must still
            # be within --max-loss.
            truth = server.truth() or {}
            recorded = {r.get("connection_id") for r in recordings}
            publishers = truth.get("publishers", [])
            if len(publishers) != 2:
                problems.append(f"the truth names {len(publishers)} publishers, not 2")
            for publisher in publishers:
                if publisher.get("connection_id") not in recorded:
                    sent = publisher.get("on_air_seconds") or 0
                    worst = sent if worst is None else max(worst, sent)
            if len(recordings) > 2:
                problems.append(f"{len(recordings)} recordings, 2 publishers")
            if recordings:
                status, checks = run_json([options.recbot, "verify", session["id"], "--data-dir", data, "--json"], log,
                                          save=os.path.join(directory, "verify.json"))
                good, total = verified(checks)
                if status != 0 or good != total:
                    problems.append(f"verify: {exit_description(status)}, {good}/{total} files verified")
            for recording in recordings:
                if recording.get("status") != "repaired":
                    problems.append(f"recording {recording.get('id')} is {recording.get('status')!r}")
                if recording.get("duration_ms") is None or not recording.get("started_at"):
                    problems.append(f"recording {recording.get('id')} has no duration")
                    continue
                loss = (killed_at - parse_time(recording["started_at"])) - recording["duration_ms"] / 1000
                worst = loss if worst is None else max(worst, loss)
        if worst is not None:
            losses.append((worst, index + 1, delay))
            if worst > options.max_loss:
                problems.append(f"lost {worst:.2f} s at the kill (over {options.max_loss} s)")
        line = f"run {index + 1:3d}: kill at {delay:4.2f} s, loss {worst if worst is not None else float('nan'):5.2f} s"
        if problems:
            result.failures.append(f"kill run {index + 1} ({directory}): " + "; ".join(problems))
            line += "  FAIL: " + "; ".join(problems)
        else:
            result.passed += 1
        with open(os.path.join(work, "runs.txt"), "a") as out:
            out.write(line + "\n")
    result.numbers.append(f"seed {options.seed}, shared data dir")
    if losses:
        worst, run_number, delay = max(losses)
        result.numbers.append(f"worst loss {worst:.2f} s (run {run_number}, kill at {delay:.1f} s)")
        result.numbers.append(f"median loss {statistics.median(loss for loss, _, _ in losses):.2f} s")
    result.details.append(f"kill: per run in {os.path.join(work, 'runs.txt')}")


def part_diskfull(options, work, result):
    if os.geteuid() != 0:
        result.skipped = "needs root and tmpfs"
        return
    mount_point = os.path.join(work, "tmpfs")
    os.makedirs(mount_point, exist_ok=True)
    size = options.diskfull_size
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mount_point],
                      stderr=subprocess.DEVNULL).returncode != 0:
        result.skipped = "needs root and tmpfs"
        return
    log = os.path.join(work, "commands.log")
    try:
        result.runs = 1
        data = os.path.join(mount_point, "data")
        full_at = []
        sampling = threading.Event()

        def watch(begun):
            while not sampling.is_set():
                stats = os.statvfs(mount_point)
                if stats.f_bavail * stats.f_frsize < 16384 and not full_at:
                    full_at.append(time.monotonic() - begun)
                time.sleep(0.1)

        server = TestServer(work, ["--publisher", "vp8", "--publisher", "h264", "--max-seconds", "120"])
        try:
            url = server.wait_listening()
            time_path = os.path.join(work, "join.time")
            begun = time.monotonic()
            watcher = threading.Thread(target=watch, args=(begun,), daemon=True)
            watcher.start()
            join = spawn(timed([options.recbot, "join", "--channel", "diskfull", "--url", url, "--duration",
                                f"{options.diskfull_seconds}s", "--data-dir", data, *LOOPBACK], time_path),
                         os.path.join(work, "join.log"))
            status = finish(join, timeout=options.diskfull_seconds + 60)
            ended = time.monotonic() - begun
            sampling.set()
        finally:
            server.stop()
        problems = []
        if status != 74:
            problems.append(f"join: {exit_description(status)}, expected exit 74")
        files = sorted(glob.glob(os.path.join(data, "recordings", "*", "*.webm")))
        clean, complaints = 0, collections.Counter()
        for path in files:
            with open(log, "a") as text:
                text.write(f"$ ffmpeg -v error -i {path} -enc_time_base:v 1:1000 -fps_mode passthrough -f null -\n")
            # Every frame decoded on the file's own millisecond timestamps: without these two
            # options ffmpeg re-times video to its guessed frame rate and then complains about
            # its own rounding whenever capture times jitter (which real cameras' do).
            completed = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-enc_time_base:v", "1:1000",
                                        "-fps_mode", "passthrough", "-f", "null", "-"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            said = [line for line in completed.stderr.decode(errors="replace").splitlines() if line.strip()]
            with open(log, "a") as text:
                text.write("\n".join(said) + "\n")
            if completed.returncode == 0 and not said:
                clean += 1
            for line in said:
                complaints[re.sub(r"^\[[^]]*\] ", "", line)[:60]] += 1
        if not files:
            problems.append("no WebM file written")
        elif clean != len(files):
            problems.append(f"ffmpeg: {len(files) - clean}/{len(files)} files not clean ("
                            + "; ".join(f"{text} x{count}" for text, count in complaints.most_common(3)) + ")")
        # The files as left, kept for a look afterwards (the tmpfs goes away).
        as_left = os.path.join(work, "as-left")
        os.makedirs(as_left, exist_ok=True)
        for path in glob.glob(os.path.join(data, "recordings", "*", "*")):
            shutil.copy(path, as_left)
        # recbot's own reading of the files as left (its catalog is on the full disk: a scratch one)
        scratch = os.path.join(work, "verify-scratch")
        _, checks = run_json([options.recbot, "verify", *files, "--data-dir", scratch, "--json"], log,
                                          save=os.path.join(work, "verify-as-left.json")) if files else (None, [])
        good_as_left, _ = verified(checks)
        finalized = sum(1 for path in files if os.path.exists(path[:-5] + ".json"))
        # after the disk is grown: repair and verify
        subprocess.run(["mount", "-o", "remount,size=64m", mount_point], stderr=subprocess.DEVNULL)
        repair_status, _ = run_json([options.recbot, "repair", "--all", "--data-dir", data, "--json"], log)
        _, sessions = run_json([options.recbot, "sessions", "list", "--data-dir", data, "--json"], log)
        after = "no session"
        if sessions:
            _, checks = run_json([options.recbot, "verify", sessions[0]["id"], "--data-dir", data, "--json"], log,
                                             save=os.path.join(work, "verify-after-repair.json"))
            good, total = verified(checks)
            gaps = [g for c in checks or [] for t in (c.get("report") or {}).get("tracks", []) for g in t.get("gaps", [])]
            after = f"repair {exit_description(repair_status)}, verify {good}/{total}, gaps>1s {len(gaps)}"
            for check in checks or []:
                for track in (check.get("report") or {}).get("tracks", []):
                    result.details.append(f"diskfull: after repair {os.path.basename(check['path'])} {track['codec_id']}: "
                                          f"{track['frames']} frames {track['first_ms']}-{track['last_ms']} ms, gaps {track.get('gaps')}")
        rss = peak_rss_mb(time_path)
        result.numbers += [f"tmpfs {size}: full at {full_at[0]:.1f} s" if full_at else f"tmpfs {size}: never full",
                           f"join {exit_description(status)} at {ended:.1f} s", f"ffmpeg clean {clean}/{len(files)}",
                           f"sidecars {finalized}/{len(files)}", f"verify as left {good_as_left}/{len(files)}",
                           f"after growing: {after}", f"peak RSS {rss:.0f} MB" if rss else "peak RSS ?"]
        if problems:
            result.failures.append("diskfull: " + "; ".join(problems) + f" (logs in {work})")
        else:
            result.passed = 1
    finally:
        for _ in range(10):
            if subprocess.run(["umount", mount_point], stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.5)
        else:
            subprocess.run(["umount", "-l", mount_point], stderr=subprocess.DEVNULL)


def part_concurrent(options, work, result):
    count = options.concurrent
    data = os.path.join(work, "data")  # fresh: no catalog yet
    servers = [TestServer(os.path.join(work, f"join-{n + 1:02d}"), ["--publisher", "vp8", "--max-seconds", "120"])
               for n in range(count)]
    joins = []
    try:
        urls = [server.wait_listening(timeout=120) for server in servers]
        for n, url in enumerate(urls):  # at one moment, as fast as processes start
            directory = os.path.join(work, f"join-{n + 1:02d}")
            joins.append(spawn(timed([options.recbot, "join", "--channel", f"concurrent-{n + 1}", "--url", url,
                                      "--duration", f"{options.concurrent_seconds}s", "--data-dir", data, *LOOPBACK],
                                     os.path.join(directory, "join.time")), os.path.join(directory, "join.log")))
        statuses = [finish(join, timeout=options.concurrent_seconds + 120) for join in joins]
    finally:
        for server in servers:
            server.stop(wait=2)
    log = os.path.join(work, "commands.log")
    result.runs = count
    _, sessions = run_json([options.recbot, "sessions", "list", "--data-dir", data, "--json"], log)
    _, recordings = run_json([options.recbot, "recordings", "list", "--data-dir", data, "--json"], log)
    sessions, recordings = sessions or [], recordings or []
    by_channel = {s["channel_id"]: s for s in sessions}
    per_session = collections.Counter(r["session_id"] for r in recordings)
    _, checks = run_json([options.recbot, "verify", *[s["id"] for s in sessions], "--data-dir", data, "--json"],
                                     log, save=os.path.join(work, "verify.json")) if sessions else (None, [])
    good_by_session = collections.Counter(c["session_id"] for c in checks or [] if c.get("verification") == "verified")
    for n, status in enumerate(statuses):
        problems = []
        if status != 0:
            problems.append(f"join {exit_description(status)}")
        session = by_channel.get(f"concurrent-{n + 1}")
        if session is None:
            problems.append("no session in the catalog")
        elif not per_session[session["id"]]:
            problems.append("no recording")
        elif good_by_session[session["id"]] != per_session[session["id"]]:
            problems.append(f"{good_by_session[session['id']]}/{per_session[session['id']]} files verified")
        if problems:
            result.failures.append(f"concurrent join {n + 1} ({os.path.join(work, f'join-{n + 1:02d}')}): " + "; ".join(problems))
        else:
            result.passed += 1
    good, total = verified(checks)
    rss = [peak_rss_mb(os.path.join(work, f"join-{n + 1:02d}", "join.time")) for n in range(count)]
    rss = [r for r in rss if r]
    result.numbers += [f"{sum(1 for s in statuses if s == 0)}/{count} exit 0", f"{len(sessions)} sessions listed",
                       f"{len(recordings)} recordings", f"verified {good}/{total}"]
    if rss:
        result.numbers.append(f"peak RSS max {max(rss):.0f} MB")


def part_hostile(options, work, result):
    rows = []
    for kind in options.hostile_kinds:
        result.runs += 1
        directory = os.path.join(work, kind)
        data = os.path.join(directory, "data")
        log = os.path.join(directory, "commands.log")
        problems = []
        server = TestServer(directory, ["--publisher", "vp8", "--publisher", "h264", "--publisher", "h264",
                                        "--hostile", kind, "--hostile-after", "1", "--max-seconds", "120"])
        extra = ["--data-channel-signaling", "--data-channel", "#chat"] if kind == "datachannel-flood" else []
        time_path = os.path.join(directory, "join.time")
        try:
            url = server.wait_listening()
            begun = time.monotonic()
            join = spawn(timed([options.recbot, "join", "--channel", f"hostile-{kind}", "--url", url, "--duration",
                                f"{options.hostile_seconds}s", "--data-dir", data, *LOOPBACK, *extra], time_path),
                         os.path.join(directory, "join.log"))
            status = finish(join, timeout=options.hostile_seconds + 120)
            wall = time.monotonic() - begun
        finally:
            server.stop()
        truth = server.truth(0) or {}
        if status != 0:
            problems.append(f"join {exit_description(status)}")
        _, sessions = run_json([options.recbot, "sessions", "list", "--data-dir", data, "--json"], log)
        _, recordings = run_json([options.recbot, "recordings", "list", "--data-dir", data, "--json"], log)
        recordings = recordings or []
        session_id = (sessions or [{}])[0].get("id")
        _, checks = run_json([options.recbot, "verify", session_id, "--data-dir", data, "--json"], log,
                             save=os.path.join(directory, "verify.json")) if session_id else (None, [])
        verdicts = {c["recording_id"]: c for c in checks or []}
        honest_ids = {p["connection_id"] for p in truth.get("publishers", []) if not p.get("hostile")}
        hostile_id = (truth.get("hostile") or {}).get("connection_id")
        honest = [r for r in recordings if r["connection_id"] in honest_ids]
        if len(honest) != len(honest_ids) or not honest_ids:
            problems.append(f"{len(honest)} honest recordings of {len(honest_ids)} honest publishers")
        honest_good = 0
        for recording in honest:
            check = verdicts.get(recording["id"]) or {}
            if check.get("verification") == "verified":
                honest_good += 1
            else:
                tracks = (check.get("report") or {}).get("tracks", [])
                errors = ", ".join(f"{t['codec_id']} {t['decode_errors']} decode errors of {t['frames']}" for t in tracks)
                problems.append(f"honest {recording['video_codec']} file not verified ({errors or 'no report'})")
        hostile_recording = next((r for r in recordings if r["connection_id"] == hostile_id), None)
        hostile_verdict = (verdicts.get(hostile_recording["id"]) or {}).get("verification") if hostile_recording else None
        # The report's count of stored events against the catalog's.
        reports = glob.glob(os.path.join(data, "recordings", "*", "report-*.json"))
        report = json.load(open(reports[0])) if reports else {}
        stored = None
        if session_id:
            _, events = run_json([options.recbot, "events", "list", "--session", session_id, "--data-dir", data, "--json"], log)
            stored = len(events or [])
            if report and report.get("events_stored") != stored:
                problems.append(f"report says {report.get('events_stored')} events stored, "
                                f"{report.get('events_refused')} refused; the catalog has {stored}")
        with open(os.path.join(directory, "join.log"), errors="replace") as text:
            log_lines = collections.Counter(re.sub(r" (what|error)=.*", "", line.strip())[:90]
                                            for line in text if line.startswith("level=error"))
        rss = peak_rss_mb(time_path)
        sent = ((truth.get("hostile") or {}).get("sent") or {}).get(kind, {})
        sent_text = ", ".join(f"{k} {v}" for k, v in sent.items() if isinstance(v, int) and not k.startswith(("variant", "jump ")))
        counters = []
        for recording in recordings:
            who = "hostile" if recording["connection_id"] == hostile_id else "honest"
            counters.append(f"{who} {recording['video_codec']}: {recording['video_frames']} video frames, "
                            f"{recording['packets_received']} packets, dropped {recording['frames_dropped']}, "
                            f"PLI {recording['pli_sent']}, sizes {','.join(recording.get('video_sizes') or [])}")
        sent_frames = {p["connection_id"]: p.get("video_frames_sent") for p in truth.get("publishers", [])}
        ok = not problems
        result.passed += ok
        if problems:
            result.failures.append(f"hostile {kind} ({directory}): " + "; ".join(problems))
        rows.append((kind, exit_description(status), f"{rss:.0f} MB" if rss else "?", f"{honest_good}/{len(honest)}",
                     hostile_verdict or "-", f"{wall:.1f} s", "PASS" if ok else "FAIL"))
        result.details.append(f"hostile {kind}: sent: {sent_text}")
        result.details += [f"hostile {kind}:   {line} (sent {sent_frames.get(r['connection_id'])} frames)"
                           for line, r in zip(counters, recordings)]
        result.details.append(f"hostile {kind}:   events: report stored {report.get('events_stored')} "
                              f"refused {report.get('events_refused')}, catalog {stored}")
        for line, count in log_lines.most_common(3):
            result.details.append(f"hostile {kind}:   log x{count}: {line}")
    peak = max((float(r[2].split()[0]) for r in rows if r[2] != "?"), default=None)
    if peak is not None:
        result.numbers.append(f"peak RSS {peak:.0f} MB")
    result.numbers.append(f"honest files verified in {sum(1 for r in rows if r[3].split('/')[0] == r[3].split('/')[1])}"
                          f"/{len(rows)} runs")
    result.table = rows


# --- output ------------------------------------------------------------------------------------


def print_table(header, rows):
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recbot", required=True, help="the recbot executable")
    parser.add_argument("--loadgen", help="the recbot-loadgen executable (the overload part)")
    parser.add_argument("--kills", type=int, default=None, help="SIGKILL runs (default 50; 5 with --short)")
    parser.add_argument("--short", action="store_true",
                        help="the CI version: 5 kills, 5 concurrent joins, 5 s hostile runs, two rejoin faults, 10 forced rejoins")
    parser.add_argument("--seed", type=int, default=None, help="seed for the kill instants (default: random, printed)")
    parser.add_argument("--work", help="where every run's logs go (default: a new temporary directory)")
    parser.add_argument("--only", default=None, help=f"comma-separated parts: {','.join(PARTS)} (default: all; with --short all "
                                                     f"but {','.join(LONG_PARTS)})")
    parser.add_argument("--max-loss", type=float, default=2.0, metavar="SECONDS",
                        help="kill: the most media a kill may lose per recording (default 2.0: a 1 s cluster plus "
                             "the 1 s --max-recovery-delay)")
    parser.add_argument("--concurrent", type=int, default=None, help="concurrent joins (default 20; 5 with --short)")
    parser.add_argument("--hostile-kind", action="append", choices=HOSTILE_KINDS, dest="hostile_kinds",
                        help="only these hostile kinds (repeatable; default all)")
    parser.add_argument("--diskfull-size", default="1m", help="tmpfs size for the disk-full run (default 1m)")
    options = parser.parse_args()
    if options.only is None:
        only = [p for p in PARTS if not (options.short and p in LONG_PARTS)]
    else:
        only = [p.strip() for p in options.only.split(",") if p.strip()]
    unknown = [p for p in only if p not in PARTS]
    if unknown:
        parser.error(f"--only: unknown part {', '.join(unknown)} (parts: {', '.join(PARTS)})")
    options.recbot = os.path.abspath(options.recbot)
    if not os.access(options.recbot, os.X_OK):
        parser.error(f"--recbot {options.recbot}: not an executable")
    options.kills = options.kills if options.kills is not None else (5 if options.short else 50)
    options.concurrent = options.concurrent if options.concurrent is not None else (5 if options.short else 20)
    options.concurrent_seconds = 6
    options.hostile_seconds = 5 if options.short else 15
    options.diskfull_seconds = 10 if options.short else 15
    options.hostile_kinds = options.hostile_kinds or list(HOSTILE_KINDS)
    options.overload_publishers = 48 if options.short else 96
    options.overload_capped, options.overload_lifted = (12, 8) if options.short else (30, 30)
    if "overload" in only and not (options.loadgen and os.access(options.loadgen, os.X_OK)):
        parser.error("the overload part needs --loadgen PATH (the recbot-loadgen executable)")
    if options.loadgen:
        options.loadgen = os.path.abspath(options.loadgen)
    options.seed = options.seed if options.seed is not None else random.SystemRandom().randrange(1 << 31)
    work = os.path.abspath(options.work) if options.work else tempfile.mkdtemp(prefix="recbot-faults-")
    os.makedirs(work, exist_ok=True)
    print(f"faults: work directory {work}")
    print(f"faults: recbot {options.recbot}; seed {options.seed}; parts {', '.join(only)}"
          f"{' (short)' if options.short else ''}", flush=True)

    def interrupted(number, _frame):
        raise KeyboardInterrupt(f"signal {number}")

    signal.signal(signal.SIGTERM, interrupted)
    results = []
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import faults_fleet  # noqa: E402 - the catalog, storage and job faults of a fleet
    import faults_overload  # noqa: E402 - past the CPU capacity
    import faults_real_senders  # noqa: E402 - Chromium publishers through Janus, judged
    import faults_service  # noqa: E402 - recbot serve driven by Sora-like webhooks
    import faults_rejoin  # noqa: E402 - the network parts, in a file of their own
    faults_rejoin.common = faults_fleet.common = faults_real_senders.common = faults_overload.common = sys.modules[__name__]
    faults_service.common = sys.modules[__name__]
    runners = {"kill": part_kill, "diskfull": part_diskfull, "concurrent": part_concurrent, "hostile": part_hostile,
               "rejoin": faults_rejoin.part_rejoin, "hygiene": faults_rejoin.part_hygiene, "fleet": faults_fleet.part_fleet, "service": faults_service.part_service,
               "overload": faults_overload.part_overload,
               "real-senders": faults_real_senders.part_real_senders}
    began = time.monotonic()
    try:
        for part in PARTS:
            if part not in only:
                continue
            result = Result(part)
            directory = os.path.join(work, part)
            os.makedirs(directory, exist_ok=True)
            print(f"faults: {part} ...", flush=True)
            start = time.monotonic()
            try:
                runners[part](options, directory, result)
            except KeyboardInterrupt:
                raise
            except Exception as error:  # noqa: BLE001 - a broken part is a failed part; the others still run
                result.failures.append(f"{part}: {type(error).__name__}: {error}")
                result.runs = max(result.runs, 1)
            finally:
                stop_all()
            result.seconds = time.monotonic() - start
            results.append(result)
            print(f"faults: {part} {result.verdict} in {result.seconds:.0f} s", flush=True)
    finally:
        stop_all()

    print()
    print_table(("part", "runs", "passed", "key numbers", "time", "verdict"),
                [(r.part, r.runs if not r.skipped else "-", r.passed if not r.skipped else "-",
                  ("; ".join(r.numbers) if not r.skipped else f"{r.part}: skipped ({r.skipped})"),
                  f"{r.seconds:.0f} s", r.verdict) for r in results])
    for result in results:
        if getattr(result, "table", None):
            print()
            print_table(("hostile kind", "join", "peak RSS", "honest verified", "hostile file", "wall", "verdict"), result.table)
        if getattr(result, "table_rejoin", None):
            print()
            print_table(("fault", "outage", "media lost", "least media", "back → first frame", "verdict"), result.table_rejoin)
        if getattr(result, "table_fleet", None):
            print()
            print_table(("fleet fault", "catalog writes lost", "wrongly failed", "wrongly deleted", "crashes", "what the next run found",
                         "verdict"), result.table_fleet)
        if getattr(result, "table_real_senders", None):
            print()
            print_table(("real senders", "codec", "kept", "missing", "repeats", "A/V drift", "verify", "lost/recovered/nacked/PLI",
                         "verdict"), result.table_real_senders)
    details = [line for r in results for line in r.details]
    if details:
        print()
        print("\n".join(details))
    failures = [line for r in results for line in r.failures]
    if failures:
        print()
        print("failures:")
        print("\n".join(f"  {line}" for line in failures))
    print()
    print(f"faults: {time.monotonic() - began:.0f} s; logs in {work}")
    sys.exit(1 if any(r.verdict == "FAIL" for r in results) else 0)


if __name__ == "__main__":
    main()
