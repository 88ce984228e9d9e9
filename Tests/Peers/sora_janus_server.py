#!/usr/bin/env python3
"""A Sora-compatible signaling front for a real SFU (Janus VideoRoom) and real libwebrtc
publishers (headless Chromium), for recbot's interop tests.

  sora_janus_server.py --chromium vp8,vp9,av1,h264 --duration 30 --truth /tmp/truth.json
  -> starts a private Janus (janus_room.py), one headless Chromium per codec publishing into its
     room (chromium_publishers.py + janus_publisher.html), then prints
     {"type": "listening", "url": "ws://127.0.0.1:PORT/signaling", "http": "http://127.0.0.1:PORT2"}
     and serves one recvonly connection (Sora signaling, sora-protocol.md) at a time (--recorders N:
     up to N at once, each its own Janus subscriber, e.g. recbot and bench/gst_recorder.py side by side).

How Sora's signaling maps onto Janus's API:
- connect (recvonly)  -> a VideoRoom multistream subscriber to every publisher in the room; Janus's
  offer is rewritten into Sora's form (each m-section's msid stream id = that publisher's Sora
  connection id; Janus's mids, SSRCs, RTX and extensions stay) and sent as `offer`.
- answer / re-answer  -> `start` with the jsep answer. candidate -> Janus trickle.
- a publisher joining / leaving the room -> subscribe / unsubscribe -> Janus's new offer ->
  `re-offer`, then notify connection.created / connection.destroyed.
- simulcast rid r0/r1/r2 -> Janus substream 0/1/2 (VP8 simulcast) or spatial_layer 0/1/2 (VP9 SVC),
  from connect's simulcast_request_rid / simulcast_rid (default r2), switched mid-session by
  --layer-switch-after SECONDS:RID or POST /layer?rid=r1 (a simulcast.switched notify follows).
  Janus 1.1.2 (Debian 12) never parses a local publisher's VP9 SVC layers (it does from 1.1.3 on,
  given jsep.svc, which the page sends): there spatial_layer is accepted and ignored, and every
  spatial layer reaches the recorder. It does not negotiate the AV1 dependency descriptor either.
- Janus does not renegotiate when a publisher leaves (and then refuses `unsubscribe`): the front
  makes that re-offer itself from its last offer, the sections at port 0 (Session.local_reoffer).
- Sora's `ping` every --ping-interval seconds; `pong` is counted.
- Loss on the path to the recorder (--loss PERCENT [--loss-seed N]): each connection's offer names a
  UDP relay (udp_loss_relay.py) as Janus's candidate; Janus (ICE lite) answers the recorder's checks
  relayed from the relay's sockets as peer-reflexive. The relay drops PERCENT % of the SRTP/SRTCP
  datagrams (first byte 128-191) from Janus to the recorder, seeded (connection k: seed + k - 1);
  STUN and DTLS always pass. Every datagram is also delayed --loss-delay-ms (default 10) each way:
  Janus resends nothing while the round trip it measures (in whole ms) is 0, as on loopback. What
  it forwarded and dropped is the truth's `relay`.
- Several recorders (--recorders N): Janus's events about the room go to every connection; each has
  its own subscriber, layer (its connect's rid and the --layer-switch-after timers, counted from its
  own answer) and snapshots; the first connection's account stays at the truth's top level as before,
  the others' are in `other_recorders` (and TRUTH.recorder<K>.json: the same truth seen from
  connection K, for judge_recording.py). --duration counts from the first connection's offer and
  ends them all at once.
- The end: after --duration seconds from the offer (or POST /end, or --max-seconds) the pages are
  told to stop, post their final getStats() and hang up; then the WebSocket is closed with
  1000 "DISCONNECTED-API" as sora_test_server.py --end-after does, so recbot exits 0. A client
  `disconnect` ends the session the same way, from the other side.

HTTP (the publishers' page and control; --http-port, default any free port):
  GET  /publisher.html            janus_publisher.html
  GET  /control/<id>              what the page should do now ({"stop": bool, "video": "on"|"off"})
  POST /hello|published|stats|snapshot|bye|log/<id>   reports from the pages
  POST /layer?rid=r1              switch every simulcast/SVC sender's layer for the recorder
  POST /video?connection_id=X&state=off|on   stop / restart a page's camera track
  POST /end                       end the session now;  GET /state: everything known, as JSON

The truth file (--truth) has, per publisher connection id: codec, when it published (wall clock,
ms), the page's final getStats() outbound-rtp entries (and a per-kind summary), its Janus streams,
and the fake media's frame-number scheme (chromium_publishers.scheme). Snapshots: when the
recorder's PeerConnection comes up (Janus's webrtcup on the subscriber handle; for a late publisher,
when its re-answer is started) and at every layer switch, each page is asked (through its control
poll, every 200 ms) for getStats(); they are kept in `stats_snapshots` (name, requested_at_unix_ms,
at_unix_ms, the same outbound-rtp summary as the final one), the first as `stats_at_start`, so a
judge can count the frames sent while the recorder was subscribed, per forwarded layer.
"""
import argparse
import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.parse

from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chromium_publishers  # noqa: E402
from udp_loss_relay import LossRelay  # noqa: E402
from janus_room import JanusClient, JanusError, JanusProcess, ensure_room, free_port  # noqa: E402

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "janus_publisher.html")
RIDS = {"r0": 0, "r1": 1, "r2": 2}
CODECS = ("vp8", "vp9", "av1", "h264")
STATS_FIELDS = ("kind", "ssrc", "mid", "rid", "framesEncoded", "framesSent", "keyFramesEncoded", "packetsSent", "bytesSent",
                "retransmittedPacketsSent", "retransmittedBytesSent", "frameWidth", "frameHeight", "framesPerSecond",
                "scalabilityMode", "encoderImplementation", "qualityLimitationReason", "hugeFramesSent", "nackCount",
                "pliCount", "firCount", "active", "targetBitrate", "totalEncodedBytesTarget", "powerEfficientEncoder")


def sora_id():
    return "".join(random.choice(CROCKFORD) for _ in range(26))


def now_ms():
    return int(time.time() * 1000)


def layer_switch_spec(text):
    seconds, _, rid = text.partition(":")
    if rid not in RIDS:
        raise argparse.ArgumentTypeError("expected SECONDS:RID with RID r0, r1 or r2")
    try:
        return float(seconds), rid
    except ValueError:
        raise argparse.ArgumentTypeError("SECONDS must be a number") from None


