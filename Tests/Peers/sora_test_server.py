#!/usr/bin/env python3
"""A Sora-compatible signaling server with synthetic publishers, for recbot's tests and demo.

It speaks the server side of Sora's signaling (sora-protocol.md) over WebSocket and plays an
SFU: every synthetic publisher's video and audio reach the recvonly client as sendonly
m-sections whose msid stream id is the publisher's connection id. Scenarios are set with flags.
When the client leaves it writes a ground truth of what it sent (--truth).

  sora_test_server.py --publisher vp8 --publisher h264 --truth truth.json
  -> prints {"type": "listening", "url": "ws://127.0.0.1:PORT/signaling"} and serves one session.

Network impairments for the publishers' RTP (never RTCP, DTLS, STUN or SCTP), applied where aiortc
hands packets to SRTP (RTCDtlsTransport._send_rtp):
  --loss 5 --loss-seed 1    drop 5 % of the media and RTX packets, independently per packet
  --burst-loss 15:4         drop 15 % in bursts of 4 packets on average (Gilbert-Elliott: a good state
                            that drops nothing, a bad one that drops everything), one chain per
                            publisher's path (its media, RTX and audio packets in the order they leave)
  --jitter-ms 60            delay each media and RTX packet by a seeded random 0-60 ms, so packets
                            reorder (SRs are not delayed)
  --shared-clock            every publisher captures on one clock: their sync markers leave together
  --delay-audio-ms 300      audio RTP reaches the wire 300 ms late; RTCP SRs are not delayed and
                            keep mapping RTP time to the instant aiortc sent the packet, so a
                            receiver that syncs by SR can undo the delay and one by arrival cannot
Video is offered with RTX (RFC 4588, a=ssrc-group:FID) unless --no-rtx.

Publishers' video codecs: vp8 and h264 are aiortc's own; vp9, av1 and h265 come from
video_codecs.py (PyAV's libvpx-vp9, libsvtav1 and libx265, with payloaders written from the RTP
payload specs):
  --keyframe-interval 2           VP9, AV1 and H.265 keyframes every 2 s (and on PLI/FIR)
  --resolution-change-after 5     every publisher's video goes from 320x240 to 480x272 after 5 s
                                  of its own timeline (a new keyframe, for AV1 a new sequence)
  --switch-codec-after 4:vp9      the first publisher offers its codec and VP9 in its video section
                                  and, from 4 s into its own timeline, sends VP9 on the same SSRC
                                  without renegotiating, as a browser does after setParameters
                                  (`Publisher.switch_codec`)
The truth counts, per publisher, the video frames and keyframes its encoder handed to RTP (in
all and per codec, `video_frames_sent_by_codec`), the sizes its video had and, when it switched
codec, `codec_switch`: after how many frames (`after_frames`, all of them the first codec's), at
which frame of its track (`at_frame_index`), from and to what, with which payload types (and the
new codec's RTX payload type); null when it did not switch (also when the answer did not keep
CODEC: the publisher then goes on with its own codec).

Hostile publishers (hostile_publisher.py), for fault campaigns: one publisher (the last, or
--hostile-publisher N) also sends garbage while its honest media goes on; every other one stays
honest. The RTP is built by hand and handed to the same DTLS transport as aiortc's (SRTP, then ICE).
  --hostile sps                 crafted H.264 SPS/PPS/IDR (out-of-range and overflowing scaling-list
                                delta_scale, 32-bit and longer Exp-Golomb codes, absurd sizes) on the
                                publisher's own H.264 SSRC and payload type, 4 a second (needs h264)
  --hostile timestamp-jumps     its video RTP timestamps jump (+2^31, -2^31, to the wrap, +1 h, ...)
                                about every second, between valid frames
  --hostile endless-frame       2,000 packets a second on one unsignaled SSRC (with the publisher's
                                MID extension): one RTP timestamp, never a marker
  --hostile ssrc-flood          1,000 new random unsignaled SSRCs a second, three packets each: random
                                or negotiated payload types, or a section's MID extension and codec
  --hostile datachannel-flood   --flood-rate messages a second (10,000) on the first `#` messaging
                                channel (recbot: --data-channel-signaling --data-channel '#chat')
  --hostile-after 1             it starts 1 s after the session is set up (answer, data-channel switch)
  --hostile-seconds 0           and lasts this long (0: until the session ends); seeded by --loss-seed
The truth's `hostile` says what was sent, per kind, and each publisher entry says `hostile`.

An answer may reject a publisher's section with port 0, as recbot rejects H.265 video. aiortc
cannot take such an answer (it wants ICE, DTLS and a common codec in every section), so the server
fills the rejected section in as inactive before aiortc sees it (`fill_in_rejected_sections`):
nothing is sent on it, the rest of the session goes on, and the truth lists the section under
`rejected_sections` and the publisher's `rejected` kinds (its `video_frames_sent` stays 0).
"""
import argparse
import asyncio
import collections
import copy
import json
import math
import os
import random
import signal
import sys
import time
import zlib

import aioice.ice

# aioice never offers loopback addresses; the tests and the demo run on loopback only.
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]

from aiortc import RTCConfiguration, RTCPeerConnection, RTCRtpSender, RTCSessionDescription  # noqa: E402
from aiortc.codecs import is_rtx  # noqa: E402
from aiortc.rtcconfiguration import RTCBundlePolicy  # noqa: E402
from aiortc.rtp import RTP_HISTORY_SIZE, RtcpPsfbPacket, RtcpRrPacket, RtcpRtpfbPacket, RtcpSrPacket  # noqa: E402
from aiortc.sdp import candidate_from_sdp  # noqa: E402
from websockets.asyncio.server import serve  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "PythonSupport"))  # the shared media and codec modules
import video_codecs  # noqa: E402
from hostile_publisher import HOSTILE_KINDS, HostileTraffic  # noqa: E402
from synthetic_media import MediaClock, PatternVideo, ToneAudio  # noqa: E402

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
MIME = {"vp8": "video/VP8", "h264": "video/H264", "vp9": "video/VP9", "av1": "video/AV1", "h265": "video/H265"}
RESIZED = (480, 272)  # 16:9-ish and a multiple of 16 both ways


def video_capabilities(codec):
    """The capabilities a publisher of this video codec prefers: H.264 only as Constrained Baseline
    level 3.1 (42e01f), which aiortc's encoder makes."""
    codecs = [c for c in RTCRtpSender.getCapabilities("video").codecs if c.mimeType == MIME[codec]]
    if codec == "h264":
        codecs = [c for c in codecs if "42e01f" in (c.parameters or {}).get("profile-level-id", "")][:1] or codecs[:1]
    return codecs


def codec_switch_spec(text):
    """--switch-codec-after SECONDS:CODEC -> (seconds, codec)."""
    seconds, _, codec = text.partition(":")
    if codec not in MIME:
        raise argparse.ArgumentTypeError(f"CODEC must be one of {', '.join(sorted(MIME))}")
    try:
        return float(seconds), codec
    except ValueError:
        raise argparse.ArgumentTypeError("SECONDS must be a number") from None


def burst_spec(text):
    average, _, length = text.partition(":")
    try:
        share, burst = float(average) / 100, float(length or 4)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected PERCENT:BURST, e.g. 15:4")
    if not 0 <= share < 1 or burst < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: PERCENT must be 0..99 and BURST at least 1")
    return share, burst


def sora_id():
    return "".join(random.choice(CROCKFORD) for _ in range(26))


