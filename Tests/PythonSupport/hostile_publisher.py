"""Hostile traffic for sora_test_server.py (--hostile KIND, repeatable).

One publisher (the last one, or --hostile-publisher N) turns hostile while it goes on sending its
honest video and audio; every other publisher stays honest. KIND:

  sps                crafted H.264 SPS NAL units (with a PPS and an IDR slice, as one STAP-A or as
                     single NAL unit packets) on the publisher's own H.264 SSRC and payload type, a
                     few times per second, between its frames: scaling lists whose delta_scale is out
                     of range or makes next_scale overflow, Exp-Golomb codes of 32 bits and more,
                     absurd picture sizes and croppings, a huge POC cycle, truncated and garbage SPSs
                     (`crafted_sps_variants`). Needs an H.264 publisher.
  timestamp-jumps    the publisher's video RTP timestamps (and those of its RTX packets and sender
                     reports) jump by +2^31, -2^31, to just before the 32-bit wrap, +1 h, -1 h, ...
                     about once a second, always between two frames, while its frames stay valid.
  endless-frame      a frame that never ends: thousands of packets a second on one SSRC the offer
                     never named, all with one RTP timestamp and never a marker, carrying the MID
                     header extension and video payload type of the publisher's video section (so a
                     receiver that learns SSRCs by MID takes it as a stream of that section).
  ssrc-flood         RTP on thousands of random SSRCs nobody signaled (1,000 new SSRCs a second, three
                     packets each of random bytes): a third with a random payload type, a third with
                     a negotiated one, a third with a section's MID header extension and one of that
                     section's payload types.
  datachannel-flood  10,000 messages a second (--flood-rate) on the first messaging channel (`#...`)
                     of a data-channel-signaling session; without one the server offers `#flood`.

The RTP is built here (header, one-byte header extensions, payload) and handed to the bundled DTLS
transport's _send_rtp, where aiortc's own packets go to SRTP: it is encrypted like theirs and takes
the same path to the receiver. Packets on the publisher's own SSRC need sequence numbers of their
own (a receiver's SRTP replay window drops a repeated index), so with `sps` every packet on that
SSRC is renumbered on its way out: aiortc's packets and the injected ones share one contiguous
numbering, NACKs are translated back to aiortc's numbers (NACKs for injected packets are counted
and ignored) and RTX packets carry the renumbered original sequence number.

`truth()` says what was sent, per kind.
"""
import asyncio
import collections
import random
import struct
import time
import zlib

import google_crc32c

HOSTILE_KINDS = ("sps", "timestamp-jumps", "endless-frame", "ssrc-flood", "datachannel-flood")
MID_URI = "urn:ietf:params:rtp-hdrext:sdes:mid"

# --- H.264 bitstreams -------------------------------------------------------------------------


class BitWriter:
    """MSB-first bits with Exp-Golomb codes of any length (H.264 section 9.1)."""

    def __init__(self):
        self.bits = []

    def u(self, count, value):
        self.bits.extend((value >> shift) & 1 for shift in range(count - 1, -1, -1))
        return self

    def ue(self, value):
        code = value + 1
        return self.u(code.bit_length() - 1, 0).u(code.bit_length(), code)

    def raw_ue(self, zeros, rest=0):
        """An Exp-Golomb code with this many leading zeros, however long (decoders stop at 31)."""
        return self.u(zeros, 0).u(1, 1).u(zeros, rest)

    def se(self, value):
        return self.ue(2 * value - 1 if value > 0 else -2 * value)

    def code(self, value, signed=False):
        """ue(v) (or se(v)) of an int, or a raw code for a (leading zeros, rest) pair."""
        if isinstance(value, tuple):
            return self.raw_ue(*value)
        return self.se(value) if signed else self.ue(value)

    def trailing(self):
        self.u(1, 1)
        while len(self.bits) % 8:
            self.bits.append(0)
        return self

    def rbsp(self):
        self.trailing()
        return bytes(int("".join(map(str, self.bits[i:i + 8])), 2) for i in range(0, len(self.bits), 8))


