#!/usr/bin/env python3
"""An HTTP proxy in front of a real S3 server that injects the failures S3 clients must survive
but a healthy server does not produce on demand. Requests go upstream unchanged (the Host header
included, so SigV4 signatures stay valid); only CompleteMultipartUpload answers are tampered with:

  --lose-complete-reply N   the first N completions reach the server and complete, then the
                            connection is closed before the answer (a reply lost in the network)
  --forget-completed-upload N  as --lose-complete-reply, and the retried completion is answered
                            404 NoSuchUpload (as S3 may once the upload is complete): only a HEAD
                            shows the object is there
  --error-200-complete N    the first N completions get 200 with an Error document (S3's way of
                            failing a long completion after it started answering), never sent on
  --keepalive-complete N    the first N completion answers are sent with whitespace before the
                            XML (what AWS sends while a long completion runs)
  --slow-down-for SECONDS   every request in the first SECONDS after the first one is answered
                            503 SlowDown (S3 throttling a bucket), never sent on
  --delay-ms N              every request waits N ms before it goes upstream (a slow link, so an
                            upload can be killed in its middle)

  s3_fault_proxy.py --upstream http://127.0.0.1:PORT [faults] --events FILE
  -> prints {"endpoint": "http://127.0.0.1:PORT"} and serves until killed; each injected fault
     ({"fault": KIND}) and the server's answer to each completion ({"completion": STATUS,
     "code": S3 error code or null}) is a JSON line in FILE.
"""
import argparse
import http.client
import http.server
import json
import sys
import threading
import time
import urllib.parse

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}
NO_SUCH_UPLOAD = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchUpload</Code>'
                  b"<Message>The specified upload does not exist.</Message></Error>")
SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message></Error>")
ERROR_200 = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
             b"<Message>We encountered an internal error. Please try again.</Message></Error>")


class Faults:
    def __init__(self, args):
        self.lock = threading.Lock()
        self.left = {"lose-complete-reply": args.lose_complete_reply, "error-200-complete": args.error_200_complete,
                     "keepalive-complete": args.keepalive_complete, "forget-completed-upload": args.forget_completed_upload}
        self.forgotten = set()
        self.events = args.events
        self.slow_down_for = args.slow_down_for
        self.delay = args.delay_ms / 1000
        self.first_request = None

    def throttled(self):
        """True while the SlowDown window (from the first request on) lasts."""
        with self.lock:
            now = time.monotonic()
            self.first_request = self.first_request or now
            throttled = now - self.first_request < self.slow_down_for
        if throttled:
            self.note({"fault": "slow-down"})
        return throttled

    def note(self, event):
        if self.events:
            with self.lock, open(self.events, "a") as out:
                out.write(json.dumps(event) + "\n")

    def take(self, kind):
        with self.lock:
            if self.left[kind] <= 0:
                return False
            self.left[kind] -= 1
            if self.events:
                with open(self.events, "a") as out:
                    out.write(json.dumps({"fault": kind}) + "\n")
            return True


def make_handler(upstream, faults):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def forward(self):
            payload = self.body()
            if faults.throttled():
                return self.answer(503, [("Content-Type", "application/xml"), ("Retry-After", "1")], SLOW_DOWN)
            if faults.delay:
                time.sleep(faults.delay)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            if payload or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(payload))
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query, keep_blank_values=True)
            completing = self.command == "POST" and "uploadId" in query
            upload_id = query.get("uploadId", [""])[0]
            if completing and faults.take("error-200-complete"):
                return self.answer(200, [("Content-Type", "application/xml")], ERROR_200)
            if completing and upload_id in faults.forgotten:
                faults.note({"completion": 404, "code": "NoSuchUpload", "injected": True})
                return self.answer(404, [("Content-Type", "application/xml")], NO_SUCH_UPLOAD)
            connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
            connection.request(self.command, self.path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
            connection.close()
            if completing:
                code = data.split(b"<Code>")[1].split(b"</Code>")[0].decode() if b"<Code>" in data else None
                faults.note({"completion": response.status, "code": code})
            if completing and response.status == 200 and faults.take("lose-complete-reply"):
                self.close_connection = True
                return
            if completing and response.status == 200 and faults.take("forget-completed-upload"):
                faults.forgotten.add(upload_id)
                self.close_connection = True
                return
            if completing and response.status == 200 and faults.take("keepalive-complete"):
                data = b"\n" + b" " * 64 + b"\n" + data
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"]
            if self.command == "HEAD":
                kept.append(("Content-Length", response.getheader("Content-Length", "0")))
                return self.answer(response.status, kept, b"", head=True)
            self.answer(response.status, kept, data)

        def answer(self, status, headers, data, head=False):
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            if not head:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not head:
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = forward

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--lose-complete-reply", type=int, default=0)
    parser.add_argument("--forget-completed-upload", type=int, default=0)
    parser.add_argument("--error-200-complete", type=int, default=0)
    parser.add_argument("--keepalive-complete", type=int, default=0)
    parser.add_argument("--slow-down-for", type=float, default=0)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--events")
    args = parser.parse_args()
    upstream = urllib.parse.urlsplit(args.upstream)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(upstream, Faults(args)))
    server.daemon_threads = True
    sys.stdout.write(json.dumps({"endpoint": f"http://127.0.0.1:{server.server_address[1]}"}) + "\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