def sdp_sections(text):
    """An SDP's session lines and its media sections, each a list of lines (m= line first)."""
    session, sections = [], []
    for line in text.splitlines():
        if line.startswith("m="):
            sections.append([line])
        elif line:
            (sections[-1] if sections else session).append(line)
    return session, sections


def section_mid(section):
    return next((line[len("a=mid:"):] for line in section if line.startswith("a=mid:")), None)


def fill_in_rejected_sections(offer, answer):
    """The answer with every audio or video section it rejected (port 0) filled in as an inactive
    section aiortc accepts, and the mids and kinds of those sections.

    A rejected section may carry nothing but its m= line, a mid and a direction (RFC 3264 section 6,
    RFC 8829; recbot sends `a=mid` and `a=inactive`), while aiortc ignores the port but wants ICE
    credentials, a DTLS role, rtcp-mux and a codec it knows in every section, and fails the whole
    answer otherwise (and would send on a port-0 section that said recvonly). So the
    section gets the offer's codecs for it and the transport attributes of the answer's BUNDLE
    transport (every section shares that transport: the server bundles everything), and says
    inactive: aiortc then never starts its sender, and leaves the rest of the session as it was.
    """
    _, offered = sdp_sections(offer)
    session, sections = sdp_sections(answer)
    bundle = next((line.split()[1:] for line in session if line.startswith("a=group:BUNDLE ")), [])
    transport_section = next((section for section in sections if section_mid(section) in bundle[:1]), None) \
        or next((section for section in sections if section[0].split()[1] != "0"), [])
    transport = [line for line in transport_section
                 if line.split(":", 1)[0] in ("a=ice-ufrag", "a=ice-pwd", "a=ice-options", "a=fingerprint", "a=setup")]
    rejected = []
    for index, section in enumerate(sections):
        kind, port, proto = section[0][2:].split()[:3]
        if kind not in ("audio", "video") or port != "0":
            continue
        mid = section_mid(section)
        offer_section = next((o for o in offered if mid is not None and section_mid(o) == mid), None) \
            or (offered[index] if index < len(offered) else None)
        if offer_section is None:
            continue
        mid = mid if mid is not None else section_mid(offer_section)
        formats = offer_section[0].split()[3:]
        codec_lines = [line for line in offer_section
                       if line.split(":", 1)[0] in ("a=rtpmap", "a=fmtp", "a=rtcp-fb")
                       and line.split(":", 1)[1].split(" ", 1)[0] in formats]
        sections[index] = [f"m={kind} 9 {proto} {' '.join(formats)}", "c=IN IP4 0.0.0.0", f"a=mid:{mid}",
                           "a=inactive", "a=rtcp-mux", *transport, *codec_lines]
        rejected.append((mid, kind))
    text = "\r\n".join(session + [line for section in sections for line in section]) + "\r\n"
    return text, rejected


class Publisher:
    def __init__(self, codec, index, rtx=True, resize_after=0, switch=None, clock=None, audio=True, speaking=False):
        self.codec = codec
        self.sends_audio = audio
        self.index = index
        self.rtx = rtx
        self.connection_id = sora_id()
        self.client_id = f"publisher-{index}"
        # One epoch for both tracks: the once-a-second A/V sync markers leave at the same instant.
        self.clock = clock or MediaClock()
        self.video = PatternVideo(width=320, height=240, fps=30, clock=self.clock)
        if resize_after:
            self.video.resize_at(resize_after, *RESIZED)
        self.audio = ToneAudio(clock=self.clock, speaking=speaking)
        self.video_frames_sent = 0
        self.video_frames_sent_by_codec = collections.Counter()
        self.video_keyframes_sent = 0
        # --switch-codec-after: the codec to switch to and the index of the first video frame to
        # encode with it (None once the switch was made or given up); `codec_switch` says, once it
        # happened, after how many frames and to what.
        self.switch_to, self.switch_at_frame = (switch[1], math.ceil(switch[0] * self.video.fps)) if switch else (None, None)
        self.codec_switch = None
        self.rejected = set()  # kinds whose section an answer rejected (port 0)
        self.senders = {}
        self.joined_at = None
        self.left_at = None

    def attach(self, pc, rejoin=False):
        """Adds the publisher's tracks to `pc`. On a rejoin (a client's next connection) the
        tracks go on from the present: what was due while nobody received is not sent."""
        if rejoin:
            self.video.skip_to_now()
            self.audio.skip_to_now()
        for kind, track in (("video", self.video), ("audio", self.audio)):
            if kind == "audio" and not self.sends_audio:
                continue
            transceiver = pc.addTransceiver(track, direction="sendonly")
            if kind == "video":
                # The codec to switch to comes second: aiortc keeps this order in what it
                # negotiates, so its own codec is the one it starts sending whatever the answer's order.
                codecs = video_capabilities(self.codec) + (video_capabilities(self.switch_to) if self.switch_to else [])
            else:
                codecs = [c for c in RTCRtpSender.getCapabilities(kind).codecs if c.mimeType == "audio/opus"]
            if kind == "video" and self.rtx:
                # aiortc pairs the rtx capability with each chosen codec (apt) and announces the FID group.
                codecs += [c for c in RTCRtpSender.getCapabilities(kind).codecs if c.mimeType == "video/rtx"]
            transceiver.setCodecPreferences(codecs)
            # Sora's convention: the msid stream id is the publisher's connection id.
            transceiver.sender._stream_id = self.connection_id
            self.senders[kind] = transceiver.sender
            if kind == "video" and self.switch_to:
                self.prepare_codec_switch(transceiver)
        self.count_video_frames(self.senders["video"])

    def count_video_frames(self, sender):
        """Counts the frames, and keyframes, the sender's encoder hands to RTP: what was sent, even
        where an encoder held a frame back or the track made one the sender never took."""
        next_encoded_frame = sender._next_encoded_frame

        async def counting_next_encoded_frame(codec):
            # Between two frames (the last encode is done, the next frame not yet taken from the
            # track, whose `index` is the one coming): where a codec switch takes effect.
            if self.switch_at_frame is not None and self.video.index >= self.switch_at_frame:
                self.switch_codec(sender, codec)
            frame = await next_encoded_frame(codec)
            if frame is not None:
                self.video_frames_sent += 1
                self.video_frames_sent_by_codec[codec.mimeType.split("/")[1].lower()] += 1
                self.video_keyframes_sent += video_codecs.is_keyframe(codec.mimeType, frame.payloads)
            return frame

        sender._next_encoded_frame = counting_next_encoded_frame

    # A send codec change without renegotiation, as a browser makes one after setParameters (or
    # setCodecPreferences) picks another of the codecs negotiated for the section. aiortc cannot:
    # its RTP loop (RTCRtpSender._run_rtp) takes the first negotiated codec as an argument once,
    # stamps every packet with `codec.payloadType` and makes its encoder from that codec when it
    # has none (`__encoder`, in _next_encoded_frame); the RTX payload type for NACKed packets is
    # the one whose apt was that codec (`__rtx_payload_type`, set once in send()). So:
    # - prepare_codec_switch gives the RTP loop a codec object of its own (a copy: the negotiated
    #   one is also what later offers are written from) and has every retransmission use the RTX
    #   payload type whose apt is the payload type of the packet being resent;
    # - switch_codec, between two frames, makes that object the new codec and drops the encoder:
    #   the next frame goes to a new encoder of the new codec (its first frame a keyframe, forced
    #   as well) and out with the new payload type, on the same SSRC, with the sequence numbers and
    #   the RTP timestamps (from the frames' pts) going on as before.

    def prepare_codec_switch(self, transceiver):
        self.video_transceiver = transceiver
        sender = transceiver.sender
        run_rtp, retransmit = sender._run_rtp, sender._retransmit

        def run_rtp_with_own_codec(codec):
            self.sending_codec = copy.deepcopy(codec)
            return run_rtp(self.sending_codec)

        async def retransmit_with_matching_rtx(sequence_number):
            # Before a switch, and for packets of the new codec after it, this is what aiortc picks
            # anyway; a NACK for a packet of the old codec after the switch gets the old codec's RTX.
            # A codec the answer kept no RTX for: its packets are resent as they were, on the media
            # SSRC (what aiortc does without RTX). No RTX at all: nothing changes.
            rtx = {c.parameters.get("apt"): c.payloadType for c in transceiver._codecs if is_rtx(c)}
            packet = sender._RTCRtpSender__rtp_history.get(sequence_number % RTP_HISTORY_SIZE)
            if rtx and packet is not None:
                sender._RTCRtpSender__rtx_payload_type = rtx.get(packet.payload_type)
            await retransmit(sequence_number)  # which reads __rtx_payload_type before its first await
            if rtx:
                sender._RTCRtpSender__rtx_payload_type = rtx.get(self.sending_codec.payloadType)

        sender._run_rtp = run_rtp_with_own_codec
        sender._retransmit = retransmit_with_matching_rtx

    def switch_codec(self, sender, codec):
        """Makes the RTP loop's codec (`codec`, its own copy) `switch_to`, once. When the answer did
        not keep that codec the publisher goes on with its own and `codec_switch` stays None."""
        self.switch_at_frame, to = None, self.switch_to
        negotiated = self.video_transceiver._codecs  # what the (last) answer kept, in preference order
        target = next((c for c in negotiated if c.mimeType.lower() == MIME[to].lower()), None)
        if target is None:
            print(f"publisher {self.index}: the answer did not keep {to}, no codec switch", file=sys.stderr)
            return
        rtx = {c.parameters.get("apt"): c.payloadType for c in negotiated if is_rtx(c)}
        self.codec_switch = {"after_frames": self.video_frames_sent, "at_frame_index": self.video.index, "to": to,
                             "from": codec.mimeType.split("/")[1].lower(), "from_payload_type": codec.payloadType,
                             "payload_type": target.payloadType, "rtx_payload_type": rtx.get(target.payloadType)}
        codec.mimeType, codec.payloadType = target.mimeType, target.payloadType
        codec.parameters, codec.rtcpFeedback = dict(target.parameters), list(target.rtcpFeedback)
        sender._RTCRtpSender__encoder = None
        sender._RTCRtpSender__force_keyframe = True
        if rtx:
            sender._RTCRtpSender__rtx_payload_type = rtx.get(target.payloadType)

    def notify(self, event_type, channel_id, counts):
        return {
            "type": "notify", "event_type": event_type, "role": "sendonly", "channel_id": channel_id,
            "connection_id": self.connection_id, "client_id": self.client_id, "bundle_id": self.connection_id,
            "audio": self.sends_audio, "video": True, "metadata": {"publisher": self.client_id, "codec": self.codec},
            "authn_metadata": None, "authz_metadata": {"room": "test"}, "minutes": 0,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), **counts,
        }