def nal_unit(header, rbsp):
    """A NAL unit: its header byte and the RBSP with emulation prevention bytes (00 00 0x -> 00 00 03 0x)."""
    out, zeros = bytearray([header]), 0
    for byte in rbsp:
        if zeros >= 2 and byte <= 3:
            out.append(3)
            zeros = 0
        out.append(byte)
        zeros = zeros + 1 if byte == 0 else 0
    return bytes(out)


def sps_head(profile=100, sps_id=1, sps_id_code=None):
    bits = BitWriter().u(8, profile).u(8, 0).u(8, 31)
    if sps_id_code is not None:
        bits.raw_ue(*sps_id_code)
    else:
        bits.ue(sps_id)
    return bits


def sps_tail(bits, width_mbs=19, height_units=14, poc_type=0, crop=None):
    """log2_max_frame_num .. vui_parameters_present_flag, for a picture of width_mbs+1 x height_units+1 MBs."""
    bits.ue(0).ue(poc_type)
    if poc_type == 0:
        bits.ue(0)
    bits.ue(1).u(1, 0)
    bits.code(width_mbs).code(height_units)
    bits.u(1, 1).u(1, 1)  # frame_mbs_only, direct_8x8_inference
    if crop:
        bits.u(1, 1)
        for value in crop:
            bits.code(value)
    else:
        bits.u(1, 0)
    return bits.u(1, 0)  # no VUI


def high_profile_with_scaling(sps_id, deltas):
    """Profile 100 with seq_scaling_matrix_present_flag=1; list 0 carries `deltas` (each an int for se(v),
    or a (zeros, rest) pair for a raw over-long code), every other list is absent."""
    bits = sps_head(100, sps_id).ue(1)  # chroma_format_idc 4:2:0
    bits.ue(0).ue(0).u(1, 0).u(1, 1)  # bit depths, qpprime bypass, seq_scaling_matrix_present_flag
    for index in range(8):
        bits.u(1, 1 if index == 0 else 0)
        if index == 0:
            for delta in deltas:
                bits.code(delta, signed=True)
    return sps_tail(bits)


def crafted_sps_variants():
    """(name, seq_parameter_set_id, NAL unit): SPSs a careful reader refuses, or reads without
    overflowing. Every id is 1..8 (or unreadable), never the honest encoder's 0."""
    full = (1 << 31) - 1  # the largest 31-bit suffix: with 31 leading zeros, ue(v) = 2^32 - 2
    return [
        # delta_scale is -128..127; these are outside it and run next_scale far past 255
        ("scaling-delta-out-of-range", 1, sps(high_profile_with_scaling(1, [200, 1000, -5000, 128, -129, 1 << 20] + [0] * 10))),
        # +-(2^31-1), the largest se(v) there is (a 63-bit code): last + delta overflows int32
        ("scaling-delta-int32-overflow", 1, sps(high_profile_with_scaling(1, [full, -full] + [1] * 14))),
        # codes with 32 and 40 leading zeros: longer than any 32-bit value
        ("scaling-delta-32-zero-code", 1, sps(high_profile_with_scaling(1, [(32, 5), (40, 1)] + [1] * 14))),
        # ue(v) = 2^32 - 2 sixteen times: ue + 1 overflows uint32 when computed carelessly
        ("scaling-delta-ue-max", 1, sps(high_profile_with_scaling(1, [(31, full)] * 16))),
        # 4:4:4 with all twelve lists present, the 8x8 ones too, each delta at -128 or 127
        ("scaling-444-twelve-lists", 2, sps(sps_tail(all_lists_444(2)))),
        ("sps-id-32-zero-code", None, sps(sps_tail(sps_head(66, sps_id_code=(32, 7))))),
        ("huge-picture", 3, sps(sps_tail(sps_head(66, 3), width_mbs=(31, full), height_units=(31, full), crop=[(31, full)] * 4))),
        ("crop-past-picture", 4, sps(sps_tail(sps_head(66, 4), width_mbs=0, height_units=0, crop=[1 << 20, 1 << 20, (31, 0), (31, 0)]))),
        ("poc-cycle-huge", 5, sps(poc_cycle_huge(5))),
        ("chroma-format-huge", 6, sps(sps_tail(sps_head(100, 6).raw_ue(31, 12345).raw_ue(31, 7).raw_ue(31, 7).u(1, 0).u(1, 0)))),
        ("largest-valid-picture", 7, sps(sps_tail(sps_head(66, 7), width_mbs=1023, height_units=1023))),  # 16384x16384
        ("truncated", 8, nal_unit(0x67, sps_head(100, 8).ue(1).ue(0).ue(0).u(1, 0).u(1, 1).u(1, 1).rbsp()[:-1])),
        ("all-ones", None, bytes([0x67]) + b"\xff" * 48),
        ("all-zeros", None, nal_unit(0x67, bytes(48))),
    ]


