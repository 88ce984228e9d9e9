"""The real-sender part of the fault campaign (dev/faults.py --only real-senders; in the full run,
not in --short): libwebrtc's own streams through a real SFU, judged against what the senders say
they sent.

  real-senders  four headless Chromium publishers (VP8 simulcast, VP9 SVC, AV1, H.264, each with
                Opus) in a Janus VideoRoom behind the Sora-signaling front
                (Tests/Peers/sora_janus_server.py), 60 s, the forwarded layer r1 -> r0 at 20 s -> r2
                at 40 s, recorded by `recbot join --simulcast-rid r1`, then judged by
                Tests/Peers/judge_recording.py: every frame the senders sent on the forwarded layer
                while recbot was subscribed in the file (kept >= 0.995), frame numbers missing
                inside the span <= 0.5 %, no picture twice, flash/beep drift <= 20 ms (the
                sender's own camera loop and microphone lag corrected), timelines monotonic, every frame decodes,
                `recbot verify` ok. Then the same with --loss 5: the front's UDP relay drops 5 %
                of the SRTP/SRTCP datagrams from Janus to recbot (seed 1; STUN and DTLS pass) and
                delays each datagram 10 ms each way (Janus resends nothing at a 0 ms RTT), so
                recbot must NACK and recover: kept >= 0.99 and missing <= 1 %. Also checked: join
                exits 0 and one file per publisher. Reported per codec: kept, missing, repeats,
                drift, verify, and recbot's own counters (packets lost / recovered / NACKed, PLIs).
                Needs chromium and janus (deploy/install-deps.sh); skipped without them.
"""
import glob
import json
import os
import shutil
import sys
import time

common = None  # dev/faults.py, which imports this module and sets it (its helpers and process list)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRONT = os.path.join(ROOT, "Tests", "Peers", "sora_janus_server.py")
JUDGE = os.path.join(ROOT, "Tests", "Peers", "judge_recording.py")
CODECS = ("vp8", "vp9", "av1", "h264")
SECONDS = 60
SWITCHES = ("20:r0", "40:r2")
# (name, the front's extra flags, the judge's thresholds)
RUNS = (("clean", [], ["--min-kept", "0.995", "--max-missing-ratio", "0.005", "--max-av-drift-ms", "20"]),
        ("loss-5", ["--loss", "5", "--loss-seed", "1"], ["--min-kept", "0.99", "--max-missing-ratio", "0.01", "--max-av-drift-ms", "20"]))


def available():
    missing = [name for name in ("janus", "chromium") if shutil.which(name) is None]
    return None if not missing else f"needs {' and '.join(missing)}"


def wait_listening(path, process, timeout=180):
    """The front's first stdout line ({"type": "listening", "url": ...}); it starts Janus and the
    browsers first, which takes a while on two cores."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path) as text:
            line = text.readline()
        if line.endswith("\n"):
            return json.loads(line)["url"]
        if process.poll() is not None:
            break
        time.sleep(0.25)
    raise RuntimeError(f"the Janus front did not start (see {path[:-4]}.log)")


def recbot_counters(data):
    """Per connection id: the sidecar's receive counters (all parts summed)."""
    counters = {}
    for path in glob.glob(os.path.join(data, "recordings", "*", "*.json")):
        if os.path.basename(path).startswith("report-"):
            continue
        try:
            with open(path) as text:
                sidecar = json.load(text)
        except (OSError, ValueError):
            continue
        stats, mine = sidecar.get("stats") or {}, counters.setdefault(sidecar.get("connection_id"), {})
        for key in ("packets_lost", "packets_recovered", "nacked_sequence_numbers", "pli_sent", "frames_dropped_waiting_for_keyframe"):
            mine[key] = mine.get(key, 0) + (stats.get(key) or 0)
    return counters


