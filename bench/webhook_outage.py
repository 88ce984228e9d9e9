#!/usr/bin/env python3
"""Webhooks through a receiver outage and a kill (issue 30's target), end to end.

  bench/webhook_outage.py --recbot .build/debug/recbot [--seconds 60] [--down 30] [--delay 2] [--kill-at 45]

A 4-publisher channel of the bundled test server is recorded with --split-duration 10 and
--webhook-url pointing at Tests/Peers/webhook_receiver.py, which refuses connections for
--down seconds and then answers each request after --delay seconds. recbot is SIGKILLed at
--kill-at, then `recbot repair` sends what was queued and the repaired session's end events.
Prints what the receiver got: counts per type, duplicates (at least once: a request cut by the
kill is sent again), order, and what the outbox still holds. Exit 0 when every event arrived,
in order of first arrival.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "..", "Tests", "Peers")
sys.path.insert(0, os.path.join(HERE, "..", "dev"))
from ports import free_port  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recbot", required=True)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--down", type=float, default=30)
    parser.add_argument("--delay", type=float, default=2)
    parser.add_argument("--kill-at", type=float, default=45)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="recbot-webhooks-")
    log, data = os.path.join(work, "received.jsonl"), os.path.join(work, "data")
    port = free_port()
    receiver = subprocess.Popen([sys.executable, os.path.join(PEERS, "webhook_receiver.py"), "--port", str(port), "--log", log,
                                 "--down-for", str(args.down), "--delay", str(args.delay)], stdout=subprocess.DEVNULL)
    server = subprocess.Popen([sys.executable, os.path.join(PEERS, "sora_test_server.py")] + sum((["--publisher", c] for c in ("vp8", "vp9", "av1", "h264")), []),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = json.loads(server.stdout.readline())["url"]
    try:
        started = time.time()
        join = subprocess.Popen([args.recbot, "join", "--channel", "sora", "--url", url, "--data-dir", data, "--allow-address", "127.0.0.1/32",
                                 "--duration", f"{int(args.seconds)}s", "--split-duration", "10", "--webhook-url", f"http://127.0.0.1:{port}/hook"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(max(0, args.kill_at - (time.time() - started)))
        join.send_signal(signal.SIGKILL)
        join.wait()
        queued = json.loads(subprocess.run([args.recbot, "webhooks", "list", "--json", "--limit", "10000", "--data-dir", data],
                                           capture_output=True, text=True).stdout)
        repair_started = time.time()
        repair = subprocess.run([args.recbot, "repair", "--all", "--data-dir", data, "--webhook-seconds", "600"], capture_output=True, text=True)
        repair_seconds = time.time() - repair_started
        outbox = json.loads(subprocess.run([args.recbot, "webhooks", "list", "--json", "--limit", "10000", "--data-dir", data],
                                           capture_output=True, text=True).stdout)
    finally:
        for process in (server, receiver):
            process.kill()
    received = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    bodies = [json.loads(entry["body"]) for entry in received if entry["status"] == 200]
    ids = [body["id"] for body in bodies]
    # At least once: a request recbot was killed in the middle of is sent again. Order is
    # judged on each event's first arrival.
    first_seen = list(dict.fromkeys(ids))
    order_ok = first_seen == [row["event_id"] for row in sorted(outbox, key=lambda r: r["id"]) if row["status"] == "delivered"]
    types = {}
    for body in bodies:
        types[body["type"]] = types.get(body["type"], 0) + 1
    print(json.dumps({
        "queued_before_kill": len(queued), "events_in_outbox": len(outbox), "received": len(bodies), "duplicates": len(ids) - len(set(ids)),
        "outbox_status": {s: sum(1 for r in outbox if r["status"] == s) for s in ("pending", "delivered", "failed")},
        "delivered_in_outbox_order": order_ok, "types": types, "repair_exit": repair.returncode, "repair_seconds": round(repair_seconds, 1),
        "first_type": bodies[0]["type"] if bodies else None, "last_type": bodies[-1]["type"] if bodies else None,
    }, indent=2))
    everything = set(ids) == {row["event_id"] for row in outbox} and order_ok
    return 0 if everything else 1


if __name__ == "__main__":
    sys.exit(main())