def sps(bits):
    return nal_unit(0x67, bits.rbsp())


def all_lists_444(sps_id):
    bits = sps_head(244, sps_id).ue(3).u(1, 0).ue(0).ue(0).u(1, 0).u(1, 1)
    for index in range(12):
        bits.u(1, 1)
        for step in range(16 if index < 6 else 64):
            bits.se(-128 if step % 2 else 127)
    return bits


def poc_cycle_huge(sps_id):
    """pic_order_cnt_type 1 with num_ref_frames_in_pic_order_cnt_cycle = 2^32 - 2 and extreme offsets."""
    bits = sps_head(66, sps_id).ue(0).ue(1).u(1, 0).se(-(1 << 30)).se(1 << 30).raw_ue(31, (1 << 31) - 1)
    for _ in range(64):
        bits.se((1 << 31) - 1)
    return bits


def crafted_pps(pps_id, sps_id):
    bits = BitWriter().ue(pps_id).ue(sps_id).u(1, 0).u(1, 0).ue(0).ue(0).ue(0).u(1, 0).u(2, 0)
    bits.se(0).se(0).se(0).u(1, 1).u(1, 0).u(1, 0)
    return nal_unit(0x68, bits.rbsp())


def crafted_idr_slice(pps_id, rng):
    bits = BitWriter().ue(0).ue(7).ue(pps_id).u(4, 0).ue(0)  # first_mb, slice_type I, pps, frame_num, idr_pic_id
    return nal_unit(0x65, bits.rbsp() + rng.randbytes(rng.randrange(8, 200)))


# --- RTP ----------------------------------------------------------------------------------------


