#!/usr/bin/python3
"""Big-file run (issue 28): one publisher at about 40 Mbit/s until its file passes 4 GiB; then
recbot is SIGKILLed, and the file is repaired, verified and uploaded in multipart to SeaweedFS.

  bench/bench.sh --big-file [--gib 4.1]    (or: bigfile.py --recbot R --loadgen L)

The clip is made once with ffmpeg (1080p30 VP8 with noise, so the encoder cannot undershoot)
and cached. Checks, each a line of the verdict:
  written    the file passed --gib while recording, and recbot's RSS stayed bounded
  repaired   `repair --all` finalized it (status repaired); its size and frames are > 32-bit where
             they should be, the same in the catalog, the sidecar and the repair report
  verified   `verify --jobs 2`: every frame decodes, and the last timestamp is where the kill was
  uploaded   `upload --pending`: the object's size is the file's, its ETag names many parts
             (multipart), and it reads back (boto3) with the file's SHA-256
Exit 1 when a check fails. --json writes the numbers.
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

DEV = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dev")
sys.path.insert(0, DEV)
import faults as common  # noqa: E402  (spawn, run_json, timed, peak_rss_mb)
import faults_fleet  # noqa: E402  (SeaweedFS)

faults_fleet.common = common
GIB = 1 << 30


def make_clip(cache, kilobits):
    path = os.path.join(cache, f"bigfile-1080p30-noise-{kilobits}k-20s-g2.webm")
    if os.path.exists(path):
        return path
    os.makedirs(cache, exist_ok=True)
    partial = path + ".partial.webm"
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
                    "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30,noise=alls=60:allf=t",
                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "20",
                    "-c:v", "libvpx", "-b:v", f"{kilobits}k", "-minrate", f"{kilobits}k", "-maxrate", f"{kilobits}k",
                    "-g", "60", "-deadline", "realtime", "-cpu-used", "8", "-auto-alt-ref", "0", "-lag-in-frames", "0",
                    "-c:a", "libopus", "-b:a", "32k", "-frame_duration", "20", "-ac", "1", partial], check=True)
    os.rename(partial, path)
    return path


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as handle:
            return int(next(line for line in handle if line.startswith("VmRSS:")).split()[1]) / 1024
    except (OSError, StopIteration):
        return None


def record_until(args, work, clip):
    """Records until the file passes --gib, then SIGKILLs recbot: (file path, numbers)."""
    generator = common.spawn([args.loadgen, "--publishers", "1", "--clip", clip, "--truth", os.path.join(work, "truth.json")],
                             os.path.join(work, "loadgen.log"), stdout=subprocess.PIPE, text=True)
    url = json.loads(generator.stdout.readline())["url"]
    data = os.path.join(work, "data")
    recbot = common.spawn([args.recbot, "join", "--channel", "bigfile", "--url", url, "--data-dir", data, *common.LOOPBACK],
                          os.path.join(work, "recbot.log"))
    started, peak, path, size, last_print = time.monotonic(), 0.0, None, 0, 0.0
    while recbot.poll() is None and time.monotonic() - started < args.timeout:
        time.sleep(2)
        peak = max(peak, rss_mb(recbot.pid) or 0)
        files = glob.glob(os.path.join(data, "recordings", "*", "*.webm"))
        path = files[0] if files else None
        size = os.path.getsize(path) if path else 0
        if time.monotonic() - last_print >= 60:
            last_print = time.monotonic()
            print(f"bigfile: {time.monotonic() - started:.0f} s, {size / GIB:.2f} GiB, RSS {peak:.0f} MB", flush=True)
        if size >= args.gib * GIB:
            break
    seconds = time.monotonic() - started
    still_running = recbot.poll() is None
    recbot.kill()
    common.finish(recbot)
    common.finish(generator, timeout=60)
    return path, {"record_seconds": round(seconds), "bytes_at_kill": size, "killed": still_running,
                  "mbit_per_s": round(size * 8 / max(seconds, 1) / 1e6, 1), "join_peak_rss_mb": round(peak)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recbot", required=True)
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--gib", type=float, default=4.1, help="kill recbot once the file is this big")
    parser.add_argument("--kilobits", type=int, default=42_000, help="the clip's video bitrate")
    parser.add_argument("--timeout", type=float, default=1800, help="give up recording after this many seconds")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--resume", metavar="WORK", help="only upload again, in a kept run's directory (its numbers.json)")
    parser.add_argument("--json")
    args, _ = parser.parse_known_args()
    work = args.resume or tempfile.mkdtemp(prefix="recbot-bigfile-")
    clip = make_clip(os.path.join(tempfile.gettempdir(), "recbot-bench-clip"), args.kilobits)
    print(f"bigfile: clip {clip} ({os.path.getsize(clip) * 8 / 20 / 1e6:.1f} Mbit/s); work {work}", flush=True)
    problems, numbers = [], {}
    try:
        if args.resume:
            with open(os.path.join(work, "numbers.json")) as handle:
                numbers = json.load(handle)
            path = glob.glob(os.path.join(work, "data", "recordings", "*", "*.webm"))[0]
            upload(args, work, os.path.join(work, "data"), path, numbers, problems)
        else:
            path, numbers = record_until(args, work, clip)
            check(args, work, path, numbers, problems)
    finally:
        common.stop_all()
    numbers["problems"] = problems
    print(json.dumps(numbers, indent=2))
    print("bigfile: " + ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(numbers, handle, indent=2)
    if not args.keep and not problems:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if problems else 0)


def check(args, work, path, numbers, problems):
    data, log = os.path.join(work, "data"), os.path.join(work, "commands.log")
    if not path or not numbers["killed"] or numbers["bytes_at_kill"] < args.gib * GIB:
        problems.append(f"written: the file reached {numbers['bytes_at_kill'] / GIB:.2f} GiB (recbot still running: {numbers['killed']})")
        return
    recbot = [args.recbot]
    started = time.monotonic()
    status, repaired = common.run_json(common.timed(recbot + ["repair", "--all", "--data-dir", data, "--json"], f"{work}/repair.time"),
                                       log, timeout=1800)
    numbers.update(repair_seconds=round(time.monotonic() - started), repair_peak_rss_mb=common.peak_rss_mb(f"{work}/repair.time"))
    _, recordings = common.run_json(recbot + ["recordings", "list", "--data-dir", data, "--json"], log)
    row = (recordings or [{}])[0]
    size = os.path.getsize(path)
    with open(path[:-len(".webm")] + ".json") as handle:
        sidecar = json.load(handle)
    numbers.update(file_bytes=size, catalog_bytes=row.get("bytes"), sidecar_size=sidecar.get("size"),
                   catalog_status=row.get("status"), video_frames=row.get("video_frames"))
    if status != 0 or row.get("status") != "repaired" or size < (args.gib - 0.02) * GIB or row.get("bytes") != size or sidecar.get("size") != size:
        problems.append(f"repaired: exit {status}, status {row.get('status')}, file {size}, catalog {row.get('bytes')}, sidecar {sidecar.get('size')}")
    started = time.monotonic()
    status, checks = common.run_json(common.timed(recbot + ["verify", str(row.get("id")), "--data-dir", data, "--jobs", "2", "--json"],
                                                  f"{work}/verify.time"), log, timeout=3600)
    report = ((checks or [{}])[0].get("report") or {})
    tracks = report.get("tracks") or []
    numbers.update(verify_seconds=round(time.monotonic() - started), verify_peak_rss_mb=common.peak_rss_mb(f"{work}/verify.time"),
                   verify_tracks=[{k: t.get(k) for k in ("codec_id", "frames", "decoded", "decode_errors", "last_ms")}
                                  for t in tracks])
    lasts = [t.get("last_ms") or 0 for t in tracks]
    if status != 0 or not tracks or any(t.get("decode_errors") for t in tracks) or min(lasts) < (numbers["record_seconds"] - 30) * 1000:
        problems.append(f"verified: exit {status}, tracks {numbers['verify_tracks']}")
    with open(os.path.join(work, "numbers.json"), "w") as handle:
        json.dump(numbers, handle)  # for --resume, should the upload step need another try
    upload(args, work, data, path, numbers, problems)


def upload(args, work, data, path, numbers, problems):
    s3 = faults_fleet.S3(os.path.join(work, "s3"), volume_mb=1024)
    environment = s3.environment()
    destination = f"s3://{faults_fleet.BUCKET}/bigfile"
    started = time.monotonic()
    command = common.timed([args.recbot, "upload", "--pending", "--to", destination, "--s3-endpoint", s3.endpoint, "--data-dir", data],
                           f"{work}/upload.time")
    with open(os.path.join(work, "upload.log"), "wb") as log:
        status = subprocess.run(command, stdout=log, stderr=log, env=environment, timeout=3600).returncode
    numbers.update(upload_seconds=round(time.monotonic() - started), upload_peak_rss_mb=common.peak_rss_mb(f"{work}/upload.time"))
    name = os.path.basename(path)
    objects = {o["key"].rsplit("/", 1)[-1]: o for o in s3.objects("bigfile/")}
    stored = objects.get(name) or {}
    parts = int(stored.get("etag", "-1").rsplit("-", 1)[-1]) if "-" in stored.get("etag", "") else 1
    numbers.update(object_bytes=stored.get("size"), object_parts=parts)
    if status != 0 or stored.get("size") != os.path.getsize(path) or parts < 2:
        problems.append(f"uploaded: exit {status}, object {stored or 'missing'}")
        return
    copy = os.path.join(work, "object.webm")
    if s3.peer("get", faults_fleet.BUCKET, stored["key"], copy, timeout=900)[0] != 0 or sha256(path) != sha256(copy):
        problems.append("uploaded: the object read back differs from the file")
    if os.path.exists(copy):
        os.remove(copy)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(8 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


if __name__ == "__main__":
    main()
