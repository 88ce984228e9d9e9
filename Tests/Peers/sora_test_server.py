#!/usr/bin/env python3
"""A Sora-compatible signaling server with synthetic publishers, for recbot's tests and demo.

It speaks the server side of Sora's signaling (sora-protocol.md) over WebSocket and plays an
SFU: every synthetic publisher's video and audio reach the recvonly client as sendonly
m-sections whose msid stream id is the publisher's connection id. Scenarios are set with flags.
When the client leaves it writes a ground truth of what it sent (--truth).

  sora_test_server.py --publisher vp8 --publisher h264 --truth truth.json
  -> prints {"type": "listening", "url": "ws://127.0.0.1:PORT/signaling"} and serves one session.
"""
import argparse
import asyncio
import json
import random
import sys
import time
import zlib

import aioice.ice

# aioice never offers loopback addresses; the tests and the demo run on loopback only.
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]

from aiortc import RTCConfiguration, RTCPeerConnection, RTCRtpSender, RTCSessionDescription  # noqa: E402
from aiortc.rtcconfiguration import RTCBundlePolicy  # noqa: E402
from aiortc.sdp import candidate_from_sdp  # noqa: E402
from websockets.asyncio.server import serve  # noqa: E402

from synthetic_media import PatternVideo, ToneAudio  # noqa: E402

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
MIME = {"vp8": "video/VP8", "h264": "video/H264"}


def sora_id():
    return "".join(random.choice(CROCKFORD) for _ in range(26))


class Publisher:
    def __init__(self, codec, index):
        self.codec = codec
        self.connection_id = sora_id()
        self.client_id = f"publisher-{index}"
        self.video = PatternVideo(width=320, height=240, fps=30)
        self.audio = ToneAudio()
        self.senders = {}
        self.joined_at = None
        self.left_at = None

    def attach(self, pc):
        for kind, track in (("video", self.video), ("audio", self.audio)):
            transceiver = pc.addTransceiver(track, direction="sendonly")
            mime = MIME[self.codec] if kind == "video" else "audio/opus"
            codecs = [c for c in RTCRtpSender.getCapabilities(kind).codecs if c.mimeType == mime]
            if kind == "video" and self.codec == "h264":
                codecs = [c for c in codecs if "42e01f" in (c.parameters or {}).get("profile-level-id", "")][:1] or codecs[:1]
            transceiver.setCodecPreferences(codecs)
            # Sora's convention: the msid stream id is the publisher's connection id.
            transceiver.sender._stream_id = self.connection_id
            self.senders[kind] = transceiver.sender

    def notify(self, event_type, channel_id, counts):
        return {
            "type": "notify", "event_type": event_type, "role": "sendonly", "channel_id": channel_id,
            "connection_id": self.connection_id, "client_id": self.client_id, "bundle_id": self.connection_id,
            "audio": True, "video": True, "metadata": {"publisher": self.client_id, "codec": self.codec},
            "authn_metadata": None, "authz_metadata": {"room": "test"}, "minutes": 0,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), **counts,
        }