class Publisher:
    """One Chromium page, as Sora would know it (connection id, client id) and as Janus does (feed id)."""

    def __init__(self, codec, index):
        self.codec = codec
        self.index = index
        self.connection_id = sora_id()
        self.client_id = f"chromium-{codec}-{index}"
        self.feed_id = None
        self.streams = []  # Janus's view of its streams (type, mid, codec, simulcast, svc...)
        self.published_at_ms = None  # the page's clock, after Janus's answer was set
        self.janus_published_at_ms = None  # when the room told the server
        self.left_at_ms = None
        self.hello = None
        self.final = None  # the page's last report: stats and video events
        self.bye_at_ms = None
        self.control = {"stop": False, "video": "on", "snapshots": []}  # snapshots: [{"seq", "name"}] asked for so far
        self.snapshots = []  # the pages' answers: {"name", "requested_at_unix_ms", "at_unix_ms", "outbound_rtp", "video", "audio"}
        self.log_path = None
        self.stats_posted = asyncio.Event()
        self.publishing = asyncio.Event()

    @property
    def on_air(self):
        return self.feed_id is not None and self.publishing.is_set() and self.left_at_ms is None

    def notify(self, event_type, channel_id, counts):
        # The shape sora_test_server.py sends (Publisher.notify there).
        return {"type": "notify", "event_type": event_type, "role": "sendonly", "channel_id": channel_id,
                "connection_id": self.connection_id, "client_id": self.client_id, "bundle_id": self.connection_id,
                "audio": True, "video": True, "metadata": {"publisher": self.client_id, "codec": self.codec, "janus_feed": self.feed_id},
                "authn_metadata": None, "authz_metadata": {"room": "janus"}, "minutes": 0,
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), **counts}

    def truth(self):
        entry = {"connection_id": self.connection_id, "client_id": self.client_id, "codec": self.codec, "janus_feed_id": self.feed_id,
                 "published_at_unix_ms": self.published_at_ms, "janus_published_at_unix_ms": self.janus_published_at_ms,
                 "left_at_unix_ms": self.left_at_ms, "bye_at_unix_ms": self.bye_at_ms, "janus_streams": self.streams,
                 "user_agent": (self.hello or {}).get("user_agent"), "chromium_log": self.log_path,
                 "media_scheme": getattr(self, "media_scheme", None), "media_files": getattr(self, "media_files", None)}
        if self.final:
            entry.update({"stats_at_unix_ms": self.final.get("at_ms"), "stopped_because": self.final.get("why"),
                          "video_events": self.final.get("video_events"), **outbound_summary(self.final.get("stats") or [])})
        if self.snapshots:
            entry["stats_snapshots"] = self.snapshots
            start = next((s for s in self.snapshots if s["name"] == "at_start"), None)
            if start:
                entry["stats_at_start"] = start
        return entry


def outbound_summary(stats):
    """A getStats() report's outbound-rtp entries (with their codec) and a per-kind summary."""
    codecs = {s["id"]: s for s in stats if s.get("type") == "codec"}
    outbound = []
    for s in stats:
        if s.get("type") != "outbound-rtp":
            continue
        item = {k: s[k] for k in STATS_FIELDS if k in s}
        item["timestamp"] = s.get("timestamp")
        codec = codecs.get(s.get("codecId"))
        if codec:
            item["mimeType"], item["payloadType"] = codec.get("mimeType"), codec.get("payloadType")
            item["sdpFmtpLine"] = codec.get("sdpFmtpLine")
        outbound.append(item)
    outbound.sort(key=lambda s: (s.get("kind", ""), s.get("rid", "")))
    video = [s for s in outbound if s.get("kind") == "video"]
    audio = [s for s in outbound if s.get("kind") == "audio"]
    # The capture devices' own counters: Chromium's fake microphone falls behind real time on a
    # busy host, and the judge needs its real rate to tell that from the recorder's sync.
    sources = [{k: m[k] for k in ("kind", "timestamp", "totalSamplesDuration", "frames", "framesPerSecond") if k in m}
               for m in stats if m.get("type") == "media-source"]
    return {
        "outbound_rtp": outbound,
        "media_source": sorted(sources, key=lambda m: m.get("kind", "")),
        "video": {"frames_encoded": sum(s.get("framesEncoded", 0) for s in video),
                  "frames_sent": sum(s.get("framesSent", 0) for s in video),
                  "keyframes_encoded": sum(s.get("keyFramesEncoded", 0) for s in video),
                  "packets_sent": sum(s.get("packetsSent", 0) for s in video),
                  "retransmitted_packets_sent": sum(s.get("retransmittedPacketsSent", 0) for s in video),
                  "layers": {s.get("rid", "-"): {k: s.get(k) for k in ("framesEncoded", "framesSent", "keyFramesEncoded",
                                                                          "frameWidth", "frameHeight", "scalabilityMode",
                                                                          "encoderImplementation", "mimeType")}
                             for s in video}},
        "audio": {"packets_sent": sum(s.get("packetsSent", 0) for s in audio),
                  "mimeType": audio[0].get("mimeType") if audio else None,
                  "sdpFmtpLine": audio[0].get("sdpFmtpLine") if audio else None},
    }


class HttpServer:
    """Just enough HTTP/1.1 for the page and its reports (no dependency for this)."""

    def __init__(self, front):
        self.front = front

    async def handle(self, reader, writer):
        try:
            while True:
                request = await reader.readline()
                if not request:
                    break
                method, target, _ = request.decode("latin-1").split(" ", 2)
                headers = {}
                while True:
                    line = (await reader.readline()).decode("latin-1").strip()
                    if not line:
                        break
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                status, kind, payload = await self.front.http(method, target, body)
                writer.write((f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(payload)}\r\n"
                              "Cache-Control: no-store\r\nConnection: keep-alive\r\n\r\n").encode() + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()