class RtpImpairment:
    """Loss and audio delay for the publishers' outgoing RTP, and a count of what the wire and the
    feedback saw, per publisher and kind.

    aiortc's senders hand every RTP and RTCP packet to RTCDtlsTransport._send_rtp (SRTP, then ICE);
    that method is replaced on the peer connection's transport, so only the publishers' RTP is
    touched: RTCP (second byte 192..223) and SSRCs that are not a publisher's pass through, and
    DTLS, STUN and SCTP never come this way. Each stream (a sender's SSRC, or its RTX SSRC) draws its
    drops from its own random.Random seeded from (--loss-seed, publisher index, kind, media|rtx),
    so the nth packet of a stream meets the same fate on every run.

    Delayed audio is queued and sent later by a task, in order; the hook returns at once, so aiortc
    stamps the NTP time of its next SR (taken right after `await _send_rtp`) at the undelayed
    instant and the SRs keep mapping RTP time to when the packet left the sender.
    """

    def __init__(self, loss_percent=0.0, seed=1, delay_audio_ms=0.0, burst=None, jitter_ms=0.0):
        self.loss = max(0.0, min(100.0, loss_percent)) / 100
        self.seed = seed
        self.delay = max(0.0, delay_audio_ms) / 1000
        self.jitter = max(0.0, jitter_ms) / 1000
        # Gilbert-Elliott: from good to bad with p, back with r; bursts last 1/r packets on
        # average and the long-run loss is p / (p + r).
        self.burst = None
        if burst:
            average, length = burst
            r = 1.0 / max(1.0, length)
            self.burst = (average * r / max(1e-9, 1.0 - average), r)
        self.bad = set()  # paths (transports) in the bad state
        self.streams = {}  # ssrc -> (stats, rng, kind, is_rtx)
        self.stats = {}  # (publisher index, kind) -> stats
        self.hooked = set()

    @staticmethod
    def empty_stats():
        return {"ssrc": None, "rtx_ssrc": None, "rtx_payload_type": None,
                "packets_attempted": 0, "packets_dropped": 0, "rtx_packets_attempted": 0, "rtx_packets_dropped": 0,
                "packets_delayed": 0, "retransmissions_sent": 0, "retransmissions_missed": 0,
                "nack_received": 0, "nack_seqs_received": 0, "pli_received": 0, "fir_received": 0, "remb_received": 0,
                "rr_received": 0, "report_blocks_received": 0, "last_report": None}

    def stats_for(self, publisher, kind):
        return self.stats.setdefault((publisher.index, kind), self.empty_stats())

    def watch(self, publisher):
        """After Publisher.attach: learn its SSRCs and hook its senders and their transport."""
        for kind, sender in publisher.senders.items():
            stats = self.stats_for(publisher, kind)
            stats["ssrc"] = sender._ssrc
            self.streams[sender._ssrc] = (stats, random.Random(f"{self.seed}:{publisher.index}:{kind}:media"), kind, False)
            if kind == "video" and publisher.rtx:
                stats["rtx_ssrc"] = sender._rtx_ssrc
                self.streams[sender._rtx_ssrc] = (stats, random.Random(f"{self.seed}:{publisher.index}:{kind}:rtx"), kind, True)
            self.hook_sender(sender, stats)
            self.hook_transport(sender.transport)

    def hook_pc(self, pc):
        """After a (re)negotiation: makes sure the transport every sender ends up on is hooked."""
        for transceiver in pc.getTransceivers():
            self.hook_transport(transceiver.sender.transport)

    def hook_sender(self, sender, stats):
        history = sender._RTCRtpSender__rtp_history
        handle_rtcp_packet = sender._handle_rtcp_packet
        retransmit = sender._retransmit

        async def counting_handle_rtcp_packet(packet):
            if isinstance(packet, RtcpRtpfbPacket) and packet.fmt == 1:
                stats["nack_received"] += 1
                stats["nack_seqs_received"] += len(packet.lost)
            elif isinstance(packet, RtcpPsfbPacket) and packet.fmt == 1:
                stats["pli_received"] += 1
            elif isinstance(packet, RtcpPsfbPacket) and packet.fmt == 4:
                stats["fir_received"] += 1
            elif isinstance(packet, RtcpPsfbPacket) and packet.fmt == 15:
                stats["remb_received"] += 1
            if isinstance(packet, (RtcpRrPacket, RtcpSrPacket)):
                blocks = [report for report in packet.reports if report.ssrc == sender._ssrc]
                if isinstance(packet, RtcpRrPacket) and blocks:
                    stats["rr_received"] += 1
                stats["report_blocks_received"] += len(blocks)
                if blocks:
                    last = blocks[-1]
                    stats["last_report"] = {"fraction_lost": last.fraction_lost, "packets_lost": last.packets_lost,
                                            "jitter": last.jitter, "highest_sequence": last.highest_sequence}
            await handle_rtcp_packet(packet)

        async def counting_retransmit(sequence_number):
            # What aiortc's _retransmit looks up: only the last RTP_HISTORY_SIZE packets can be resent.
            packet = history.get(sequence_number % RTP_HISTORY_SIZE)
            if packet is not None and packet.sequence_number == sequence_number:
                stats["retransmissions_sent"] += 1
            else:
                stats["retransmissions_missed"] += 1
            await retransmit(sequence_number)

        sender._handle_rtcp_packet = counting_handle_rtcp_packet
        sender._retransmit = counting_retransmit

    def drops(self, path, rng):
        if self.burst:
            p, r = self.burst
            if path in self.bad:
                if rng.random() < r:
                    self.bad.discard(path)
            elif rng.random() < p:
                self.bad.add(path)
            return path in self.bad
        return bool(self.loss) and rng.random() < self.loss

    def hook_transport(self, transport):
        if id(transport) in self.hooked:
            return
        self.hooked.add(id(transport))
        send_rtp = transport._send_rtp
        loop = asyncio.get_running_loop()
        pending = collections.deque()
        drainer = None

        async def drain():
            while pending:
                due, data = pending[0]
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                pending.popleft()
                try:
                    await send_rtp(data)
                except ConnectionError:
                    pass

        async def send_quietly(data):
            try:
                await send_rtp(data)
            except ConnectionError:
                pass

        async def impaired_send_rtp(data):
            nonlocal drainer
            if len(data) < 12 or 192 <= data[1] <= 223 or transport.state != "connected":
                return await send_rtp(data)  # RTCP, or not connected (aiortc's own ConnectionError)
            stream = self.streams.get(int.from_bytes(data[8:12], "big"))
            if stream is None:
                return await send_rtp(data)
            stats, rng, kind, is_rtx = stream
            stats["packets_attempted"] += 1
            if is_rtx:
                stats["rtx_packets_attempted"] += 1
            if self.drops(id(transport), rng):
                stats["packets_dropped"] += 1
                if is_rtx:
                    stats["rtx_packets_dropped"] += 1
                return None
            if self.jitter:
                # Each packet on its own timer: later ones may overtake it (reordering).
                wait = (self.delay if kind == "audio" else 0.0) + rng.random() * self.jitter
                stats["packets_delayed"] += 1
                loop.call_later(wait, lambda: asyncio.ensure_future(send_quietly(data)))
                return None
            if kind == "audio" and self.delay:
                stats["packets_delayed"] += 1
                pending.append((loop.time() + self.delay, data))
                if drainer is None or drainer.done():
                    drainer = loop.create_task(drain())
                return None
            return await send_rtp(data)

        transport._send_rtp = impaired_send_rtp