def real_senders_run(options, work, name, front_flags, thresholds):
    """One 60 s recording and its judgement: (problems, rows per codec, relay counts)."""
    directory = os.path.join(work, name)
    os.makedirs(directory, exist_ok=True)
    data = os.path.join(directory, "data")
    truth_path = os.path.join(directory, "truth.json")
    out_path = os.path.join(directory, "front.out")
    problems = []
    switches = [arg for switch in SWITCHES for arg in ("--layer-switch-after", switch)]
    with open(out_path, "wb") as out:
        front = common.spawn([sys.executable, FRONT, "--chromium", ",".join(CODECS), "--duration", str(SECONDS), "--truth", truth_path,
                              *switches, *front_flags, "--max-seconds", str(SECONDS + 240)],
                             os.path.join(directory, "front.log"), stdout=out)
    try:
        url = wait_listening(out_path, front)
        # Janus gathers no loopback candidate: media runs over the host's own address (it never
        # leaves the machine), so recbot keeps its default host addresses (no --allow-address).
        join = common.spawn([options.recbot, "join", "--channel", f"real-senders-{name}", "--url", url, "--duration", f"{SECONDS + 60}s",
                             "--simulcast-rid", "r1", "--data-dir", data], os.path.join(directory, "join.log"))
        status = common.finish(join, timeout=SECONDS + 240)
    finally:
        common.finish(front, timeout=30)  # it writes the truth and stops Janus and the browsers itself
    if status != 0:
        problems.append(f"join {common.exit_description(status)}")
    try:
        with open(truth_path) as text:
            truth = json.load(text)
    except (OSError, ValueError):
        return problems + ["the front wrote no truth"], [], None
    if truth.get("not_publishing"):
        problems.append(f"publishers not on air: {truth['not_publishing']}")
    log = os.path.join(directory, "commands.log")
    judge_status, verdict = common.run_json([sys.executable, JUDGE, "--data-dir", data, "--truth", truth_path, "--recbot", options.recbot,
                                             "--table", *thresholds], log, timeout=900, save=os.path.join(directory, "judge.json"))
    if verdict is None:
        return problems + [f"judge: {common.exit_description(judge_status)}, no verdict (see {log})"], [], truth.get("relay")
    counters = recbot_counters(data)
    rows = []
    codecs = []
    for connection, entry in verdict.get("publishers", {}).items():
        codec = entry.get("codec") or "?"
        codecs.append(codec)
        checks = entry.get("checks") or {}
        failed = [check for check, value in checks.items() if not value.get("pass")]
        if failed:
            details = ", ".join(f"{check} {checks[check].get('value')}" if checks[check].get("value") is not None else check
                                for check in failed)
            problems.append(f"{codec}: {details}")
        fn = entry.get("frame_numbers") or {}
        mine = counters.get(connection, {})
        files = len(entry.get("files") or [])
        if files != 1:
            problems.append(f"{codec}: {files} files")
        rows.append((name, codec, checks.get("kept", {}).get("value"), fn.get("missing_inside_span"), fn.get("missing_ratio"),
                     fn.get("repeated"), checks.get("av_drift", {}).get("value"), checks.get("verify", {}).get("pass"),
                     mine, "FAIL" if failed or files != 1 else "PASS"))
    if sorted(codecs) != sorted(CODECS):
        problems.append(f"judged {sorted(codecs)}, publishers {sorted(CODECS)}")
    return problems, rows, truth.get("relay")


def part_real_senders(options, work, result):
    unavailable = available()
    if unavailable:
        result.skipped = unavailable
        return
    table = []
    for name, front_flags, thresholds in RUNS:
        result.runs += 1
        problems, rows, relay = real_senders_run(options, work, name, front_flags, thresholds)
        given = dict(zip(thresholds[::2], thresholds[1::2]))
        limits = (f"kept >= {given['--min-kept']}, missing <= {float(given['--max-missing-ratio']):.1%}, "
                  f"A/V drift <= {given['--max-av-drift-ms']} ms")
        if problems:
            result.failures.append(f"real-senders {name} ({os.path.join(work, name)}): " + "; ".join(problems))
        else:
            result.passed += 1
        result.numbers.append(f"{name} {'FAIL' if problems else 'PASS'}")
        for run, codec, kept, missing, missing_ratio, repeated, drift, verify, mine, verdict in rows:
            counted = (f"{mine.get('packets_lost', 0)}/{mine.get('packets_recovered', 0)}/{mine.get('nacked_sequence_numbers', 0)}/"
                       f"{mine.get('pli_sent', 0)}") if mine else "-"
            table.append((run, codec, f"{kept:.4f}" if kept is not None else "-",
                          f"{missing} ({missing_ratio:.2%})" if missing is not None and missing_ratio is not None else "-",
                          repeated if repeated is not None else "-", f"{drift:.1f} ms" if drift is not None else "-",
                          "-" if verify is None else ("ok" if verify else "FAIL"), counted, verdict))
        result.details.append(f"real-senders {name}: {SECONDS} s, 4 Chromium publishers, switches {', '.join(SWITCHES)}; "
                              f"judged at {limits}")
        if relay:
            sent = relay["to_recorder"]
            total = sent["rtp_forwarded"] + sent["rtp_dropped"]
            result.details.append(f"real-senders {name}: relay dropped {sent['rtp_dropped']} of {total} SRTP/SRTCP datagrams to recbot "
                                  f"({sent['rtp_dropped'] / total:.2%}, seed {relay['seed']}); STUN {sent['stun']}, DTLS {sent['dtls']} "
                                  "passed")
    result.table_real_senders = table