class Front:
    def __init__(self, args):
        self.args = args
        self.publishers = []
        self.by_feed = {}
        self.by_connection = {}
        self.room = args.room
        self.sessions = []  # the Sora connections served, in order (the first one's account is the truth's top level)
        self.deadline = None  # time.monotonic() when --duration ends every connection (from the first offer)
        self.finished = asyncio.Event()
        self.truth = {"server": "sora_janus_server", "room": args.room, **session_truth(), "page_logs": {}}

    @property
    def session(self):
        """The first connection still served (for the HTTP controls), else the first one."""
        return next((s for s in self.sessions if not s.done), self.sessions[0] if self.sessions else None)

    def active_sessions(self):
        return [s for s in self.sessions if not s.done]

    def room_event(self, event, publisher):
        # ("joined"|"left", publisher) to every connection's queue
        for session in self.sessions:
            session.room_events.put_nowait((event, publisher))

    # --- Janus side ---

    async def start_janus(self):
        self.janus = JanusProcess(ws_port=self.args.janus_ws_port, log_path=self.args.janus_log)
        await self.janus.start()
        self.truth["janus_version"] = subprocess.run(["janus", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        self.client = await JanusClient.connect(self.janus.ws_url)
        self.janus_session = await self.client.create_session()
        # The monitor: a participant that never publishes, so Janus tells it of every publisher coming and going.
        self.monitor = await self.janus_session.attach()
        await ensure_room(self.monitor, self.room, bitrate=self.args.bitrate, videocodec=self.args.videocodec,
                          **({"video_svc": True} if self.args.video_svc else {}))
        data, _ = await self.monitor.message({"request": "join", "ptype": "publisher", "room": self.room, "display": "sora-front"})
        self.on_publishers(data.get("publishers") or [])
        self.monitor_task = asyncio.create_task(self.watch_room())

    def on_publishers(self, entries):
        for entry in entries:
            publisher = self.by_connection.get(entry.get("display"))
            if publisher is None:
                print(f"unknown publisher in the room: {entry.get('display')}", file=sys.stderr)
                continue
            publisher.feed_id = entry["id"]
            publisher.streams = entry.get("streams") or []
            self.by_feed[entry["id"]] = publisher
            if not publisher.publishing.is_set():
                publisher.janus_published_at_ms = now_ms()
                publisher.publishing.set()
                self.room_event("joined", publisher)

    async def watch_room(self):
        while True:
            message = await self.monitor.events.get()
            data = (message.get("plugindata") or {}).get("data") or {}
            if data.get("publishers"):
                self.on_publishers(data["publishers"])
            gone = data.get("unpublished") or data.get("leaving")
            if gone and gone != "ok" and gone in self.by_feed:
                publisher = self.by_feed[gone]
                if publisher.left_at_ms is None:
                    publisher.left_at_ms = now_ms()
                    self.room_event("left", publisher)

    # --- Chromium side ---

    async def start_publishers(self, codecs, page_query):
        if not codecs:
            return
        self.truth["chromium_version"] = self.truth.get("chromium_version") or chromium_publishers.chromium_version()
        if not hasattr(self, "chromium"):
            self.chromium = chromium_publishers.ChromiumPublishers(log_dir=self.args.log_dir)
        for codec in codecs:
            # libwebrtc gives VP9 SVC one spatial layer per halving down to ~240x135: L3T3 needs 960x540.
            width, height = self.args.vp9_resolution if codec == "vp9" and self.args.vp9_resolution else self.args.resolution
            video, audio = chromium_publishers.make_media(self.args.cache_dir, width, height, self.args.audio_bed)
            publisher = Publisher(codec, len(self.publishers))
            publisher.media_scheme = chromium_publishers.scheme(width, height, self.args.audio_bed)
            publisher.media_files = {"video": video, "audio": audio}
            self.publishers.append(publisher)
            self.by_connection[publisher.connection_id] = publisher
            query = {**page_query, "id": publisher.connection_id, "codec": codec, "width": width, "height": height}
            _, publisher.log_path = await self.chromium.start(f"{self.http_url}/publisher.html", query, video, audio)
            print(f"chromium {codec} publisher {publisher.connection_id} (log {publisher.log_path})", file=sys.stderr)

    def page_query(self):
        width, height = self.args.resolution
        return {"janus": self.janus.ws_url, "room": self.room, "server": self.http_url, "width": width, "height": height,
                "fps": chromium_publishers.FPS}

    async def wait_publishing(self, publishers, timeout):
        try:
            await asyncio.wait_for(asyncio.gather(*(p.publishing.wait() for p in publishers)), timeout)
        except asyncio.TimeoutError:
            missing = [f"{p.codec}:{p.connection_id}" for p in publishers if not p.publishing.is_set()]
            print(f"not publishing after {timeout} s: {missing}", file=sys.stderr)
            self.truth.setdefault("not_publishing", []).extend(missing)

    async def stop_pages(self, publishers, timeout=10):
        """Each page posts its final getStats() and hangs up; waits for the reports."""
        for publisher in publishers:
            publisher.control["stop"] = True
        waiting = [p.stats_posted.wait() for p in publishers if p.publishing.is_set()]
        if waiting:
            try:
                await asyncio.wait_for(asyncio.gather(*waiting), timeout)
            except asyncio.TimeoutError:
                print("some pages posted no stats", file=sys.stderr)

    async def stop_pages_once(self):
        """stop_pages for every page still on, shared by the connections ending together."""
        if getattr(self, "pages_stopping", None) is None:
            self.pages_stopping = asyncio.ensure_future(
                self.stop_pages([p for p in self.publishers if p.left_at_ms is None or not p.stats_posted.is_set()]))
        await asyncio.shield(self.pages_stopping)

    def request_snapshot(self, name, publishers=None):
        """Asks the pages (all on air, or these) for a getStats() snapshot named `name`: the next
        control poll (200 ms) returns it, and the page posts /snapshot/<id>."""
        self.snapshot_seq = getattr(self, "snapshot_seq", 0) + 1
        at = now_ms()
        for publisher in publishers if publishers is not None else [p for p in self.publishers if p.on_air]:
            publisher.control["snapshots"].append({"seq": self.snapshot_seq, "name": name})
            publisher.snapshot_requested = {**getattr(publisher, "snapshot_requested", {}), self.snapshot_seq: (name, at)}

    # --- HTTP ---

    async def http(self, method, target, body):
        url = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(url.query))
        parts = url.path.strip("/").split("/")
        ok = ("200 OK", "application/json", b'{"ok": true}')
        if method == "GET" and url.path == "/publisher.html":
            with open(PAGE, "rb") as page:
                return "200 OK", "text/html; charset=utf-8", page.read()
        if method == "GET" and parts[0] == "control" and len(parts) == 2:
            publisher = self.by_connection.get(parts[1])
            return "200 OK", "application/json", json.dumps(publisher.control if publisher else {"stop": True}).encode()
        if method == "GET" and url.path == "/state":
            return "200 OK", "application/json", json.dumps(self.state(), indent=2, default=str).encode()
        if method == "POST" and len(parts) == 2 and parts[0] in ("hello", "published", "stats", "snapshot", "bye", "log"):
            publisher = self.by_connection.get(parts[1])
            if publisher is None:
                return "404 Not Found", "application/json", b"{}"
            if parts[0] == "log":
                line = body.decode("utf-8", "replace")
                self.truth["page_logs"].setdefault(publisher.connection_id, []).append(line)
                if self.args.verbose or "failed" in line or "error" in line:
                    print(f"page: {line}", file=sys.stderr)
                return ok
            report = json.loads(body or b"{}")
            if parts[0] == "hello":
                publisher.hello = report
            elif parts[0] == "published":
                publisher.published_at_ms = report.get("published_at_ms")
                publisher.publish_sdp = {"offer": report.get("offer"), "answer": report.get("answer")}
            elif parts[0] == "snapshot":
                requested = getattr(publisher, "snapshot_requested", {})
                summary = outbound_summary(report.get("stats") or [])
                for seq in report.get("seqs") or []:
                    name, requested_at = requested.get(seq, (None, None))
                    publisher.snapshots.append({"name": name, "seq": seq, "requested_at_unix_ms": requested_at,
                                                "at_unix_ms": report.get("at_ms"), **summary})
            elif parts[0] == "stats":
                publisher.final = report
                publisher.stats_posted.set()
            elif parts[0] == "bye":
                publisher.bye_at_ms = report.get("at_ms")
            return ok
        if method == "POST" and url.path == "/layer" and query.get("rid") in RIDS:
            if not self.active_sessions():
                return "409 Conflict", "application/json", b'{"error": "no session"}'
            for session in self.active_sessions():
                asyncio.ensure_future(session.switch_layer(query["rid"], query.get("connection_id"), "http"))
            return ok
        if method == "POST" and url.path == "/video":
            publisher = self.by_connection.get(query.get("connection_id"))
            if publisher is None or query.get("state") not in ("on", "off"):
                return "400 Bad Request", "application/json", b"{}"
            publisher.control["video"] = query["state"]
            self.truth.setdefault("video_controls", []).append({"connection_id": publisher.connection_id, "state": query["state"],
                                                                "at_unix_ms": now_ms()})
            return ok
        if method == "POST" and url.path == "/end":
            for session in self.active_sessions():
                session.end_requested.set()
            return ok
        return "404 Not Found", "text/plain", b"not found"

    def state(self):
        return {"publishers": [p.truth() for p in self.publishers], "session": self.session.summary() if self.session else None,
                "sessions": [s.summary() for s in self.sessions]}

    def write_truth(self):
        if not self.args.truth:
            return
        self.truth["publishers"] = [p.truth() for p in self.publishers]
        for publisher in self.publishers:
            if getattr(publisher, "publish_sdp", None):
                self.truth.setdefault("publish_sdp", {})[publisher.connection_id] = publisher.publish_sdp
        self.truth["recorders_served"] = len(self.sessions)
        if len(self.sessions) > 1:
            self.truth["other_recorders"] = [s.truth for s in self.sessions[1:]]
        write_json(self.args.truth, self.truth)
        # The same truth from each other connection's side: its account at the top level, and each
        # publisher's stats_at_start its own subscription's snapshot (what judge_recording.py reads).
        base, _ = os.path.splitext(self.args.truth)
        for session in self.sessions[1:]:
            view = {**{k: v for k, v in self.truth.items() if k != "other_recorders"}, **session.truth,
                    "recorder_index": session.index}
            view["publishers"] = []
            for entry in self.truth["publishers"]:
                entry = dict(entry)
                start = next((s for s in entry.get("stats_snapshots") or [] if s["name"] == session.snapshot_name("at_start")), None)
                entry.pop("stats_at_start", None)
                if start:
                    entry["stats_at_start"] = start
                view["publishers"].append(entry)
            write_json(f"{base}.recorder{session.index}.json", view)


def write_json(path, value):
    with open(path + ".tmp", "w") as out:
        json.dump(value, out, ensure_ascii=False, indent=2)
    os.replace(path + ".tmp", path)


def session_truth():
    """What one recorder connection's account starts with."""
    return {"pings_sent": 0, "pongs_received": 0, "candidates_received": 0, "re_offers_sent": 0, "re_answers_received": 0,
            "messages_sent": [], "layer_switches": [], "janus_events": []}


def sdp_sections(sdp):
    session, sections = [], []
    for line in sdp.replace("\r\n", "\n").split("\n"):
        if not line:
            continue
        if line.startswith("m="):
            sections.append([line])
        else:
            (sections[-1] if sections else session).append(line)
    return session, sections


class Session:
    """One recvonly recorder connection: a Janus subscriber behind Sora's signaling."""

    def __init__(self, front, ws, index):
        self.front = front
        self.args = front.args
        self.ws = ws
        self.index = index  # 1 for the first connection served
        # The first connection's account is the truth's top level (as with one recorder); the others have their own.
        self.truth = front.truth if index == 1 else {"recorder_index": index, **session_truth()}
        self.room_events = asyncio.Queue()  # ("joined"|"left", publisher), from Front.room_event
        self.relay = None
        self.done = False
        self.bot_id = None
        self.handle = None
        self.mids = {}  # mid -> Janus stream entry (feed_id, type, codec, active...)
        self.subscribed = set()  # feed ids in the subscription
        self.negotiation = asyncio.Lock()
        self.pending_reanswer = None
        self.answered = asyncio.Event()
        self.end_requested = asyncio.Event()
        self.client_left = asyncio.Event()
        self.ending = False
        self.rid = "r2"
        self.candidates = []

    def summary(self):
        return {"index": self.index, "bot_connection_id": self.bot_id, "rid": self.rid, "mids": self.mids,
                "subscribed": sorted(self.subscribed), "done": self.done, "relay": self.relay.stats if self.relay else None}

    def snapshot_name(self, name):
        """Snapshot names are the pages' (shared by every connection): the first connection's as before."""
        return name if self.index == 1 else f"{name}@recorder{self.index}"

    async def send(self, message, record=False):
        text = json.dumps(message, ensure_ascii=False)
        if record:
            self.truth["messages_sent"].append(text)
        await self.ws.send(text)

    def counts(self):
        on = [p for p in self.front.publishers if p.on_air]
        recorders = max(1, len(self.front.active_sessions()))
        return {"channel_connections": len(on) + recorders, "channel_sendonly_connections": len(on),
                "channel_recvonly_connections": recorders,
                "channel_sendrecv_connections": 0}

    # --- SDP: Janus's form -> Sora's ---

    def note_streams(self, streams):
        for stream in streams or []:
            if "mid" in stream:
                self.mids[stream["mid"]] = stream

    def rewrite(self, sdp):
        """Janus's subscriber offer in Sora's form: every m-section's msid stream id (and the
        msid/mslabel of its a=ssrc lines) is the sending publisher's connection id; with --loss,
        the relay is Janus's candidate."""
        if self.relay is not None:
            sdp = self.relay.rewrite(sdp)
        session, sections = sdp_sections(sdp)
        session = ["a=msid-semantic: WMS *" if line.startswith("a=msid-semantic") else line for line in session]
        session = [self.next_origin(line) if line.startswith("o=") else line for line in session]
        out = list(session)
        for section in sections:
            mid = next((line[6:] for line in section if line.startswith("a=mid:")), None)
            stream = self.mids.get(mid) or {}
            publisher = self.front.by_feed.get(stream.get("feed_id"))
            kind = section[0][2:].split(" ", 1)[0]
            if publisher is None or kind not in ("audio", "video"):
                out += section
                continue
            track = f"{publisher.connection_id}-{kind}"
            has_msid = False
            for line in section:
                if line.startswith("a=msid:"):
                    has_msid = True
                    line = f"a=msid:{publisher.connection_id} {track}"
                elif re.match(r"a=ssrc:\d+ msid:", line):
                    line = re.sub(r"msid:.*$", f"msid:{publisher.connection_id} {track}", line)
                elif re.match(r"a=ssrc:\d+ mslabel:", line):
                    line = re.sub(r"mslabel:.*$", f"mslabel:{publisher.connection_id}", line)
                elif re.match(r"a=ssrc:\d+ label:", line):
                    line = re.sub(r"label:.*$", f"label:{track}", line)
                out.append(line)
            if not has_msid and not section[0].split()[1] == "0":
                out.insert(len(out) - len(section) + 1, f"a=msid:{publisher.connection_id} {track}")
        return "\r\n".join(out) + "\r\n"

    def next_origin(self, line):
        """o= with a session version above every one sent so far: the front also makes offers of
        its own (local_reoffer), so Janus's counter alone would go backwards."""
        parts = line.split()
        self.sdp_version = max(getattr(self, "sdp_version", 0) + 1, int(parts[2]))
        parts[2] = str(self.sdp_version)
        return " ".join(parts)

    async def local_reoffer(self, feed_id):
        """Janus 1.1.2 drops a departed publisher's streams from the subscription without a new
        offer (and then refuses `unsubscribe`: "not found"). Sora sends a re-offer with those
        m-sections at port 0, so the front makes it from its last offer; the re-answer stays here
        (Janus has no offer outstanding)."""
        session, sections = sdp_sections(self.last_offer)
        gone = set()
        for section in sections:
            mid = next((line[6:] for line in section if line.startswith("a=mid:")), None)
            if (self.mids.get(mid) or {}).get("feed_id") == feed_id:
                gone.add(mid)
                self.mids[mid] = {**self.mids[mid], "active": False}
                kind, _, proto_formats = section[0][2:].split(" ", 2)
                section[:] = [f"m={kind} 0 {proto_formats}"] + [
                    "a=inactive" if line in ("a=sendonly", "a=sendrecv") else line for line in section[1:]
                    if not line.startswith(("a=ssrc", "a=msid", "a=candidate", "a=end-of-candidates"))]
        if not gone:
            return
        session = [self.next_origin(line) if line.startswith("o=") else
                   " ".join(part for part in line.split() if part not in gone) if line.startswith("a=group:BUNDLE") else line
                   for line in session]
        sdp = "\r\n".join(session + [line for section in sections for line in section]) + "\r\n"
        self.last_offer = sdp
        self.pending_reanswer = asyncio.get_running_loop().create_future()
        await self.send({"type": "re-offer", "sdp": sdp})
        self.truth["re_offers_sent"] += 1
        self.truth.setdefault("re_offer_sdps", []).append(sdp)
        await asyncio.wait_for(self.pending_reanswer, 15)
        self.truth["re_answers_received"] += 1
        self.truth["local_re_offers"] = self.truth.get("local_re_offers", 0) + 1

    # --- the layer the recorder receives ---

    def layer_streams(self, rid, connection_id=None):
        index = RIDS[rid]
        streams = []
        for mid, stream in self.mids.items():
            publisher = self.front.by_feed.get(stream.get("feed_id"))
            if stream.get("type") != "video" or publisher is None or not stream.get("active", True):
                continue
            if connection_id and publisher.connection_id != connection_id:
                continue
            if publisher.codec == "vp8":
                streams.append((publisher, {"mid": mid, "substream": index, "temporal": 2}))
            elif publisher.codec == "vp9":
                streams.append((publisher, {"mid": mid, "spatial_layer": index, "temporal_layer": 2}))
        return streams

    async def switch_layer(self, rid, connection_id=None, why="flag"):
        previous, self.rid = self.rid, rid
        streams = self.layer_streams(rid, connection_id)
        record = {"at_unix_ms": now_ms(), "rid": rid, "previous_rid": previous, "why": why,
                  "streams": [s for _, s in streams], "senders": [p.connection_id for p, _ in streams]}
        self.truth["layer_switches"].append(record)
        if not streams:
            return
        try:
            data, _ = await self.handle.message({"request": "configure", "streams": [s for _, s in streams]})
            record["janus_reply"] = data
        except JanusError as error:
            record["error"] = str(error)
            return
        if why == "initial":
            return
        record["snapshot"] = self.snapshot_name(f"switch:{rid}:{len(self.truth['layer_switches'])}")
        self.front.request_snapshot(record["snapshot"], [p for p, _ in streams])
        for publisher, _ in streams:
            await self.send({"type": "notify", "event_type": "simulcast.switched", "channel_id": self.channel_id,
                             "sender_connection_id": publisher.connection_id,
                             "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "priority": "higher",
                             "trigger": "receiver", "request_rid": rid, "current_rid": rid, "previous_rid": previous,
                             "rpc_rids": [], "auto_rids": []}, record=True)

    # --- renegotiation ---

    async def reoffer(self, jsep, streams):
        self.note_streams(streams)
        sdp = self.rewrite(jsep["sdp"])
        self.last_offer = sdp
        self.pending_reanswer = asyncio.get_running_loop().create_future()
        await self.send({"type": "re-offer", "sdp": sdp})
        self.truth["re_offers_sent"] += 1
        self.truth.setdefault("re_offer_sdps", []).append(sdp)
        reanswer = await asyncio.wait_for(self.pending_reanswer, 15)
        self.truth["re_answers_received"] += 1
        await self.handle.message({"request": "start"}, jsep={"type": "answer", "sdp": reanswer["sdp"]})

    async def watch_subscriber(self):
        """Janus's own renegotiations (a publisher went away, an update it had queued)."""
        while True:
            message = await self.handle.events.get()
            data = (message.get("plugindata") or {}).get("data") or {}
            self.truth["janus_events"].append({"at_unix_ms": now_ms(), "janus": message.get("janus"), "data": data,
                                               "jsep": (message.get("jsep") or {}).get("type")})
            if message.get("janus") == "webrtcup" and "recorder_webrtcup_at_unix_ms" not in self.truth:
                # The recorder's PeerConnection is up: what the pages have sent so far is before its time.
                self.truth["recorder_webrtcup_at_unix_ms"] = now_ms()
                self.front.request_snapshot(self.snapshot_name("at_start"),
                                            [p for p in self.front.publishers if p.feed_id in self.subscribed])
            if message.get("jsep", {}).get("type") == "offer" and not self.ending:
                async with self.negotiation:
                    await self.reoffer(message["jsep"], data.get("streams"))

    async def room_changed(self, event, publisher):
        async with self.negotiation:
            if event == "joined" and publisher.feed_id not in self.subscribed:
                data, jsep = await self.handle.message({"request": "subscribe", "streams": [{"feed": publisher.feed_id}]})
                self.subscribed.add(publisher.feed_id)
                self.note_streams(data.get("streams"))
                if jsep:
                    await self.reoffer(jsep, data.get("streams"))
                self.front.request_snapshot(self.snapshot_name("at_start"), [publisher])
            elif event == "left" and publisher.feed_id in self.subscribed:
                self.subscribed.discard(publisher.feed_id)
                jsep = None
                try:
                    data, jsep = await self.handle.message({"request": "unsubscribe", "streams": [{"feed": publisher.feed_id}]})
                    if jsep:
                        await self.reoffer(jsep, data.get("streams"))
                except JanusError as error:  # Janus may have dropped the streams on its own already
                    self.truth.setdefault("unsubscribe_errors", []).append(str(error))
                if not jsep:
                    await self.local_reoffer(publisher.feed_id)
        if event == "joined":
            await self.switch_layer(self.rid, publisher.connection_id, "initial")
        await self.send(publisher.notify("connection.created" if event == "joined" else "connection.destroyed",
                                         self.channel_id, self.counts()), record=True)

    async def follow_room(self):
        while True:
            event, publisher = await self.room_events.get()
            if self.ending:
                continue
            await self.room_changed(event, publisher)

    # --- the connection ---

    async def run(self):
        front, args = self.front, self.args
        connect = json.loads(await asyncio.wait_for(self.ws.recv(), 10))
        self.truth["connect"] = connect
        if connect.get("type") != "connect" or connect.get("role") != "recvonly" or not connect.get("channel_id"):
            self.truth["end"] = "invalid-connect"
            await self.ws.close(4490, "INVALID-CONNECT")
            return
        self.channel_id = connect["channel_id"]
        self.rid = connect.get("simulcast_request_rid") or connect.get("simulcast_rid") or "r2"
        if self.rid not in RIDS:
            self.rid = "r2"
        self.truth["initial_rid"] = self.rid
        # Sora needs publishers to offer anything; give late pages a moment.
        for _ in range(300):
            if any(p.on_air for p in front.publishers):
                break
            await asyncio.sleep(0.1)
        present = [p for p in front.publishers if p.on_air]
        while not self.room_events.empty():  # those are in the first offer already
            self.room_events.get_nowait()
        self.handle = await front.janus_session.attach()
        data, jsep = await self.handle.message({"request": "join", "ptype": "subscriber", "room": front.room,
                                                "streams": [{"feed": p.feed_id} for p in present]})
        self.subscribed = {p.feed_id for p in present}
        self.note_streams(data.get("streams"))
        self.truth["janus_offer"] = jsep["sdp"]
        if args.loss is not None:
            janus_address = LossRelay.server_candidate(jsep["sdp"])
            if janus_address is None:
                raise RuntimeError("--loss: no UDP host candidate in Janus's offer")
            self.relay = await LossRelay(janus_address, janus_address[0], args.loss, args.loss_seed + self.index - 1,
                                         delay_ms=args.loss_delay_ms).start()
            self.truth["relay"] = self.relay.stats
        sdp = self.rewrite(jsep["sdp"])
        self.last_offer = sdp
        self.truth["offer_sdp"] = sdp
        if args.offer_example:
            with open(args.offer_example, "w") as out:
                out.write(sdp)
        session_id, self.bot_id = sora_id(), sora_id()
        self.truth.update({"channel_id": self.channel_id, "session_id": session_id, "bot_connection_id": self.bot_id})
        simulcast = bool(connect.get("simulcast"))
        await self.send({
            "type": "offer", "sdp": sdp, "connection_id": self.bot_id, "client_id": connect.get("client_id", self.bot_id),
            "bundle_id": connect.get("bundle_id", self.bot_id), "session_id": session_id, "channel_id": self.channel_id,
            "simulcast": simulcast, "spotlight": False, "version": "sora-janus-front",
            "config": {"iceServers": [], "iceTransportPolicy": "all"},
            # Signaling stays on the WebSocket: this front opens no data channels.
            **({"data_channel_signaling": False, "ignore_disconnect_websocket": False} if "data_channel_signaling" in connect else {}),
        })
        self.truth["offer_sent_at_unix_ms"] = now_ms()
        if args.duration and front.deadline is None:
            front.deadline = time.monotonic() + args.duration
        answer = await self.next_of("answer")
        await self.handle.message({"request": "start"}, jsep={"type": "answer", "sdp": answer["sdp"]})
        self.truth["answer_received"] = True
        self.truth["answer_sdp"] = answer["sdp"]
        reader = asyncio.create_task(self.read())
        watcher = asyncio.create_task(self.watch_subscriber())
        follower = asyncio.create_task(self.follow_room())
        await self.switch_layer(self.rid, why="initial")

        await self.send({"type": "notify", "event_type": "connection.created", "role": "recvonly", "connection_id": self.bot_id,
                         "client_id": connect.get("client_id", self.bot_id), "channel_id": self.channel_id, "session_id": session_id,
                         "data": [p.notify("connection.created", self.channel_id, {}) for p in present], **self.counts()}, record=True)
        for publisher in present:
            await self.send(publisher.notify("connection.created", self.channel_id, self.counts()), record=True)

        timers = []
        loop = asyncio.get_running_loop()
        for seconds, rid in args.layer_switch_after:
            timers.append(loop.call_later(seconds, lambda r=rid: asyncio.ensure_future(self.switch_layer(r, why="flag"))))
        first = front.publishers[0] if front.publishers else None
        camera = front.publishers[args.video_publisher] if args.video_publisher < len(front.publishers) else None
        if camera and args.video_off_after:
            timers.append(loop.call_later(args.video_off_after, lambda: self.video_control(camera, "off")))
        if camera and args.video_on_after:
            timers.append(loop.call_later(args.video_on_after, lambda: self.video_control(camera, "on")))
        if first and args.leave_after:
            timers.append(loop.call_later(args.leave_after, lambda: first.control.update(stop=True)))
        if first and args.kill_after and front.chromium:
            timers.append(loop.call_later(args.kill_after, lambda: front.chromium.kill(0)))
        if args.late:
            late = [c for c in args.late.split(",") if c]
            timers.append(loop.call_later(args.late_after, lambda: asyncio.ensure_future(
                front.start_publishers(late, front.page_query()))))

        started = time.monotonic()
        next_ping = started + args.ping_interval
        while True:
            if self.client_left.is_set():
                self.truth.setdefault("end", "client-disconnect")
                break
            if self.end_requested.is_set() or (front.deadline is not None and time.monotonic() >= front.deadline):
                self.truth["end"] = "server-disconnect"
                break
            if time.monotonic() >= next_ping:
                next_ping += args.ping_interval
                self.truth["pings_sent"] += 1
                try:
                    await self.send({"type": "ping", "stats": False})
                except ConnectionClosed:
                    pass
            await asyncio.sleep(0.05)
        for timer in timers:
            timer.cancel()
        # The end: no more renegotiation; the pages report and hang up, then the WebSocket closes.
        self.ending = True
        self.truth["ending_at_unix_ms"] = now_ms()
        follower.cancel()
        watcher.cancel()
        # The pages stop (once) when the last connection ends; --duration and POST /end end them all together.
        others = [s for s in front.active_sessions() if s is not self]
        if all(s.ending or s.end_requested.is_set() for s in others) or (front.deadline is not None and time.monotonic() >= front.deadline):
            await front.stop_pages_once()
        if self.truth["end"] == "server-disconnect":
            await asyncio.sleep(0.5)  # the last packets in flight reach the recorder
            await self.ws.close(1000, "DISCONNECTED-API")
        self.truth["closed_at_unix_ms"] = now_ms()
        reader.cancel()
        await self.handle.detach()
        if self.relay is not None:
            self.relay.close()

    def video_control(self, publisher, state):
        publisher.control["video"] = state
        self.truth.setdefault("video_controls", []).append({"connection_id": publisher.connection_id, "state": state,
                                                            "at_unix_ms": now_ms()})

    async def next_of(self, kind):
        while True:
            message = json.loads(await asyncio.wait_for(self.ws.recv(), 15))
            if message.get("type") == "candidate":
                await self.on_candidate(message)
            if message.get("type") == kind:
                return message

    async def on_candidate(self, message):
        self.truth["candidates_received"] += 1
        text = message.get("candidate")
        if isinstance(text, dict):
            text = text.get("candidate")
        if not text:
            return
        mid = next(iter(self.mids), "0")
        try:
            await self.handle.trickle({"candidate": text if text.startswith("candidate:") else f"candidate:{text}",
                                       "sdpMid": mid, "sdpMLineIndex": 0})
        except JanusError as error:
            self.truth.setdefault("candidate_errors", []).append(str(error))

    async def read(self):
        try:
            async for text in self.ws:
                message = json.loads(text)
                kind = message.get("type")
                if kind == "pong":
                    self.truth["pongs_received"] += 1
                elif kind == "candidate":
                    await self.on_candidate(message)
                elif kind == "re-answer":
                    if self.pending_reanswer and not self.pending_reanswer.done():
                        self.pending_reanswer.set_result(message)
                elif kind == "disconnect":
                    self.truth["disconnect"] = message
                    self.truth["end"] = "client-disconnect"
                    break
                else:
                    self.truth.setdefault("other_messages", []).append(message)
        except ConnectionClosed:
            self.truth.setdefault("end", "client-websocket-closed")
        self.client_left.set()


async def main():
    # A parent may start this from a thread that blocks signals: unblock SIGTERM/SIGINT.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="signaling port (ws://127.0.0.1:PORT/signaling)")
    parser.add_argument("--http-port", type=int, default=0, help="the publishers' page and control")
    parser.add_argument("--janus-ws-port", type=int, default=0)
    parser.add_argument("--room", type=int, default=1234)
    parser.add_argument("--videocodec", default="vp8,vp9,av1,h264", help="the room's video codecs, in Janus's order of preference")
    parser.add_argument("--video-svc", action="store_true",
                        help="create the room with video_svc (Janus accepts it only for a VP9-only room: --videocodec vp9); "
                             "Janus 1.1.2 still forwards every spatial layer of a local publisher")
    parser.add_argument("--bitrate", type=int, default=4_000_000, help="the room's per-publisher bitrate cap (REMB)")
    parser.add_argument("--chromium", default="vp8,vp9,av1,h264", help="one headless Chromium publisher per codec (comma separated)")
    parser.add_argument("--late", default="", help="codecs of publishers that join --late-after seconds after the answer (re-offer)")
    parser.add_argument("--late-after", type=float, default=5.0)
    parser.add_argument("--leave-after", type=float, default=0, help="the first publisher hangs up this long after the answer (re-offer)")
    parser.add_argument("--kill-after", type=float, default=0,
                        help="the first publisher's browser is killed this long after the answer (a tab closed abruptly)")
    parser.add_argument("--video-off-after", type=float, default=0, help="a publisher stops its camera track this long after the answer")
    parser.add_argument("--video-on-after", type=float, default=0, help="... and takes a new one this long after the answer")
    parser.add_argument("--video-publisher", type=int, default=0, help="which publisher (0-based) --video-off/on-after act on")
    parser.add_argument("--layer-switch-after", type=layer_switch_spec, action="append", default=[], metavar="SECONDS:RID",
                        help="switch every simulcast/SVC sender to RID this long after the answer; repeatable")
    parser.add_argument("--resolution", default="320x240", help="the fake camera's size (WxH)")
    parser.add_argument("--vp9-resolution", default="", help="the VP9 publisher's camera size (960x540 for three spatial layers)")
    parser.add_argument("--audio-bed", choices=["silence", "quiet"], default="silence", help="between the beeps: silence (DTX) or a quiet tone")
    parser.add_argument("--cache-dir", default=os.path.join("/tmp", "recbot-fake-media"))
    parser.add_argument("--log-dir", help="keep the Chromium logs here (default: in their profiles, removed at exit)")
    parser.add_argument("--janus-log", help="append Janus's log here (default: removed at exit)")
    parser.add_argument("--ping-interval", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=0, help="end the session from the server this long after the answer")
    parser.add_argument("--max-seconds", type=float, default=180, help="give up altogether after this long")
    parser.add_argument("--publish-timeout", type=float, default=60, help="how long to wait for the pages to publish")
    parser.add_argument("--truth", help="write the ground truth here when the session ends")
    parser.add_argument("--offer-example", help="write the first rewritten offer SDP here")
    parser.add_argument("--verbose", action="store_true", help="print every page log line")
    parser.add_argument("--loss", type=float, default=None, metavar="PERCENT",
                        help="relay the media to the recorder through udp_loss_relay.py, which drops PERCENT %% of the "
                             "SRTP/SRTCP datagrams from Janus (never STUN or DTLS); the counts are the truth's `relay`")
    parser.add_argument("--loss-seed", type=int, default=1, help="the relay's seed (recorder connection K: seed + K - 1)")
    parser.add_argument("--loss-delay-ms", type=float, default=10.0,
                        help="with --loss, the relay also delays every datagram this long each way (default 10: a "
                             "20 ms round trip; Janus resends nothing while it measures a 0 ms one)")
    parser.add_argument("--recorders", type=int, default=1,
                        help="serve up to this many recorder connections at once (each its own Janus subscriber)")
    args = parser.parse_args()
    width, _, height = args.resolution.partition("x")
    args.resolution = (int(width), int(height))
    if args.vp9_resolution:
        width, _, height = args.vp9_resolution.partition("x")
        args.vp9_resolution = (int(width), int(height))
    codecs = [c for c in args.chromium.split(",") if c]
    for codec in codecs + [c for c in args.late.split(",") if c]:
        if codec not in CODECS:
            parser.error(f"unknown codec {codec}; one of {', '.join(CODECS)}")
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)

    front = Front(args)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    http = None
    try:
        http_port = args.http_port or free_port()
        front.http_url = f"http://127.0.0.1:{http_port}"
        http = await asyncio.start_server(HttpServer(front).handle, "127.0.0.1", http_port)
        await front.start_janus()
        await front.start_publishers(codecs, front.page_query())
        await front.wait_publishing(front.publishers, args.publish_timeout)

        async def handler(ws):
            if len(front.active_sessions()) >= args.recorders or front.finished.is_set():
                await ws.close(4490, f"BUSY: {args.recorders} recorder(s) at a time")
                return
            session = Session(front, ws, len(front.sessions) + 1)
            front.sessions.append(session)
            try:
                await session.run()
            except Exception as error:  # noqa: BLE001 - recorded in the truth, the server ends
                session.truth["error"] = repr(error)
                print(f"session {session.index} failed: {error!r}", file=sys.stderr)
                raise
            finally:
                session.done = True
                if session.relay is not None:
                    session.relay.close()
                if not front.active_sessions():
                    front.finished.set()

        server = await serve(handler, "127.0.0.1", args.port, max_size=4 << 20)
        port = server.sockets[0].getsockname()[1]
        print(json.dumps({"type": "listening", "url": f"ws://127.0.0.1:{port}/signaling", "http": front.http_url,
                          "janus": front.janus.ws_url,
                          "publishers": [{"connection_id": p.connection_id, "codec": p.codec, "publishing": p.publishing.is_set()}
                                         for p in front.publishers]}), flush=True)
        done = asyncio.ensure_future(front.finished.wait())
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait([done, stopped], timeout=args.max_seconds, return_when=asyncio.FIRST_COMPLETED)
        done.cancel()
        stopped.cancel()
        if not front.finished.is_set():
            front.truth.setdefault("end", "signal" if stop.is_set() else "max-seconds")
            if front.active_sessions():
                for session in front.active_sessions():
                    session.end_requested.set()
                try:
                    await asyncio.wait_for(front.finished.wait(), 20)
                except asyncio.TimeoutError:
                    pass
            else:
                await front.stop_pages(front.publishers)
        server.close()
        front.write_truth()
    finally:
        # Nothing started here outlives the server: Chromium first (it talks to Janus), then Janus.
        if hasattr(front, "chromium"):
            await front.chromium.stop()
        if hasattr(front, "client"):
            try:
                await asyncio.wait_for(front.client.close(), 3)
            except Exception:  # noqa: BLE001
                pass
        if hasattr(front, "janus"):
            await front.janus.stop()
        if http is not None:
            http.close()


if __name__ == "__main__":
    asyncio.run(main())