def rtp_packet(payload_type, sequence, timestamp, ssrc, payload, marker=False, extensions=()):
    """An RTP packet; `extensions` are (id, value) pairs in RFC 8285 one-byte form."""
    first = 0x80
    block = b""
    if extensions:
        elements = b"".join(bytes([(ident << 4) | (len(value) - 1)]) + value for ident, value in extensions)
        elements += b"\x00" * (-len(elements) % 4)
        block = struct.pack("!HH", 0xBEDE, len(elements) // 4) + elements
        first |= 0x10
    header = struct.pack("!BBHII", first, (0x80 if marker else 0) | (payload_type & 0x7F),
                         sequence & 0xFFFF, timestamp & 0xFFFFFFFF, ssrc & 0xFFFFFFFF)
    return header + block + payload


def rtp_header_length(data):
    length = 12 + 4 * (data[0] & 0x0F)
    if data[0] & 0x10 and len(data) >= length + 4:
        length += 4 + 4 * int.from_bytes(data[length + 2:length + 4], "big")
    return length


def is_rtcp(data):
    return len(data) >= 2 and 192 <= data[1] <= 223


def frame_start_payload(codec, rng, size):
    """The first packet of a video frame that never ends, in the codec's payload format."""
    body = rng.randbytes(size)
    if codec == "vp8":
        return bytes([0x10]) + bytes([0x50, 0x2A, 0x00, 0x9D, 0x01, 0x2A, 0x40, 0x01, 0xF0, 0x00]) + body
    if codec in ("h264", "h265"):
        return bytes([0x7C, 0x85]) + body  # FU-A start of an IDR slice
    if codec == "vp9":
        return bytes([0x08]) + body  # B: beginning of a frame
    if codec == "av1":
        return bytes([0x58]) + body  # Y (continues), W=1, N
    return body


def frame_middle_payload(codec, rng, size):
    body = rng.randbytes(size)
    if codec == "vp8":
        return bytes([0x00]) + body
    if codec in ("h264", "h265"):
        return bytes([0x7C, 0x05]) + body  # FU-A, neither start nor end
    if codec == "vp9":
        return bytes([0x00]) + body
    if codec == "av1":
        return bytes([0xD0]) + body  # Z, Y, W=1
    return body


# --- the traffic --------------------------------------------------------------------------------

# Timestamp jumps, in order, one about every second: (name, what to add to the timestamp offset; None
# means "to 45,000 ticks (0.5 s) before the 32-bit wrap").
JUMPS = (("+2^31", 1 << 31), ("-2^31", -(1 << 31)), ("to-wrap", None), ("+1h", 90000 * 3600),
         ("-1h", -90000 * 3600), ("+2^31-1", (1 << 31) - 1), ("-10s", -90000 * 10))


class HostileTraffic:
    def __init__(self, kinds, publisher, seed=1, after=1.0, seconds=0.0, flood_rate=10000,
                 sps_rate=4.0, endless_rate=2000, ssrc_rate=1000, jump_interval=1.0):
        self.kinds = list(dict.fromkeys(kinds))
        self.publisher = publisher
        self.seed = seed
        self.after = after
        self.seconds = seconds
        self.flood_rate = flood_rate
        self.sps_rate = sps_rate
        self.endless_rate = endless_rate
        self.ssrc_rate = ssrc_rate
        self.jump_interval = jump_interval
        self.renumber = "sps" in self.kinds
        self.jumps = "timestamp-jumps" in self.kinds
        self.tasks = []
        self.hooked = set()
        self.inner_of = {}
        self.inner = None  # the bundled transport's _send_rtp under our hook
        self.video_ssrc = self.rtx_ssrc = None
        self.video_payload_type = None
        # Renumbering (sps): next outgoing sequence number, and both directions of the mapping.
        self.next_sequence = None
        self.original_of = [None] * 65536  # out -> aiortc's (None: injected, or never sent)
        self.renumbered = [None] * 65536  # aiortc's -> out
        self.highest_original = None
        self.mid_of_frame = False  # the last honest video packet had no marker
        self.last_timestamp = None  # the last honest video timestamp as sent
        # Timestamp jumps.
        self.offset = 0
        self.frame_timestamp = None
        self.last_jump = None
        self.jump_index = 0
        self.offset_of = collections.OrderedDict()  # aiortc's timestamp -> offset it went out with
        self.sent = {kind: collections.Counter() for kind in self.kinds}
        self.details = {kind: {} for kind in self.kinds}
        self.started_at = None

    # -- hooks

    def hook_pc(self, pc):
        """After each (re)negotiation: hook the transport the publisher's senders are on."""
        video = self.publisher.senders.get("video")
        if video is not None:
            self.video_ssrc = video._ssrc
            self.rtx_ssrc = getattr(video, "_rtx_ssrc", None)
            if self.renumber and not getattr(video, "_hostile_nack_hook", False):
                self.hook_nacks(video)
        for transceiver in pc.getTransceivers():
            transport = transceiver.sender.transport
            if transport is None or id(transport) in self.hooked:
                continue
            self.hooked.add(id(transport))
            inner = transport._send_rtp

            async def hostile_send_rtp(data, inner=inner):
                if len(data) >= 12 and not is_rtcp(data):
                    ssrc = int.from_bytes(data[8:12], "big")
                    if ssrc == self.video_ssrc:
                        data = self.rewrite_media(data)
                    elif ssrc == self.rtx_ssrc and self.rtx_ssrc is not None:
                        data = self.rewrite_retransmission(data)
                elif self.jumps and is_rtcp(data):
                    data = self.rewrite_sender_reports(data)
                return await inner(data)

            transport._send_rtp = hostile_send_rtp
            self.inner_of[id(transport)] = inner
        if video is not None and video.transport is not None:
            # Injected packets skip the rewriting above: they are made with their final numbers.
            self.inner = self.inner_of.get(id(video.transport), self.inner)

    def hook_nacks(self, sender):
        sender._hostile_nack_hook = True
        handle = sender._handle_rtcp_packet
        counts = self.sent["sps"]

        async def translating_handle_rtcp_packet(packet):
            if getattr(packet, "fmt", None) == 1 and hasattr(packet, "lost") and packet.__class__.__name__ == "RtcpRtpfbPacket":
                lost = []
                for sequence in packet.lost:
                    original = self.original_of[sequence & 0xFFFF]
                    if original is None:
                        counts["nacked_injected"] += 1
                    else:
                        lost.append(original)
                packet.lost = lost
            await handle(packet)

        sender._handle_rtcp_packet = translating_handle_rtcp_packet

    def rewrite_media(self, data):
        sequence, timestamp = struct.unpack_from("!HI", data, 2)
        self.video_payload_type = data[1] & 0x7F
        marker = bool(data[1] & 0x80)
        if self.jumps:
            if timestamp != self.frame_timestamp:  # a new frame: where a jump may happen
                self.frame_timestamp = timestamp
                now = time.monotonic()
                if self.active(now) and (self.last_jump is None or now - self.last_jump >= self.jump_interval):
                    self.last_jump = now
                    self.jump(timestamp)
                self.offset_of[timestamp] = self.offset
                while len(self.offset_of) > 2048:
                    self.offset_of.popitem(last=False)
            timestamp = (timestamp + self.offset_of.get(timestamp, self.offset)) & 0xFFFFFFFF
        if self.renumber:
            if self.next_sequence is None:
                self.next_sequence = sequence
            if self.highest_original is not None and (self.highest_original - sequence) & 0xFFFF < 0x8000 \
                    and self.renumbered[sequence] is not None:
                out = self.renumbered[sequence]  # resent on the media SSRC (no RTX): the number it had
            else:
                out = self.next_sequence
                self.next_sequence = (out + 1) & 0xFFFF
                self.original_of[out] = sequence
                self.renumbered[sequence] = out
                self.highest_original = sequence
            sequence = out
        self.mid_of_frame = not marker
        self.last_timestamp = timestamp
        return data[:2] + struct.pack("!HI", sequence, timestamp) + data[8:]

    def jump(self, timestamp):
        name, delta = JUMPS[self.jump_index % len(JUMPS)]
        self.jump_index += 1
        before = (timestamp + self.offset) & 0xFFFFFFFF
        if delta is None:
            delta = ((1 << 32) - 45000 - before) & 0xFFFFFFFF
        self.offset = (self.offset + delta) & 0xFFFFFFFF
        counts = self.sent["timestamp-jumps"]
        counts["jumps"] += 1
        counts[f"jump {name}"] += 1
        self.details["timestamp-jumps"].setdefault("log", []).append(
            {"name": name, "from": before, "to": (timestamp + self.offset) & 0xFFFFFFFF})

    def rewrite_retransmission(self, data):
        header = rtp_header_length(data)
        if len(data) < header + 2:
            return data
        timestamp = struct.unpack_from("!I", data, 4)[0]
        if self.jumps:
            timestamp = (timestamp + self.offset_of.get(timestamp, self.offset)) & 0xFFFFFFFF
        payload = data[header:]
        if self.renumber:
            original = int.from_bytes(payload[:2], "big")
            out = self.renumbered[original]
            if out is not None:
                payload = struct.pack("!H", out) + payload[2:]
        return data[:4] + struct.pack("!I", timestamp) + data[8:header] + payload

    def rewrite_sender_reports(self, data):
        """Sender reports of the video SSRC follow its jumped timestamps (a compound packet: walk it)."""
        out, index = bytearray(data), 0
        while index + 4 <= len(out):
            length = 4 * (int.from_bytes(out[index + 2:index + 4], "big") + 1)
            if out[index + 1] == 200 and index + 20 <= len(out) and int.from_bytes(out[index + 4:index + 8], "big") == self.video_ssrc:
                timestamp = int.from_bytes(out[index + 16:index + 20], "big")
                out[index + 16:index + 20] = ((timestamp + self.offset) & 0xFFFFFFFF).to_bytes(4, "big")
            index += length
        return bytes(out)

    # -- sending

    def active(self, now=None):
        if self.started_at is None:
            return False
        elapsed = (now or time.monotonic()) - self.started_at
        return elapsed >= self.after and (not self.seconds or elapsed < self.after + self.seconds)

    def start(self, pc, channels=None, channel_settings=None):
        self.started_at = time.monotonic()
        runners = {"sps": self.run_sps, "endless-frame": self.run_endless_frame, "ssrc-flood": self.run_ssrc_flood}
        for kind in self.kinds:
            if kind in runners:
                self.tasks.append(asyncio.ensure_future(runners[kind]()))
            elif kind == "datachannel-flood":
                self.tasks.append(asyncio.ensure_future(self.run_datachannel_flood(channels or {}, channel_settings or [])))
        self.pc = pc

    async def stop(self):
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - an error was counted where it happened
                pass

    async def paced(self, rate, tick=0.01):
        """Yields how many items are due in each tick, at `rate` a second, while active."""
        while not self.active():
            if self.seconds and self.started_at and time.monotonic() - self.started_at >= self.after + self.seconds:
                return
            await asyncio.sleep(0.05)
        begun, done = time.monotonic(), 0
        while self.active():
            due = int((time.monotonic() - begun) * rate) - done
            if due > 0:
                done += due
                yield due
            await asyncio.sleep(tick)

    async def inject(self, data, counts):
        try:
            await self.inner(data)
            counts["packets"] += 1
            counts["bytes"] += len(data)
        except ConnectionError:
            counts["send_errors"] += 1

    async def run_sps(self):
        counts, rng = self.sent["sps"], random.Random(f"{self.seed}:hostile:sps")
        if self.publisher.codec != "h264":
            self.details["sps"]["error"] = "the hostile publisher is not H.264"
            return
        variants = crafted_sps_variants()
        self.details["sps"]["variants"] = [name for name, _, _ in variants]
        index = 0
        async for due in self.paced(self.sps_rate, tick=0.02):
            for _ in range(due):
                for _ in range(50):  # between two honest frames, never inside one
                    if not self.mid_of_frame and self.last_timestamp is not None:
                        break
                    await asyncio.sleep(0.002)
                else:
                    counts["skipped_mid_frame"] += 1
                    continue
                name, sps_id, unit = variants[index % len(variants)]
                as_stap = index % 2 == 0
                index += 1
                pps_id = 1 + index % 255  # never the honest encoder's 0
                units = [unit, crafted_pps(pps_id, sps_id if sps_id is not None else 31), crafted_idr_slice(pps_id, rng)]
                timestamp = (self.last_timestamp + 1) & 0xFFFFFFFF
                self.last_timestamp = timestamp
                if as_stap:
                    payloads = [bytes([0x78]) + b"".join(struct.pack("!H", len(u)) + u for u in units)]
                else:
                    payloads = units
                for position, payload in enumerate(payloads):
                    sequence = self.next_sequence
                    self.next_sequence = (sequence + 1) & 0xFFFF
                    self.original_of[sequence] = None
                    await self.inject(rtp_packet(self.video_payload_type, sequence, timestamp, self.video_ssrc, payload,
                                                 marker=position == len(payloads) - 1), counts)
                counts["frames"] += 1
                counts["stap_a" if as_stap else "single_nal"] += 1
                counts[f"variant {name}"] += 1

    def mid_extension_id(self):
        """The negotiated id of the MID header extension (aiortc keeps it in the sender's map)."""
        sender = self.publisher.senders.get("video")
        ids = getattr(getattr(sender, "_RTCRtpSender__rtp_header_extensions_map", None), "_HeaderExtensionsMap__ids", None)
        return getattr(ids, "mid", None)

    def sections(self):
        """(mid, payload types) of every audio and video section."""
        return [(t.mid, [c.payloadType for c in t._codecs]) for t in self.pc.getTransceivers() if t.mid is not None]

    async def run_endless_frame(self):
        counts, rng = self.sent["endless-frame"], random.Random(f"{self.seed}:hostile:endless")
        transceiver = next(t for t in self.pc.getTransceivers() if t.sender is self.publisher.senders.get("video"))
        while self.video_payload_type is None:
            await asyncio.sleep(0.05)
        ssrc, sequence, timestamp = rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(32)
        ident = self.mid_extension_id()
        extensions = [(ident, transceiver.mid.encode())] if ident and transceiver.mid else []
        self.details["endless-frame"].update({"ssrc": ssrc, "timestamp": timestamp, "payload_type": self.video_payload_type,
                                              "mid": transceiver.mid, "with_mid_extension": bool(extensions)})
        first = True
        async for due in self.paced(self.endless_rate):
            for _ in range(due):
                make = frame_start_payload if first else frame_middle_payload
                payload = make(self.publisher.codec, rng, 1000)
                first = False
                await self.inject(rtp_packet(self.video_payload_type, sequence, timestamp, ssrc, payload,
                                             extensions=extensions), counts)
                sequence = (sequence + 1) & 0xFFFF

    async def run_ssrc_flood(self):
        """Each new SSRC is one of three shapes, in turn: a random payload type; a payload type some
        section negotiated; or a section's MID header extension with one of that section's payload
        types (what a receiver that learns SSRCs takes as a new stream of the section)."""
        counts, rng = self.sent["ssrc-flood"], random.Random(f"{self.seed}:hostile:ssrc")
        while self.video_payload_type is None:  # the senders are configured (header extension ids) once media flows
            await asyncio.sleep(0.05)
        honest = set()
        for transceiver in self.pc.getTransceivers():
            honest.update(s for s in (getattr(transceiver.sender, "_ssrc", None), getattr(transceiver.sender, "_rtx_ssrc", None)) if s)
        sections = [(mid, pts) for mid, pts in self.sections() if pts]
        negotiated = sorted({pt for _, pts in sections for pt in pts})
        ident = self.mid_extension_id()
        self.details["ssrc-flood"]["negotiated_payload_types"] = negotiated
        shapes = ["random", "negotiated"] + (["mid"] if ident and sections else [])
        async for due in self.paced(self.ssrc_rate):
            for _ in range(due):
                ssrc = rng.getrandbits(32)
                while ssrc in honest:
                    ssrc = rng.getrandbits(32)
                shape = shapes[counts["ssrcs"] % len(shapes)]
                extensions = []
                if shape == "mid":
                    mid, pts = rng.choice(sections)
                    payload_type, extensions = rng.choice(pts), [(ident, mid.encode())]
                elif shape == "negotiated" and negotiated:
                    payload_type = rng.choice(negotiated)
                else:
                    payload_type = rng.choice([pt for pt in range(128) if not 64 <= pt <= 95])  # never RTCP-like
                counts["ssrcs"] += 1
                counts[f"ssrcs_{shape}"] += 1
                sequence, timestamp = rng.getrandbits(16), rng.getrandbits(32)
                for index in range(3):
                    payload = rng.randbytes(rng.randrange(1, 1200))
                    await self.inject(rtp_packet(payload_type, sequence + index, timestamp + 3000 * index, ssrc, payload,
                                                 marker=rng.random() < 0.5, extensions=extensions), counts)

    async def run_datachannel_flood(self, channels, settings):
        counts = self.sent["datachannel-flood"]
        setting = next((s for s in settings if s["label"].startswith("#")), None)
        if setting is None or setting["label"] not in channels:
            self.details["datachannel-flood"]["error"] = "no messaging channel (recbot needs --data-channel-signaling)"
            return
        channel = channels[setting["label"]]
        self.details["datachannel-flood"].update({"label": setting["label"], "rate": self.flood_rate})
        prefix = self.publisher.connection_id.encode() if setting.get("header") else b""
        flood = None
        number = 0
        try:
            async for due in self.paced(self.flood_rate):
                if channel.readyState != "open" or channel.id is None:
                    counts["channel_not_open"] += due
                    continue
                if flood is None:
                    flood = SctpFlood(channel, counts)
                if len(flood.sctp._outbound_queue) > 2 * self.flood_rate:  # a second behind: stop feeding it
                    counts["skipped_backpressure"] += due
                    continue
                batch = []
                for _ in range(due):
                    number += 1
                    text = f'{{"flood":{number}}}'
                    if prefix or setting.get("compress"):
                        body = prefix + text.encode()
                        batch.append((WEBRTC_BINARY, zlib.compress(body) if setting.get("compress") else body))
                    else:
                        batch.append((WEBRTC_STRING, text.encode()))
                    counts["bytes"] += len(text)
                await flood.send(batch)
                counts["messages"] += len(batch)
        finally:
            if flood is not None:
                counts["queued_at_end"] = len(flood.sctp._outbound_queue)


    def truth(self):
        sent = {}
        for kind in self.kinds:
            sent[kind] = {**dict(self.sent[kind]), **self.details[kind]}
        return {"publisher_index": self.publisher.index, "connection_id": self.publisher.connection_id,
                "codec": self.publisher.codec, "kinds": self.kinds, "after_seconds": self.after,
                "seconds": self.seconds, "sent": sent}


WEBRTC_STRING, WEBRTC_BINARY = 51, 53  # SCTP payload protocol ids (RFC 8831)


class SctpFlood:
    """Many messages of one data channel a second through aiortc's SCTP association.

    aiortc sends one chunk per SCTP packet and runs its whole transmit loop (which walks every chunk
    in flight) once per message, which tops out near 2,000 small messages a second on a busy core.
    So a batch of messages becomes DATA chunks through aiortc's own `_send` with the transmit step
    held back, then one transmit; and DATA chunks leave bundled, as many as fit in one packet
    (RFC 9260 section 6.10). TSNs, stream sequence numbers, congestion control, SACK and
    retransmission stay aiortc's.
    """

    BUNDLE_BYTES = 1100

    def __init__(self, channel, counts):
        self.channel = channel
        self.sctp = channel.transport
        self.counts = counts
        self.pending = []
        self.pending_bytes = 0
        self.flush_scheduled = False
        sctp = self.sctp
        self.dtls = sctp._RTCSctpTransport__transport
        self.send_chunk = sctp._send_chunk
        sctp._send_chunk = self.bundling_send_chunk

    async def send(self, batch):
        sctp = self.sctp

        async def held_back():
            return None

        sctp._transmit = held_back
        try:
            for protocol, data in batch:
                await sctp._send(self.channel.id, protocol, data, max_retransmits=self.channel.maxRetransmits,
                                 ordered=self.channel.ordered)
        finally:
            del sctp._transmit  # aiortc's own again
        await sctp._transmit()

    async def bundling_send_chunk(self, chunk):
        if chunk.type != 0:  # only DATA is bundled; anything else goes alone, after what is pending
            await self.flush()
            return await self.send_chunk(chunk)
        body = bytes(chunk)
        if self.pending_bytes + len(body) > self.BUNDLE_BYTES:
            await self.flush()
        self.pending.append(body)
        self.pending_bytes += len(body)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self.flush()))

    async def flush(self):
        self.flush_scheduled = False
        if not self.pending:
            return
        sctp = self.sctp
        data = b"".join(self.pending)
        chunks = len(self.pending)
        self.pending, self.pending_bytes = [], 0
        header = struct.pack("!HHL", sctp._local_port, sctp._remote_port, sctp._remote_verification_tag)
        checksum = google_crc32c.value(header + b"\x00\x00\x00\x00" + data)
        try:
            await self.dtls._send_data(header + struct.pack("<L", checksum) + data)
            self.counts["sctp_packets"] += 1
            self.counts["data_chunks_sent"] += chunks
        except ConnectionError:
            self.counts["send_errors"] += 1