FAULT_KINDS = ("ws-abort", "ws-silence", "dc-close", "consent-stop", "restart")


def fault_spec(text):
    """KIND@SECONDS[:DURATION], e.g. ws-abort@15 or restart@20:5."""
    kind, _, when = text.partition("@")
    at, _, duration = when.partition(":")
    if kind not in FAULT_KINDS:
        raise argparse.ArgumentTypeError(f"{text!r}: KIND must be one of {', '.join(FAULT_KINDS)}")
    try:
        spec = {"kind": kind, "at": float(at), "seconds": float(duration) if duration else 0.0}
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected KIND@SECONDS[:DURATION]") from None
    if kind == "restart" and spec["seconds"] <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: restart needs :DURATION, how long the server is away")
    return spec


class Channel:
    """What outlives one client connection: the publishers and their media, the impairments, the
    faults still to come and the truth. A recvonly client that joins again after a fault (or
    after its own network failed, with --serve-rejoins) meets the same publishers, with the same
    connection ids, their media going on from the present."""

    def __init__(self, args):
        self.args = args
        self.truth = {"messages_sent": [], "publishers": [], "pings_sent": 0, "pongs_received": 0, "candidates_received": 0,
                      "connections": [], "faults": []}
        shared = MediaClock() if args.shared_clock else None
        self.publishers = [Publisher(codec, index, rtx=not args.no_rtx, resize_after=args.resolution_change_after or args.layer_switch_after,
                                     switch=args.switch_codec_after if index == 0 else None, clock=shared, audio=not args.video_only,
                                     speaking=index == args.speaking_publisher)
                           for index, codec in enumerate(args.publisher)]
        self.impairment = RtpImpairment(args.loss, args.loss_seed, args.delay_audio_ms, burst=args.burst_loss, jitter_ms=args.jitter_ms)
        self.truth["impairment"] = {"loss_percent": args.loss, "loss_seed": args.loss_seed,
                                    "delay_audio_ms": args.delay_audio_ms, "rtx_offered": not args.no_rtx,
                                    "burst_loss": list(args.burst_loss) if args.burst_loss else None, "jitter_ms": args.jitter_ms}
        if args.first_publisher_id is not None and self.publishers:
            self.publishers[0].connection_id = args.first_publisher_id
        self.hostile = None
        if args.hostile:
            target = self.publishers[args.hostile_publisher if args.hostile_publisher is not None else -1]
            self.hostile = HostileTraffic(args.hostile, target, seed=args.loss_seed, after=args.hostile_after,
                                          seconds=args.hostile_seconds, flood_rate=args.flood_rate)
        self.faults = sorted((dict(f) for f in args.fault), key=lambda f: f["at"])
        # A client's connection that drops without `disconnect` may come back: keep serving.
        self.serves_rejoins = args.serve_rejoins or bool(self.faults) or args.channel_outlives_clients
        self.started = None  # when the first session was set up (faults are timed from it)
        self.current = None  # the session being served; a newer one supersedes it
        self.restart = None  # set to the seconds a `restart` fault keeps the server away
        self.restart_requested = asyncio.Event()
        self.packets_sent = collections.Counter()  # (publisher index, kind) -> packets, summed over connections

    def due_fault(self, session_age):
        # A fault waits until the connection it breaks has been up for a second (it records first).
        if self.started is None or not self.faults or time.monotonic() - self.started < self.faults[0]["at"] or session_age < 1.0:
            return None
        fault = self.faults.pop(0)
        self.truth["faults"].append({**fault, "fired_after": round(time.monotonic() - self.started, 3), "fired_at_unix": time.time(),
                                     "bot_connection_id": self.truth.get("bot_connection_id")})
        return fault

    def publishers_truth(self):
        entries = []
        for publisher in self.publishers:
            entry = {"connection_id": publisher.connection_id, "client_id": publisher.client_id, "codec": publisher.codec,
                     "video_frames_sent": publisher.video_frames_sent, "video_keyframes_sent": publisher.video_keyframes_sent,
                     "video_frames_sent_by_codec": dict(publisher.video_frames_sent_by_codec),
                     "codec_switch": publisher.codec_switch,
                     "video_sizes_sent": publisher.video.sizes, "audio_frames_sent": publisher.audio.index,
                     "rejected": sorted(publisher.rejected),
                     "hostile": bool(self.hostile and self.hostile.publisher is publisher),
                     "on_air_seconds": (publisher.left_at - publisher.joined_at) if publisher.joined_at and publisher.left_at else 0}
            for kind in publisher.senders:
                entry[f"{kind}_packets_sent"] = self.packets_sent[(publisher.index, kind)]
            # What the wire and the feedback saw, per kind (see RtpImpairment).
            entry["rtp"] = {kind: self.impairment.stats_for(publisher, kind) for kind in ("video", "audio")}
            for kind, sender in publisher.senders.items():
                # Set by aiortc only when the answer kept an rtx codec whose apt is the sending codec
                # (after a codec switch: the new codec's, see Publisher.switch_codec).
                entry["rtp"][kind]["rtx_payload_type"] = sender._RTCRtpSender__rtx_payload_type
            entries.append(entry)
        return entries


