#!/usr/bin/env python3
"""A webhook receiver for the tests: a real HTTP server that records every POST.

  webhook_receiver.py --port N --log FILE [--down-for S] [--delay S] [--fail-first N]

Each request is appended to FILE as one JSON line: {"at_ms", "headers", "body", "status"}.
--down-for: nothing listens on the port for this long (connections are refused), then it
serves. --delay: each answer waits this long. --fail-first: the first N requests get 500.
--secret: each entry also says whether X-Recbot-Signature is the body's HMAC-SHA256 ("signature_valid").
Prints {"listening": port} once it serves.
"""
import argparse
import hashlib
import hmac
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--down-for", type=float, default=0)
    parser.add_argument("--delay", type=float, default=0)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--secret")
    args = parser.parse_args()
    lock = threading.Lock()
    seen = {"count": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            body = raw.decode("utf-8", "replace")
            with lock:
                seen["count"] += 1
                status = 500 if seen["count"] <= args.fail_first else 200
            if args.delay:
                time.sleep(args.delay)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            entry = {"at_ms": int(time.time() * 1000), "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body, "status": status}
            if args.secret is not None:
                expected = "sha256=" + hmac.new(args.secret.encode(), raw, hashlib.sha256).hexdigest()
                entry["signature_valid"] = hmac.compare_digest(expected, self.headers.get("X-Recbot-Signature", ""))
            with lock, open(args.log, "a") as log:
                log.write(json.dumps(entry) + "\n")

        def log_message(self, *_):
            pass

    time.sleep(args.down_for)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(json.dumps({"listening": args.port}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
