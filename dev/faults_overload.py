"""The fault campaign's overload part (dev/faults.py; issue 42): recbot past its CPU capacity.

A calibration run without a quota measures the CPU recbot needs for N synthetic publishers
(recbot-loadgen: VP8 + Opus each); then recbot records them under a cgroup quota of half that
for the first part of the run, and without it for the rest. Checks: `join` exits 0 (the session
survived), every publisher keeps >= 99 % of its audio frames, every file verifies, video was shed
(the metrics say so) and every publisher's video is back within 5 s of the quota's lift, and no
video stream is still paused at the end. Needs root and a cgroup with the cpu controller (it is
skipped, and says why, without them). The full measurement is bench/bench.sh --overload.
"""
import json
import os
import sys

common = None  # dev/faults.py, set by it

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))


def metric(path, name):
    """A metric's value from a node_exporter textfile (summed over its label sets), or None."""
    total = None
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(name + "{") or line.startswith(name + " "):
                    total = (total or 0) + float(line.rsplit(" ", 1)[1])
    except OSError:
        return None
    return total


def cgroup_unavailable():
    if os.geteuid() != 0:
        return "needs root for a cgroup quota"
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        with open("/sys/fs/cgroup/cgroup.subtree_control") as handle:
            return None if "cpu" in handle.read().split() else "the cgroup v2 cpu controller is not enabled for children"
    return None if os.access("/sys/fs/cgroup/cpu", os.W_OK) else "no writable cgroup v1 cpu controller"


def part_overload(options, work, result):
    why = cgroup_unavailable()
    if why:
        result.skipped = why
        return
    from overload import Recording  # bench/overload.py
    args = type("Args", (), {})()
    args.recbot, args.loadgen, args.fps, args.keep = options.recbot, options.loadgen, 30.0, True
    args.clip_cache = os.path.join(work, "clips")
    publishers, capped, lifted = options.overload_publishers, options.overload_capped, options.overload_lifted
    calibration = Recording(args, publishers, 10).run()
    need = calibration.cpu / calibration.wall
    result.runs += 1
    run = Recording(args, publishers, capped + lifted, cores=need / 2, lift_at=capped).run()
    lifted_at = getattr(run, "lifted_unix", run.started_unix + capped) - run.started_unix
    rows = run.per_publisher(capped_until=lifted_at, lifted_at=lifted_at)
    problems = []
    if run.exit != 0:
        problems.append(f"join exited {run.exit}")
    low_audio = [r for r in rows if r["audio"] < 99.0]
    if low_audio:
        problems.append(f"{len(low_audio)} publishers kept < 99 % of their audio (worst {min(r['audio'] for r in low_audio):.1f} %)")
    verified = run.verified()
    if verified != len(run.files) or len(run.files) < publishers:
        problems.append(f"{verified} of {len(run.files)} files verified ({publishers} publishers)")
    metrics = os.path.join(run.work, "metrics.prom")
    episodes, paused = metric(metrics, "recbot_overload_episodes_total"), metric(metrics, "recbot_paused_video_streams")
    if not episodes:
        problems.append("no video was shed (recbot_overload_episodes_total is 0): the quota did not overload it")
    if paused:
        problems.append(f"{paused:.0f} video streams still paused at the end")
    late = [r["back_seconds"] for r in rows if r["back_seconds"] is None or r["back_seconds"] > 5.0]
    if late:
        shown = ", ".join("never" if seconds is None else f"{seconds:.1f} s" for seconds in late[:3])
        problems.append(f"{len(late)} publishers' video not back within 5 s of the lift ({shown})")
    audio = sorted(r["audio"] for r in rows)
    capped_video = sorted(r["video_capped"] for r in rows)
    back = max((r["back_seconds"] for r in rows if r["back_seconds"] is not None), default=None)
    result.numbers.append(f"{publishers} publishers at {need / 2:.2f} of {need:.2f} cores: audio >= {audio[0]:.1f} %, "
                          f"video while capped {capped_video[len(capped_video) // 2]:.0f} % (median), back in "
                          f"{'-' if back is None else f'{back:.1f}'} s, {verified}/{len(run.files)} verified")
    with open(os.path.join(work, "overload.json"), "w") as handle:
        json.dump({"need_cores": need, "rows": rows, "exit": run.exit, "verified": verified, "work": run.work}, handle, indent=1)
    if problems:
        result.failures.append(f"overload ({run.work}): " + "; ".join(problems))
    else:
        result.passed += 1