class Session:
    def __init__(self, args, url, channel):
        self.args = args
        self.url = url
        self.channel = channel
        self.truth = channel.truth
        self.publishers = channel.publishers
        self.impairment = channel.impairment
        self.hostile = channel.hostile
        self.done = asyncio.Event()
        # Why this connection ended without ending the channel (a fault, or the client dropped
        # away with --serve-rejoins); None for an end that ends the channel.
        self.faulted = None
        self.silenced = False
        self.redirected = False

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
        if (args.redirect or args.redirect_to) and not connect.get("redirect"):
            self.truth["redirected"] = True
            self.redirected = True  # this connection only: the client comes back to where it was sent
            await self.send(ws, {"type": "redirect", "location": args.redirect_to or self.url})
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

        @pc.on("iceconnectionstatechange")
        def note_selected_pair():
            if pc.iceConnectionState == "completed" and "ice_selected_remote" not in self.truth:
                self.truth["ice_selected_remote"] = selected_remote(pc)
        self.rejoin = any(p.joined_at is not None for p in self.publishers)
        present = ([p for p in self.publishers if p.joined_at is not None and p.left_at is None] if self.rejoin
                   else self.publishers[: len(self.publishers) - args.late_publishers])
        for publisher in present:
            publisher.attach(pc, rejoin=self.rejoin)
            self.impairment.watch(publisher)
        self.pc = pc
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
            for spec in args.offer_channel + (["rpc"] if args.rpc else []):
                label, *flags = spec.split(":")
                self.channel_settings.append({"label": label, "direction": "recvonly", "compress": "compress" in flags,
                                              **({"ordered": False, "max_retransmits": 0} if "unordered" in flags else {})})
            if self.hostile and "datachannel-flood" in self.hostile.kinds \
                    and not any(s["label"].startswith("#") for s in self.channel_settings):
                self.channel_settings.append({"label": "#flood", "direction": "recvonly", "compress": False})
            for setting in self.channel_settings:
                data_channel = pc.createDataChannel(setting["label"], ordered=setting.get("ordered", True),
                                                    maxRetransmits=setting.get("max_retransmits"))
                self.channels[setting["label"]] = data_channel
                data_channel.on("message", lambda message, label=setting["label"]: self.on_channel_message(label, message))
        session_id, bot_id = self.truth.get("session_id") or sora_id(), sora_id()
        self.truth.update({"channel_id": channel, "session_id": session_id, "bot_connection_id": bot_id})
        self.connection_truth = {"bot_connection_id": bot_id, "rejoin": self.rejoin, "offered_at": time.monotonic()}
        self.truth["connections"].append(self.connection_truth)
        await pc.setLocalDescription(await pc.createOffer())
        await self.send(ws, {
            "type": "offer", "sdp": self.offer_text(pc), "connection_id": bot_id, "client_id": connect.get("client_id", bot_id),
            "bundle_id": bot_id, "session_id": session_id, "channel_id": channel, "simulcast": False, "spotlight": False,
            "version": "recbot-test-server",
            "config": {"iceServers": json.loads(args.ice_servers_json), "iceTransportPolicy": args.ice_transport_policy},
            **({"data_channel_signaling": True, "ignore_disconnect_websocket": bool(connect.get("ignore_disconnect_websocket")),
                "data_channels": self.channel_settings} if dc_signaling else {}),
            **({"rpc_methods": ["2025.2.0/RequestSimulcastRid", "2025.2.0/RequestSpotlightRid", "2025.2.0/ResetSpotlightRid"]}
               if args.rpc and dc_signaling else {}),
        })
        answer = await self.next_of(ws, "answer")
        self.truth["answer_received"] = True
        await self.apply_answer(pc, answer["sdp"])
        self.impairment.hook_pc(pc)
        if self.hostile:
            self.hostile.hook_pc(pc)
        reader = asyncio.create_task(self.read(ws, pc))

        now = time.monotonic()
        for publisher in present:
            publisher.joined_at = publisher.joined_at or now
        previous, self.channel.current = self.channel.current, self
        if previous is not None:
            previous.faulted = previous.faulted or "superseded"
        self.channel.started = self.channel.started or now
        await self.send(ws, {"type": "notify", "event_type": "connection.created", "role": "recvonly", "connection_id": bot_id,
                             "client_id": connect.get("client_id", bot_id), "channel_id": channel, "session_id": session_id,
                             "data": [p.notify("connection.created", channel, {})
                                      for p in self.publishers if p.joined_at is not None], **self.counts()}, record=True)
        if not self.rejoin:  # Sora tells a new connection of the others once, in its own notify's data
            for publisher in self.publishers:
                if publisher.joined_at is not None:
                    await self.send(ws, publisher.notify("connection.created", channel, self.counts()), record=True)

        if dc_signaling:
            await self.switch_to_data_channels(ws, channel, bool(connect.get("ignore_disconnect_websocket")))
        if args.layer_switch_after and not self.rejoin:
            # The publishers' clocks started when they joined: the switch notify goes with their resize.
            delay = max(0.0, args.layer_switch_after - (time.monotonic() - min(p.joined_at for p in present)))
            asyncio.get_running_loop().call_later(delay, lambda: asyncio.ensure_future(self.send_layer_switched(ws, channel)))
        if self.hostile and not self.rejoin:
            self.hostile.start(pc, self.channels, self.channel_settings)

        started = time.monotonic()
        late_added = False
        left = False
        push_sent = False
        next_ping = started + args.ping_interval
        while not self.done.is_set():
            elapsed = time.monotonic() - started
            if self.faulted:  # superseded by the client's next connection
                break
            fault = self.channel.due_fault(elapsed)
            if fault and await self.apply_fault(fault, ws, pc):
                break
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
            if self.silenced:  # a dead connection: nothing more goes out on it
                await asyncio.sleep(0.05)
                continue
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

        if self.faulted is None and self.channel.serves_rejoins and "end" not in self.truth:
            self.faulted = "client-dropped"  # its network may come back: the channel goes on
        self.connection_truth["ended"] = self.faulted or self.truth.get("end")
        self.connection_truth["on_air_seconds"] = round(time.monotonic() - self.connection_truth["offered_at"], 3)
        if self.faulted:
            await self.close_connection(pc)
            reader.cancel()
            return
        for publisher in self.publishers:
            if publisher.joined_at is not None and publisher.left_at is None:
                publisher.left_at = time.monotonic()
        await self.finish(pc)
        reader.cancel()

    def leaves_for_good(self, disconnect):
        """A client that says goodbye after a failure (`INTERNAL-ERROR`) may join again: with
        rejoins served, only a clean `disconnect` ends the channel; with --channel-outlives-clients
        not even that (as in Sora, where the publishers keep the channel alive)."""
        goodbye_ends = disconnect.get("reason") == "NO-ERROR" and not self.channel.args.channel_outlives_clients
        if self.channel.serves_rejoins and not goodbye_ends:
            self.faulted = self.faulted or f"client-disconnect: {disconnect.get('reason')}"
            self.done.set()
            return False
        return True

    async def apply_fault(self, fault, ws, pc):
        """Breaks this connection as `fault` says; True when the session loop should stop now."""
        kind = fault["kind"]
        print(f"fault: {kind} after {fault['at']} s", file=sys.stderr)
        if kind == "ws-abort":  # the TCP connection goes without a close frame
            self.faulted = kind
            ws.transport.abort()
            return True
        if kind == "restart":  # the whole server goes away for a while (see main)
            self.faulted = kind
            self.channel.restart = fault["seconds"]
            self.channel.restart_requested.set()
            ws.transport.abort()
            return True
        if kind == "ws-silence":  # the WebSocket stays open but nothing comes back (no pong, no ping)
            self.silenced = True
            ws.transport.pause_reading()
        elif kind == "dc-close":  # the signaling data channel closes without Sora's `close`
            channel = getattr(self, "channels", {}).get("signaling")
            if channel is not None:
                channel.close()
        elif kind == "consent-stop":  # ICE consent requests from the client go unanswered
            for transceiver in pc.getTransceivers():
                connection = transceiver.sender.transport.transport._connection
                connection.request_received = lambda *arguments: None
        # The connection lives on (media still flows) until the client's next one supersedes it.
        return False

    async def count_packets_sent(self, pc):
        """Adds what this connection's senders sent to the channel's per-publisher totals."""
        stats = {}
        for report in (await pc.getStats()).values():
            if report.type == "outbound-rtp":
                stats[report.ssrc] = report.packetsSent
        senders = [t.sender for t in pc.getTransceivers()]
        for publisher in self.publishers:
            for kind, sender in publisher.senders.items():
                if sender in senders:
                    self.channel.packets_sent[(publisher.index, kind)] += stats.get(sender._ssrc, 0)

    async def close_connection(self, pc):
        """A connection that ended without ending the channel: its packet counts are kept, the
        publishers' tracks go on for the next connection."""
        await self.count_packets_sent(pc)
        await pc.close()

    def offer_text(self, pc):
        """The offer as sent: with --audio-nack, Opus also offers generic NACK (an SFU decides its
        own offer; aiortc's senders answer NACK for audio with a plain resend from their history)."""
        sdp = pc.localDescription.sdp
        if not self.args.audio_nack:
            return sdp
        lines = []
        for line in sdp.split("\r\n"):
            lines.append(line)
            if line.startswith("a=rtpmap:") and " opus/48000" in line:
                lines.append(f"a=rtcp-fb:{line[len('a=rtpmap:'):].split(' ')[0]} nack")
        return "\r\n".join(lines)

    async def apply_answer(self, pc, sdp):
        """Sets an (re-)answer, with the sections it rejected filled in as inactive (see
        fill_in_rejected_sections) and noted in the truth, each section once."""
        sdp, rejected = fill_in_rejected_sections(pc.localDescription.sdp, sdp)
        noted = self.truth.setdefault("rejected_sections", [])
        for mid, kind in rejected:
            transceiver = next((t for t in pc.getTransceivers() if t.mid == mid), None)
            publisher = next((p for p in self.publishers if transceiver and transceiver.sender in p.senders.values()), None)
            if publisher is not None:
                publisher.rejected.add(kind)
            if not any(entry["mid"] == mid for entry in noted):
                noted.append({"mid": mid, "kind": kind, "client_id": publisher.client_id if publisher else None,
                              "connection_id": publisher.connection_id if publisher else None,
                              "codec": (publisher.codec if kind == "video" else "opus") if publisher else None})
        await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="answer"))

    async def add_late(self, ws, pc, channel):
        late = [p for p in self.publishers if p.joined_at is None]
        for publisher in late:
            publisher.attach(pc)
            self.impairment.watch(publisher)
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
            if not self.leaves_for_good(parsed):
                return
            self.truth["end"] = "client-disconnect-over-datachannel"
            self.done.set()
        if label == "signaling" and parsed.get("type") == "re-answer":
            future = getattr(self, "pending_reanswer", None)
            if future and not future.done():
                future.set_result(parsed)
        if label == "stats" and parsed.get("type") == "stats":
            self.truth["stats_replies"] = self.truth.get("stats_replies", 0) + 1
        if label == "rpc" and parsed.get("jsonrpc") == "2.0":
            self.answer_rpc(label, parsed)

    async def send_layer_switched(self, ws, channel_id):
        for publisher in self.publishers:
            message = {"type": "notify", "event_type": "simulcast.switched", "channel_id": channel_id, "sender_connection_id": publisher.connection_id,
                       "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "priority": "higher", "trigger": "sender",
                       "request_rid": "r1", "current_rid": "r1", "previous_rid": "r0", "rpc_rids": [], "auto_rids": ["r0", "r1"]}
            self.truth.setdefault("layer_switches", []).append(message)
            if getattr(self, "switched", False) and "notify" in self.channels:
                self.channels["notify"].send(json.dumps(message))
            else:
                await self.send(ws, message)

    def answer_rpc(self, label, parsed):
        self.truth.setdefault("rpc_requests", []).append(parsed)
        if "id" not in parsed:
            return  # a notification: no reply
        params = parsed.get("params") or {}
        if parsed.get("method") == "2025.2.0/RequestSimulcastRid" and params.get("rid") in ("r0", "r1", "r2"):
            reply = {"jsonrpc": "2.0", "id": parsed["id"], "result": {"channel_id": self.truth.get("channel_id"), "rid": params["rid"],
                     "receiver_connection_id": self.truth.get("bot_connection_id"), "sender_connection_id": params.get("sender_connection_id")}}
        elif parsed.get("method") == "2025.2.0/RequestSpotlightRid":
            reply = {"jsonrpc": "2.0", "id": parsed["id"], "result": {"channel_id": self.truth.get("channel_id")}}
        else:
            reply = {"jsonrpc": "2.0", "id": parsed["id"], "error": {"code": -32602, "message": "Invalid params"}}
        self.channels[label].send(json.dumps(reply))

    def send_late_chat(self, sender):
        for setting in self.channel_settings:
            channel = self.channels.get(setting["label"])
            if not setting["label"].startswith("#") or channel is None or channel.readyState != "open":
                continue
            payload = f"late message on {setting['label']} <b>&"
            body = (sender if setting.get("header") else "").encode() + payload.encode()
            channel.send(zlib.compress(body) if setting["compress"] else body.decode())
            self.truth.setdefault("late_chat", []).append({"label": setting["label"], "payload": payload, "sent_at_ms": int(time.time() * 1000)})

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
        if self.args.late_chat > 0:
            asyncio.get_running_loop().call_later(self.args.late_chat, self.send_late_chat, sender)
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
        message = {"type": "re-offer", "sdp": self.offer_text(pc)}
        if getattr(self, "switched", False):
            # After the switch, signaling travels on the signaling data channel.
            self.channels["signaling"].send(json.dumps(message))
            self.truth["re_offers_over_datachannel"] = self.truth.get("re_offers_over_datachannel", 0) + 1
        else:
            await self.send(ws, message)
        self.truth["re_offers_sent"] = self.truth.get("re_offers_sent", 0) + 1
        self.pending_reanswer = asyncio.get_running_loop().create_future()
        reanswer = await asyncio.wait_for(self.pending_reanswer, 10)
        await self.apply_answer(pc, reanswer["sdp"])
        self.impairment.hook_pc(pc)
        if self.hostile:
            self.hostile.hook_pc(pc)
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
                    if self.leaves_for_good(message):
                        self.truth["end"] = "client-disconnect"
                    break
        except Exception as error:  # noqa: BLE001
            self.truth.setdefault("read_errors", []).append(str(error))
        # After a switch with ignore_disconnect_websocket the session lives on the data channels.
        if not self.truth.get("websocket_closed_after_switch"):
            self.done.set()

    async def finish(self, pc):
        if self.hostile:
            await self.hostile.stop()
            self.truth["hostile"] = self.hostile.truth()
        for publisher in self.publishers:
            publisher.video.stop()
            publisher.audio.stop()
        await asyncio.sleep(0.2)
        await self.count_packets_sent(pc)
        self.truth["publishers"] = self.channel.publishers_truth()
        await pc.close()