class Session:
    def __init__(self, args, url):
        self.args = args
        self.url = url
        self.truth = {"messages_sent": [], "publishers": [], "pings_sent": 0, "pongs_received": 0, "candidates_received": 0}
        self.publishers = [Publisher(codec, index) for index, codec in enumerate(args.publisher)]
        if args.first_publisher_id is not None and self.publishers:
            self.publishers[0].connection_id = args.first_publisher_id
        self.done = asyncio.Event()

    async def send(self, ws, message, record=False):
        text = json.dumps(message, ensure_ascii=False)
        if record:
            self.truth["messages_sent"].append(text)
        await ws.send(text)

    def counts(self):
        on = [p for p in self.publishers if p.joined_at is not None and p.left_at is None]
        return {"channel_connections": len(on) + 1, "channel_sendonly_connections": len(on), "channel_recvonly_connections": 1,
                "channel_sendrecv_connections": 0}

    async def run(self, ws):
        args = self.args
        connect = json.loads(await asyncio.wait_for(ws.recv(), 10))
        self.truth["connect"] = connect
        if connect.get("type") != "connect" or connect.get("role") != "recvonly" or not connect.get("channel_id"):
            self.truth["end"] = "invalid-connect"
            await ws.close(4490, "INVALID-CONNECT")
            return
        if args.reject:
            self.truth["end"] = "rejected"
            await ws.close(4490, "AUTHENTICATION-FAILED")
            return
        if args.redirect and not connect.get("redirect"):
            self.truth["redirected"] = True
            await self.send(ws, {"type": "redirect", "location": self.url})
            await ws.close()
            return
        channel = connect["channel_id"]
        if args.silent:
            self.truth["end"] = "silent"
            await asyncio.sleep(args.max_seconds)
            return
        if args.bad_offer:
            await self.send(ws, {"type": "offer", "sdp": "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"
                                 "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=sendonly\r\na=rtcp-mux\r\n"
                                 "a=rtpmap:96 VP8/90000\r\na=setup:active\r\n", "connection_id": sora_id()})
            try:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                self.truth["after_bad_offer"] = message
            except Exception:  # noqa: BLE001
                pass
            self.truth["end"] = "bad-offer"
            return
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[], bundlePolicy=RTCBundlePolicy.MAX_BUNDLE))
        for publisher in self.publishers[: len(self.publishers) - args.late_publishers]:
            publisher.attach(pc)
        dc_signaling = bool(connect.get("data_channel_signaling"))
        self.channels = {}
        self.channel_settings = []
        if dc_signaling:
            wanted = [c for c in connect.get("data_channels", []) if str(c.get("label", "")).startswith("#")]
            self.channel_settings = [{"label": label, "direction": "sendrecv" if label in ("signaling", "stats") else "recvonly",
                                      "compress": False} for label in ("signaling", "notify", "push", "stats")]
            self.channel_settings += [{"label": c["label"], "direction": "recvonly", "compress": bool(c.get("compress")),
                                       **({"header": c["header"]} if c.get("header") else {})} for c in wanted]
            # Channels nobody asked for: the offer's list is what counts (e2ee, rpc, other labels).
            for spec in args.offer_channel:
                label, *flags = spec.split(":")
                self.channel_settings.append({"label": label, "direction": "recvonly", "compress": "compress" in flags,
                                              **({"ordered": False, "max_retransmits": 0} if "unordered" in flags else {})})
            for setting in self.channel_settings:
                data_channel = pc.createDataChannel(setting["label"], ordered=setting.get("ordered", True),
                                                    maxRetransmits=setting.get("max_retransmits"))
                self.channels[setting["label"]] = data_channel
                data_channel.on("message", lambda message, label=setting["label"]: self.on_channel_message(label, message))
        session_id, bot_id = sora_id(), sora_id()
        self.truth.update({"channel_id": channel, "session_id": session_id, "bot_connection_id": bot_id})
        await pc.setLocalDescription(await pc.createOffer())
        await self.send(ws, {
            "type": "offer", "sdp": pc.localDescription.sdp, "connection_id": bot_id, "client_id": connect.get("client_id", bot_id),
            "bundle_id": bot_id, "session_id": session_id, "channel_id": channel, "simulcast": False, "spotlight": False,
            "version": "recbot-test-server", "config": {"iceServers": [], "iceTransportPolicy": "all"},
            **({"data_channel_signaling": True, "ignore_disconnect_websocket": bool(connect.get("ignore_disconnect_websocket")),
                "data_channels": self.channel_settings} if dc_signaling else {}),
        })
        answer = await self.next_of(ws, "answer")
        self.truth["answer_received"] = True
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))
        reader = asyncio.create_task(self.read(ws, pc))

        now = time.monotonic()
        for publisher in self.publishers[: len(self.publishers) - args.late_publishers]:
            publisher.joined_at = now
        await self.send(ws, {"type": "notify", "event_type": "connection.created", "role": "recvonly", "connection_id": bot_id,
                             "client_id": connect.get("client_id", bot_id), "channel_id": channel, "session_id": session_id,
                             "data": [p.notify("connection.created", channel, {})
                                      for p in self.publishers if p.joined_at is not None], **self.counts()}, record=True)
        for publisher in self.publishers:
            if publisher.joined_at is not None:
                await self.send(ws, publisher.notify("connection.created", channel, self.counts()), record=True)

        if dc_signaling:
            await self.switch_to_data_channels(ws, channel, bool(connect.get("ignore_disconnect_websocket")))

        started = time.monotonic()
        late_added = False
        left = False
        push_sent = False
        next_ping = started + args.ping_interval
        while not self.done.is_set():
            elapsed = time.monotonic() - started
            if args.abrupt_close_after and elapsed >= args.abrupt_close_after:
                self.truth["end"] = "abrupt-close"
                ws.transport.abort()
                break
            if args.end_after and elapsed >= args.end_after:
                if self.truth.get("websocket_closed_after_switch"):
                    await self.end_over_data_channels(with_close_message=not args.end_without_close_message)
                else:
                    self.truth["end"] = "server-disconnect"
                    await ws.close(1000, "DISCONNECTED-API")
                break
            if not push_sent and elapsed >= 1.0 and not self.truth.get("websocket_closed_after_switch"):
                push_sent = True
                await self.send(ws, {"type": "push", "data": {"kind": "bookmark", "at": round(elapsed, 3), "text": "日本語も"}}, record=True)
            if time.monotonic() >= next_ping and not self.truth.get("websocket_closed_after_switch"):
                next_ping += args.ping_interval
                self.truth["pings_sent"] += 1
                await self.send(ws, {"type": "ping", "stats": self.truth["pings_sent"] % 2 == 0})
            if args.leave_after and not left and elapsed >= args.leave_after:
                left = True
                await self.leave(ws, pc, channel, self.publishers[0])
            if args.late_publishers and not late_added and elapsed >= args.late_after:
                late_added = True
                await self.add_late(ws, pc, channel)
            await asyncio.sleep(0.05)

        for publisher in self.publishers:
            if publisher.joined_at is not None and publisher.left_at is None:
                publisher.left_at = time.monotonic()
        await self.finish(pc)
        reader.cancel()

    async def add_late(self, ws, pc, channel):
        late = [p for p in self.publishers if p.joined_at is None]
        for publisher in late:
            publisher.attach(pc)
        await self.renegotiate(ws, pc)
        for publisher in late:
            publisher.joined_at = time.monotonic()
            notice = publisher.notify("connection.created", channel, self.counts())
            if getattr(self, "switched", False):
                text = json.dumps(notice, ensure_ascii=False)
                self.channels["notify"].send(text)
                self.truth.setdefault("datachannel_sent", []).append({"label": "notify", "payload": text})
            else:
                await self.send(ws, notice, record=True)

    def on_channel_message(self, label, message):
        text = message if isinstance(message, str) else message.decode("utf-8", "replace")
        self.truth.setdefault("datachannel_received", []).append({"label": label, "message": text})
        try:
            parsed = json.loads(text)
        except ValueError:
            return
        if label == "signaling" and parsed.get("type") == "disconnect":
            self.truth["disconnect"] = parsed
            self.truth["end"] = "client-disconnect-over-datachannel"
            self.done.set()
        if label == "signaling" and parsed.get("type") == "re-answer":
            future = getattr(self, "pending_reanswer", None)
            if future and not future.done():
                future.set_result(parsed)
        if label == "stats" and parsed.get("type") == "stats":
            self.truth["stats_replies"] = self.truth.get("stats_replies", 0) + 1

    async def switch_to_data_channels(self, ws, channel_id, ignore_disconnect):
        """Waits for the channels, sends switched, then talks over data channels as Sora does."""
        for _ in range(100):
            if all(c.readyState == "open" for c in self.channels.values()):
                break
            await asyncio.sleep(0.05)
        self.truth["datachannels_open"] = sorted(label for label, c in self.channels.items() if c.readyState == "open")
        await self.send(ws, {"type": "switched", "ignore_disconnect_websocket": ignore_disconnect}, record=True)
        self.switched = True
        notify = json.dumps({"type": "notify", "event_type": "connection.updated", "channel_id": channel_id, "connection_id": "DCNOTIFY000000000000000000",
                             "via": "datachannel"}, ensure_ascii=False)
        self.channels["notify"].send(notify)
        push = json.dumps({"type": "push", "data": {"via": "datachannel", "text": "データチャネル"}}, ensure_ascii=False)
        self.channels["push"].send(push)
        self.truth["datachannel_sent"] = [{"label": "notify", "payload": notify}, {"label": "push", "payload": push}]
        sender = self.publishers[0].connection_id if self.publishers else "0" * 26
        for setting in self.channel_settings:
            if setting["label"] in ("signaling", "notify", "push", "stats"):
                continue
            payloads = ['{"chat": "こんにちは"}', "plain text", "x" * 3000]
            if not setting["label"].startswith("#") and setting["label"] not in ("e2ee", "rpc"):
                # A label Sora never defines, carrying what looks like signaling: to be stored, never answered.
                payloads += ['{"type": "ping"}', '{"type": "req-stats"}']
            for index, payload in enumerate(payloads):
                body = payload.encode()
                if setting.get("header"):
                    body = sender.encode() + body
                if setting["compress"]:
                    body = zlib.compress(body)
                self.channels[setting["label"]].send(body if setting["compress"] or index == 2 else body.decode())
                self.truth["datachannel_sent"].append({"label": setting["label"], "payload": payload, "sender": sender if setting.get("header") else None})
        self.channels["stats"].send(json.dumps({"type": "req-stats"}))
        if ignore_disconnect:
            await asyncio.sleep(0.5)
            self.truth["websocket_closed_after_switch"] = True
            await ws.close(1000, "")

    async def end_over_data_channels(self, with_close_message):
        """Data-channel-only sessions end as Sora ends them: `close` on signaling, then the channels close."""
        if with_close_message:
            self.channels["signaling"].send(json.dumps({"type": "close", "code": 1000, "reason": "DISCONNECTED-API"}))
            self.truth["end"] = "server-close-over-datachannel"
            await asyncio.sleep(0.3)
        else:
            self.truth["end"] = "server-closed-datachannels"
        for channel in self.channels.values():
            channel.close()
        await asyncio.sleep(0.5)
        self.done.set()

    async def renegotiate(self, ws, pc):
        await pc.setLocalDescription(await pc.createOffer())
        message = {"type": "re-offer", "sdp": pc.localDescription.sdp}
        if getattr(self, "switched", False):
            # After the switch, signaling travels on the signaling data channel.
            self.channels["signaling"].send(json.dumps(message))
            self.truth["re_offers_over_datachannel"] = self.truth.get("re_offers_over_datachannel", 0) + 1
        else:
            await self.send(ws, message)
        self.truth["re_offers_sent"] = self.truth.get("re_offers_sent", 0) + 1
        self.pending_reanswer = asyncio.get_running_loop().create_future()
        reanswer = await asyncio.wait_for(self.pending_reanswer, 10)
        await pc.setRemoteDescription(RTCSessionDescription(sdp=reanswer["sdp"], type="answer"))
        self.truth["re_answers_received"] = self.truth.get("re_answers_received", 0) + 1

    async def leave(self, ws, pc, channel, publisher):
        """The publisher leaves: its sections go inactive in a re-offer (Sora sets port 0), then a notify."""
        publisher.video.stop()
        publisher.audio.stop()
        publisher.left_at = time.monotonic()
        for transceiver in pc.getTransceivers():
            if transceiver.sender in publisher.senders.values():
                transceiver.direction = "inactive"
        await self.renegotiate(ws, pc)
        await self.send(ws, publisher.notify("connection.destroyed", channel, self.counts()), record=True)

    async def next_of(self, ws, kind):
        while True:
            message = json.loads(await asyncio.wait_for(ws.recv(), 15))
            if message.get("type") == "candidate":
                self.truth["candidates_received"] += 1
            if message.get("type") == kind:
                return message

    async def read(self, ws, pc):
        try:
            async for text in ws:
                message = json.loads(text)
                kind = message.get("type")
                if kind == "pong":
                    self.truth["pongs_received"] += 1
                elif kind == "candidate":
                    self.truth["candidates_received"] += 1
                    try:
                        candidate = candidate_from_sdp(message["candidate"].split(":", 1)[1])
                        candidate.sdpMid = pc.getTransceivers()[0].mid
                        await pc.addIceCandidate(candidate)
                    except Exception as error:  # noqa: BLE001 - recorded, the session goes on
                        self.truth.setdefault("candidate_errors", []).append(str(error))
                elif kind == "re-answer":
                    future = getattr(self, "pending_reanswer", None)
                    if future and not future.done():
                        future.set_result(message)
                elif kind == "disconnect":
                    self.truth["disconnect"] = message
                    self.truth["end"] = "client-disconnect"
                    break
        except Exception as error:  # noqa: BLE001
            self.truth.setdefault("read_errors", []).append(str(error))
        # After a switch with ignore_disconnect_websocket the session lives on the data channels.
        if not self.truth.get("websocket_closed_after_switch"):
            self.done.set()

    async def finish(self, pc):
        for publisher in self.publishers:
            publisher.video.stop()
            publisher.audio.stop()
        await asyncio.sleep(0.2)
        stats = {}
        for report in (await pc.getStats()).values():
            if report.type == "outbound-rtp":
                stats[report.ssrc] = report.packetsSent
        for publisher in self.publishers:
            entry = {"connection_id": publisher.connection_id, "client_id": publisher.client_id, "codec": publisher.codec,
                     "video_frames_sent": publisher.video.index, "audio_frames_sent": publisher.audio.index,
                     "on_air_seconds": (publisher.left_at - publisher.joined_at) if publisher.joined_at and publisher.left_at else 0}
            for kind, sender in publisher.senders.items():
                ssrc = sender._ssrc
                entry[f"{kind}_packets_sent"] = stats.get(ssrc, 0)
            self.truth["publishers"].append(entry)
        await pc.close()


