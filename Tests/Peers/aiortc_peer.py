#!/usr/bin/env python3
"""An independent WebRTC sender for recbot's interop tests, built on aiortc.

It offers sendonly VP8 + Opus from synthetic sources on 127.0.0.1 only, exchanges
SDP with the test as JSON lines (offer on stdout, answer on stdin), streams for a
few seconds, then prints a report of what it sent:

  {"type": "offer", "sdp": "..."}                 (stdout)
  {"type": "answer", "sdp": "..."}                (stdin)
  {"type": "report", "state": "connected", "sent": {"video": {"ssrc": 1, "packetsSent": 90}, ...}}
"""
import argparse
import asyncio
import json
import os
import sys

import aioice.ice

# aioice never offers loopback addresses; the tests run on loopback only.
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]

import aiortc.rtcdtlstransport as dtls  # noqa: E402
from aiortc import (  # noqa: E402
    RTCConfiguration,
    RTCPeerConnection,
    RTCRtpSender,
    RTCSessionDescription,
)
from aiortc import rtcsctptransport  # noqa: E402
from aiortc.rtcconfiguration import RTCBundlePolicy  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "PythonSupport"))  # the shared media and codec modules
from synthetic_media import PatternVideo, ToneAudio  # noqa: E402

PROFILES = {
    "any": None,
    "cm80": [dtls.SRTP_AES128_CM_SHA1_80],
    "gcm128": [dtls.SRTP_AEAD_AES_128_GCM],
}


# Partial reliability needs loss to show: these messages' DATA chunks are "lost on
# the wire" the first time they are sent. On "#pr" (max-retransmits 0) aiortc then
# abandons them and tells the receiver with FORWARD-TSN (RFC 3758).
DROP_ONCE = {b"pr-3", b"pr-6"}
dropped = []
# And one message from recbot is "lost" on its first arrival, so recbot has to
# retransmit it (T3-rtx) for aiortc to deliver it.
LOSE_INCOMING_ONCE = b"lost-once"
lost_incoming = []


def lose_some_data_chunks():
    original = rtcsctptransport.RTCSctpTransport._send_chunk

    async def send_chunk(self, chunk):
        if isinstance(chunk, rtcsctptransport.DataChunk) and chunk.user_data in DROP_ONCE:
            text = chunk.user_data.decode()
            if text not in dropped:
                dropped.append(text)
                return
        await original(self, chunk)

    rtcsctptransport.RTCSctpTransport._send_chunk = send_chunk

    original_receive = rtcsctptransport.RTCSctpTransport._receive_data_chunk

    async def receive_data_chunk(self, chunk):
        if chunk.user_data == LOSE_INCOMING_ONCE and not lost_incoming:
            lost_incoming.append(chunk.tsn)
            return
        await original_receive(self, chunk)

    rtcsctptransport.RTCSctpTransport._receive_data_chunk = receive_data_chunk


def emit(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", choices=sorted(PROFILES), default="any")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connect-timeout", type=float, default=10.0)
    parser.add_argument("--data-channels", action="store_true",
                        help="also open #chat (ordered), #fast (unordered, no retransmits) and #pr (ordered, no retransmits, "
                             "two of its messages lost once, so abandoned)")
    args = parser.parse_args()

    if PROFILES[args.profile] is not None:
        dtls.SRTP_PROFILES[:] = PROFILES[args.profile]  # in place: transports share this list

    pc = RTCPeerConnection(RTCConfiguration(iceServers=[], bundlePolicy=RTCBundlePolicy.MAX_BUNDLE))
    connected = asyncio.Event()
    finished = asyncio.Event()

    @pc.on("connectionstatechange")
    def on_state():
        if pc.connectionState == "connected":
            connected.set()
        if pc.connectionState in ("failed", "closed"):
            finished.set()
            connected.set()

    video, audio = PatternVideo(), ToneAudio()
    video_transceiver = pc.addTransceiver(video, direction="sendonly")
    video_transceiver.setCodecPreferences(
        [c for c in RTCRtpSender.getCapabilities("video").codecs if c.mimeType in ("video/VP8", "video/rtx")]
    )
    audio_transceiver = pc.addTransceiver(audio, direction="sendonly")
    audio_transceiver.setCodecPreferences(
        [c for c in RTCRtpSender.getCapabilities("audio").codecs if c.mimeType == "audio/opus"]
    )

    sent_messages = {}
    opened = []
    received_messages = {}
    if args.data_channels:
        lose_some_data_chunks()
        plans = {
            "#chat": ["hello", "こんにちは、録画ボット", "x" * 5000, bytes(range(256)), ""],
            "#fast": ["u1", "u2", "u3"],
            "#pr": [f"pr-{index}" for index in range(15)],
        }
        for label, options in (("#chat", {}), ("#fast", {"ordered": False, "maxRetransmits": 0}),
                               ("#pr", {"ordered": True, "maxRetransmits": 0})):
            channel = pc.createDataChannel(label, **options)

            def on_open(channel=channel, label=label):
                opened.append(label)
                for message in plans[label]:
                    channel.send(message)
                    sent_messages.setdefault(label, []).append(
                        {"hex": message.hex()} if isinstance(message, bytes) else {"text": message})

            channel.on("open", on_open)
            channel.on("message", lambda message, label=label: received_messages.setdefault(label, []).append(
                {"hex": message.hex()} if isinstance(message, bytes) else {"text": message}))

    await pc.setLocalDescription(await pc.createOffer())
    emit({"type": "offer", "sdp": pc.localDescription.sdp})

    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    if not line:
        emit({"type": "report", "state": "no-answer", "sent": {}})
        return
    try:
        answer = json.loads(line)
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))
    except Exception as error:  # report, do not crash: the test wants to see why
        emit({"type": "report", "state": "answer-rejected", "error": str(error), "sent": {}})
        await pc.close()
        return

    try:
        await asyncio.wait_for(connected.wait(), timeout=args.connect_timeout)
    except asyncio.TimeoutError:
        pass
    state = pc.connectionState
    if state == "connected":
        await asyncio.sleep(args.seconds)
        video.stop()
        audio.stop()
        await asyncio.sleep(0.3)  # let the senders drain
        state = pc.connectionState

    sent = {}
    for report in (await pc.getStats()).values():
        if report.type == "outbound-rtp":
            sent[report.kind] = {"ssrc": report.ssrc, "packetsSent": report.packetsSent}
    emit({"type": "report", "state": state, "sent": sent, "datachannels_opened": opened, "datachannel_messages": sent_messages,
          "datachannel_dropped": dropped, "datachannel_received": received_messages, "lost_incoming": len(lost_incoming)})
    await pc.close()


if __name__ == "__main__":
    asyncio.run(main())