def selected_remote(pc):
    """The remote address of the pair aioice nominated ("host:port"): a relayed address when
    recbot connected through TURN. Read from aioice's internals, as aiortc exposes no stats for it."""
    try:
        transceivers = pc.getTransceivers()
        dtls = transceivers[0].receiver.transport if transceivers else pc.sctp.transport
        pair = dtls.transport._connection._nominated.get(1)
        return f"{pair.remote_candidate.host}:{pair.remote_candidate.port}" if pair else None
    except Exception:  # noqa: BLE001
        return None


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
    # A parent may start this from a thread that blocks signals (libdispatch's workers block
    # them all), and the mask is inherited: without this, SIGTERM would never end the server.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--listen-host", default="127.0.0.1",
                        help="signaling address, also offered as a media candidate: e.g. a veth address a client in another network namespace reaches")
    parser.add_argument("--publisher", action="append", choices=sorted(MIME), default=None,
                        help="a synthetic publisher with this video codec (plus Opus); repeatable")
    parser.add_argument("--late-publishers", type=int, default=0, help="how many of the publishers join later (re-offer)")
    parser.add_argument("--late-after", type=float, default=3.0)
    parser.add_argument("--leave-after", type=float, default=0, help="the first publisher leaves after this many seconds (re-offer)")
    parser.add_argument("--ping-interval", type=float, default=2.0)
    parser.add_argument("--reject", action="store_true", help="close 4490 after connect, like an auth rejection")
    parser.add_argument("--redirect", action="store_true", help="answer the first connect with redirect to itself")
    parser.add_argument("--redirect-to", metavar="URL", help="answer the first connect with redirect to this URL (e.g. a ws:// one from --tls)")
    parser.add_argument("--abrupt-close-after", type=float, default=0)
    parser.add_argument("--end-after", type=float, default=0,
                        help="end the session from the server side: WebSocket close 1000, or after a switch that dropped "
                             "the WebSocket, a `close` message on the signaling channel and then the channels closed")
    parser.add_argument("--offer-channel", action="append", default=[], metavar="LABEL[:compress][:unordered]",
                        help="with data_channel_signaling: also offer this channel though nobody asked for it "
                             "(unordered means ordered=false, max_retransmits=0)")
    parser.add_argument("--rpc", action="store_true",
                        help="with data_channel_signaling: offer the `rpc` channel and rpc_methods, and answer "
                             "RequestSimulcastRid / RequestSpotlightRid (the requests go in the truth file)")
    parser.add_argument("--layer-switch-after", type=float, default=0, metavar="SECONDS",
                        help="simulate Sora switching every sender's simulcast layer: the video goes to 480x272 on the "
                             "same SSRC (a keyframe first) and a simulcast.switched notify says r0 -> r1")
    parser.add_argument("--late-chat", type=float, default=0, metavar="SECONDS",
                        help="with data_channel_signaling: this long after the switch, one more text message on each "
                             "`#` channel (its send time in the truth file, for the caption timing test)")
    parser.add_argument("--end-without-close-message", action="store_true",
                        help="with --end-after after the switch: close the data channels without the `close` message")
    parser.add_argument("--silent", action="store_true", help="accept connect, then never send an offer")
    parser.add_argument("--bad-offer", action="store_true", help="send an offer whose SDP cannot be answered")
    parser.add_argument("--first-publisher-id", help="use this connection id (even a hostile one) for the first publisher")
    parser.add_argument("--tls", action="store_true", help="serve wss:// with a self-signed certificate")
    parser.add_argument("--ice-servers-json", default="[]", metavar="JSON",
                        help="the offer's config.iceServers (e.g. a TURN server with credentials)")
    parser.add_argument("--ice-transport-policy", default="all", choices=["all", "relay"], help="the offer's config.iceTransportPolicy")
    parser.add_argument("--fault", action="append", type=fault_spec, default=[], metavar="KIND@SECONDS[:DURATION]",
                        help="break the client's connection this long after the first one was set up: ws-abort (no close "
                             "frame), ws-silence (the WebSocket stays open, nothing comes back), dc-close (the signaling "
                             "channel closes without `close`), consent-stop (ICE consent goes unanswered), restart:N (the "
                             "server goes away for N s, then serves the same publishers again); repeatable")
    parser.add_argument("--serve-rejoins", action="store_true",
                        help="a client connection that drops without `disconnect` does not end the channel: serve its rejoin "
                             "(implied by --fault)")
    parser.add_argument("--channel-outlives-clients", action="store_true",
                        help="no client's end, not even a clean `disconnect`, ends the channel: the next client (another "
                             "recorder taking over, say) meets the same publishers; implies --serve-rejoins")
    parser.add_argument("--max-seconds", type=float, default=120)
    parser.add_argument("--webhook-url", action="append", default=[], metavar="URL",
                        help="send Sora's session webhooks here, as Sora does: session.created once listening, "
                             "session.destroyed after --lifetime; with several URLs they take turns (a load balancer)")
    parser.add_argument("--webhook-secret", default="", help="sent in the x-recbot-webhook-secret header")
    parser.add_argument("--channel-id", default="sora", help="the channel the session webhooks name")
    parser.add_argument("--lifetime", type=float, default=0, metavar="SECONDS",
                        help="with --webhook-url: the session ends (session.destroyed) this long after it was created, "
                             "and the server stops 4 s later")
    parser.add_argument("--truth", help="write the ground truth here when the session ends")
    parser.add_argument("--loss", type=float, default=0.0, metavar="PERCENT",
                        help="drop this share of the publishers' RTP packets (media and RTX, never RTCP), independently per packet")
    parser.add_argument("--loss-seed", type=int, default=1, help="seed for --loss: each stream's drop pattern is reproducible")
    parser.add_argument("--burst-loss", type=burst_spec, metavar="PERCENT:BURST",
                        help="Gilbert-Elliott loss: this average share, in bursts of about BURST packets")
    parser.add_argument("--jitter-ms", type=float, default=0.0, metavar="N", help="delay each media/RTX packet by a random 0..N ms")
    parser.add_argument("--shared-clock", action="store_true", help="all publishers capture on one clock (markers leave together)")
    parser.add_argument("--delay-audio-ms", type=int, default=0, metavar="N",
                        help="the publishers' audio RTP reaches the wire N ms late (RTCP and video are not delayed)")
    parser.add_argument("--audio-nack", action="store_true", help="offer generic NACK for Opus as well (aiortc resends audio plainly)")
    parser.add_argument("--no-rtx", action="store_true",
                        help="offer video without RTX: aiortc then answers NACKs by resending the packet on the media SSRC")
    parser.add_argument("--video-only", action="store_true", help="the publishers send video and no audio")
    parser.add_argument("--speaking-publisher", type=int, default=-1, metavar="N",
                        help="publisher N's steady tone is 20 dB louder than the others' (a speaker layout enlarges it)")
    parser.add_argument("--ignore-keyframe-requests", action="store_true",
                        help="VP9, AV1 and H.265 publishers answer no PLI or FIR: keyframes come only on --keyframe-interval")
    parser.add_argument("--keyframe-interval", type=float, default=2.0, metavar="SECONDS",
                        help="VP9, AV1 and H.265 publishers send a keyframe this often (besides those PLI or FIR ask for)")
    parser.add_argument("--resolution-change-after", type=float, default=0, metavar="SECONDS",
                        help=f"every publisher's video changes from 320x240 to {RESIZED[0]}x{RESIZED[1]} this far into its own timeline")
    parser.add_argument("--switch-codec-after", type=codec_switch_spec, metavar="SECONDS:CODEC",
                        help="the first publisher also offers CODEC in its video section and switches to it this far "
                             "into its own timeline, on the same SSRC and without renegotiating (e.g. 4:vp9)")
    parser.add_argument("--hostile", action="append", choices=HOSTILE_KINDS, default=[], metavar="KIND",
                        help=f"one publisher also sends hostile traffic ({', '.join(HOSTILE_KINDS)}); repeatable")
    parser.add_argument("--hostile-publisher", type=int, metavar="N",
                        help="which publisher (0-based) turns hostile (default: the last)")
    parser.add_argument("--hostile-after", type=float, default=1.0, metavar="SECONDS",
                        help="the hostile traffic starts this long after the session is set up (answer, data-channel switch)")
    parser.add_argument("--hostile-seconds", type=float, default=0.0, metavar="SECONDS",
                        help="and lasts this long (0: until the session ends)")
    parser.add_argument("--flood-rate", type=int, default=10000, metavar="N",
                        help="--hostile datachannel-flood: messages a second")
    args = parser.parse_args()
    args.publisher = args.publisher or ["vp8", "vp8"]
    if args.hostile_publisher is not None and not 0 <= args.hostile_publisher < len(args.publisher):
        parser.error("--hostile-publisher: no such publisher")
    if "sps" in args.hostile and args.publisher[args.hostile_publisher if args.hostile_publisher is not None else -1] != "h264":
        parser.error("--hostile sps: the hostile publisher must be an h264 one")
    if args.switch_codec_after and args.switch_codec_after[1] == args.publisher[0]:
        parser.error("--switch-codec-after: CODEC must differ from the first publisher's codec")
    if args.listen_host != "127.0.0.1":
        # The publishers' media is offered there too, so a client behind it has a direct path
        # (which a firewall may then block).
        aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1", args.listen_host]
    video_codecs.register(keyframe_interval=args.keyframe_interval, honour_requests=not args.ignore_keyframe_requests)

    finished = asyncio.Event()
    state = {}
    channel = Channel(args)

    async def handler(ws):
        session = Session(args, state["url"], channel)
        state.setdefault("sockets", set()).add(ws)
        try:
            await session.run(ws)
        except ConnectionClosed:
            # The WebSocket died under the session (its keepalive gave up during a long
            # outage): with rejoins served the client may come back, as after any drop.
            if channel.serves_rejoins and session.faulted is None and "end" not in session.truth:
                session.faulted = "client-dropped"
                if getattr(session, "pc", None) is not None:
                    await session.close_connection(session.pc)
            else:
                raise
        finally:
            state["sockets"].discard(ws)
            ends_channel = session.faulted is None and not session.redirected
            # With rejoins served, what is known so far is written at every connection's end, in
            # case the client never comes back (a kill, a test's end); `final` says which is which.
            session.truth["final"] = ends_channel
            if channel.serves_rejoins and not ends_channel and hasattr(session, "connection_truth"):
                session.truth["publishers"] = channel.publishers_truth()
            if ends_channel or (channel.serves_rejoins and hasattr(session, "connection_truth")):
                if args.truth:
                    # Atomically: the tests poll for the file and must never read it half written.
                    with open(args.truth + ".tmp", "w") as out:
                        json.dump(session.truth, out, ensure_ascii=False, indent=2)
                    os.replace(args.truth + ".tmp", args.truth)
                if ends_channel:
                    finished.set()

    ssl_context = self_signed_context() if args.tls else None

    def start_serving(port):
        return serve(handler, args.listen_host, port, max_size=4 << 20, ssl=ssl_context)

    server = await start_serving(args.port)
    port = server.sockets[0].getsockname()[1]
    state["url"] = f"{'wss' if args.tls else 'ws'}://{args.listen_host}:{port}/signaling"
    sys.stdout.write(json.dumps({"type": "listening", "url": state["url"]}) + "\n")
    sys.stdout.flush()
    deadline = time.monotonic() + args.max_seconds
    webhooks = SessionWebhooks(args) if args.webhook_url else None
    if webhooks:
        await webhooks.send("session.created")
        if args.lifetime > 0:
            deadline = min(deadline, time.monotonic() + args.lifetime)
    while not finished.is_set() and time.monotonic() < deadline:
        restart = asyncio.ensure_future(channel.restart_requested.wait())
        done = asyncio.ensure_future(finished.wait())
        await asyncio.wait([restart, done], timeout=max(0.0, deadline - time.monotonic()), return_when=asyncio.FIRST_COMPLETED)
        restart.cancel()
        done.cancel()
        if channel.restart_requested.is_set():
            # Gone: every connection dropped without a close frame, the port closed; then back.
            channel.restart_requested.clear()
            for ws in list(state.get("sockets", ())):
                ws.transport.abort()
            server.close(close_connections=False)
            await server.wait_closed()
            await asyncio.sleep(channel.restart)
            server = await start_serving(port)
    if webhooks:
        await webhooks.send("session.destroyed")
        await asyncio.sleep(4)  # the recorder leaves first, as from a Sora channel whose session ended
    server.close()
    await asyncio.sleep(0.2)