def self_signed_context():
    """A throwaway self-signed certificate for 127.0.0.1, so wss:// can be tested offline."""
    import datetime
    import ipaddress
    import ssl
    import tempfile

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "recbot-test-server")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                   .sign(key, hashes.SHA256()))
    directory = tempfile.mkdtemp()
    with open(f"{directory}/cert.pem", "wb") as out:
        out.write(certificate.public_bytes(serialization.Encoding.PEM))
    with open(f"{directory}/key.pem", "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(f"{directory}/cert.pem", f"{directory}/key.pem")
    return context


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--publisher", action="append", choices=sorted(MIME), default=None,
                        help="a synthetic publisher with this video codec (plus Opus); repeatable")
    parser.add_argument("--late-publishers", type=int, default=0, help="how many of the publishers join later (re-offer)")
    parser.add_argument("--late-after", type=float, default=3.0)
    parser.add_argument("--leave-after", type=float, default=0, help="the first publisher leaves after this many seconds (re-offer)")
    parser.add_argument("--ping-interval", type=float, default=2.0)
    parser.add_argument("--reject", action="store_true", help="close 4490 after connect, like an auth rejection")
    parser.add_argument("--redirect", action="store_true", help="answer the first connect with redirect to itself")
    parser.add_argument("--abrupt-close-after", type=float, default=0)
    parser.add_argument("--end-after", type=float, default=0,
                        help="end the session from the server side: WebSocket close 1000, or after a switch that dropped "
                             "the WebSocket, a `close` message on the signaling channel and then the channels closed")
    parser.add_argument("--offer-channel", action="append", default=[], metavar="LABEL[:compress][:unordered]",
                        help="with data_channel_signaling: also offer this channel though nobody asked for it "
                             "(unordered means ordered=false, max_retransmits=0)")
    parser.add_argument("--end-without-close-message", action="store_true",
                        help="with --end-after after the switch: close the data channels without the `close` message")
    parser.add_argument("--silent", action="store_true", help="accept connect, then never send an offer")
    parser.add_argument("--bad-offer", action="store_true", help="send an offer whose SDP cannot be answered")
    parser.add_argument("--first-publisher-id", help="use this connection id (even a hostile one) for the first publisher")
    parser.add_argument("--tls", action="store_true", help="serve wss:// with a self-signed certificate")
    parser.add_argument("--max-seconds", type=float, default=120)
    parser.add_argument("--truth", help="write the ground truth here when the session ends")
    args = parser.parse_args()
    args.publisher = args.publisher or ["vp8", "vp8"]

    finished = asyncio.Event()
    state = {}

    async def handler(ws):
        session = Session(args, state["url"])
        try:
            await session.run(ws)
        finally:
            if session.truth.get("end") != "redirected" and not session.truth.get("redirected"):
                if args.truth:
                    with open(args.truth, "w") as out:
                        json.dump(session.truth, out, ensure_ascii=False, indent=2)
                finished.set()

    ssl_context = self_signed_context() if args.tls else None
    async with serve(handler, "127.0.0.1", args.port, max_size=4 << 20, ssl=ssl_context) as server:
        port = server.sockets[0].getsockname()[1]
        state["url"] = f"{'wss' if args.tls else 'ws'}://127.0.0.1:{port}/signaling"
        sys.stdout.write(json.dumps({"type": "listening", "url": state["url"]}) + "\n")
        sys.stdout.flush()
        try:
            await asyncio.wait_for(finished.wait(), args.max_seconds)
        except asyncio.TimeoutError:
            pass
        await asyncio.sleep(0.2)


if __name__ == "__main__":
    asyncio.run(main())