class SessionWebhooks:
    """Sora's session webhooks for this server's one session, each sent to the next URL in turn;
    every one is also printed on standard output (a JSON line with the Unix time it was sent)."""

    def __init__(self, args):
        self.args = args
        self.session_id = sora_id()
        self.sent = 0

    async def send(self, kind):
        """To the next URL in turn; one that cannot be reached (a worker gone) passes it on to the
        next, as a load balancer does."""
        urls = self.args.webhook_url
        first = self.sent % len(urls)
        self.sent += 1
        body = {"type": kind, "channel_id": self.args.channel_id, "session_id": self.session_id,
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        at = time.time()
        for turn in range(len(urls)):
            status = await asyncio.to_thread(self.post, urls[(first + turn) % len(urls)], json.dumps(body).encode())
            if isinstance(status, int):
                break
        sys.stdout.write(json.dumps({"type": "webhook", "event": kind, "session_id": self.session_id, "at": at, "status": status}) + "\n")
        sys.stdout.flush()

    def post(self, url, data):
        import urllib.error
        import urllib.request
        request = urllib.request.Request(url, data=data, method="POST", headers={
            "content-type": "application/json", "x-recbot-webhook-secret": self.args.webhook_secret})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code
        except OSError as error:
            return str(error)


if __name__ == "__main__":
    asyncio.run(main())
