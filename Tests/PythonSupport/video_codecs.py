"""VP9, AV1 and H.265 senders for aiortc, which itself only sends VP8 and H.264.

Real encoders from PyAV (libvpx-vp9, libsvtav1, libx265) in low-delay realtime settings, each
encoded frame packetized by a payloader written from its spec:

- VP9: RFC 9628, non-flexible mode, one spatial layer (`vp9_payloads`);
- AV1: AOM "RTP Payload Format for AV1" v1.0.0 (`av1_obu_elements`, `av1_payloads`);
- H.265: RFC 7798 without DONL, one RTP stream (`annexb_nal_units`, `h265_payloads`).

`register()` adds them to aiortc's codec tables (with nack, nack pli and RTX, as aiortc offers VP8)
and makes aiortc's senders use these encoders for them. aiortc asks an encoder for one frame at a
time (`encode(frame, force_keyframe) -> (payloads, timestamp)`, run in a thread) and sets the RTP
marker on the last payload it returns, which ends the picture (VP9), temporal unit (AV1) or access
unit (H.265).

`is_keyframe(mime_type, payloads)` reads one encoded frame's RTP payloads, for all five codecs, so
the test server can count the keyframes it sent.
"""
import collections
import fractions
import os
import random
import struct

import aiortc.codecs
import aiortc.rtcrtpsender
import av
from aiortc.codecs.base import Encoder
from aiortc.codecs.vpx import VpxPayloadDescriptor
from aiortc.mediastreams import VIDEO_TIME_BASE, convert_timebase
from aiortc.rtcrtpparameters import RTCRtcpFeedback, RTCRtpCodecParameters

# SVT-AV1 reads this when an encoder starts. It logs its configuration on every start and, at error
# level, every encoder freed without end of stream, which is how aiortc leaves encoders; real
# failures still reach PyAV as errors.
os.environ.setdefault("SVT_LOG", "0")

PAYLOAD_MAX = 1200  # bytes of RTP payload: leaves room for the RTP header, extensions and SRTP
FRAME_RATE = 30  # what synthetic_media.PatternVideo produces; rate control and GOP length assume it
BITRATE = 500_000  # as aiortc's VP8 starts

# The RTP payload descriptor's first octet (RFC 9628 section 4.2).
VP9_I, VP9_P, VP9_B, VP9_E, VP9_V = 0x80, 0x40, 0x08, 0x04, 0x02

# OBU types (AV1 spec section 6.2.2) and the OBU header's flags.
OBU_SEQUENCE_HEADER, OBU_TEMPORAL_DELIMITER, OBU_TILE_LIST = 1, 2, 8
OBU_EXTENSION_FLAG, OBU_HAS_SIZE_FIELD = 0x04, 0x02
AV1_MIN_FRAGMENT = 16  # rather end a packet early than split an OBU into a sliver

# H.265 NAL unit types (H.265 table 7-1) and the RTP payload structures of RFC 7798 section 4.4.
H265_IRAP = range(16, 22)  # BLA_W_LP .. CRA_NUT: random access points, what a receiver can start at
H265_AP, H265_FU = 48, 49  # aggregation packet, fragmentation unit
H265_FU_S, H265_FU_E = 0x80, 0x40


# --- VP9 (RFC 9628) ---

def vp9_payloads(frame, picture_id, keyframe, size, payload_max=PAYLOAD_MAX):
    """One VP9 frame as RTP payloads. With one spatial layer a picture is one layer frame.

    Non-flexible mode (F=0) without layer indices (L=0), which a single layer does not need. Every
    packet carries the 15-bit picture ID (I=1, M=1); P=1 when the frame is inter-predicted; B marks
    the layer frame's first packet and E its last. A keyframe's first packet also carries the
    scalability structure (V=1) with the picture's width and height.
    """
    picture = struct.pack("!H", 0x8000 | picture_id)
    structure = vp9_scalability_structure(*size) if keyframe else b""
    payloads, pos = [], 0
    while pos < len(frame) or not payloads:
        extra = b"" if payloads else structure
        chunk = frame[pos:pos + payload_max - 1 - len(picture) - len(extra)]
        pos += len(chunk)
        flags = (VP9_I | (0 if keyframe else VP9_P) | (0 if payloads else VP9_B)
                 | (VP9_E if pos >= len(frame) else 0) | (VP9_V if extra else 0))
        payloads.append(bytes([flags]) + picture + extra + chunk)
    return payloads


def vp9_scalability_structure(width, height):
    """N_S=0 (one spatial layer), Y=1 (its size follows), G=0 (no picture group description)."""
    return bytes([0x10]) + struct.pack("!HH", width, height)


class BitReader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def read(self, bits):
        value = 0
        for _ in range(bits):
            value = value << 1 | self.data[self.pos >> 3] >> (7 - (self.pos & 7)) & 1
            self.pos += 1
        return value


def vp9_keyframe_size(frame):
    """Width and height from a VP9 keyframe's uncompressed header (VP9 spec sections 6.2, 6.2.2)."""
    bits = BitReader(frame)
    bits.read(2)  # frame_marker
    profile = bits.read(1) | bits.read(1) << 1
    bits.read(1 if profile == 3 else 0)  # reserved_zero
    if bits.read(1) or bits.read(1):  # show_existing_frame, frame_type (0 is KEY_FRAME)
        raise ValueError("not a VP9 keyframe")
    bits.read(2 + 24)  # show_frame, error_resilient_mode, frame_sync_code
    bits.read(1 if profile >= 2 else 0)  # ten_or_twelve_bit
    if bits.read(3) != 7:  # color_space other than CS_RGB
        bits.read(1 + (3 if profile in (1, 3) else 0))  # color_range, subsampling_x/y, reserved_zero
    else:
        bits.read(1 if profile in (1, 3) else 0)  # reserved_zero
    return bits.read(16) + 1, bits.read(16) + 1


# --- AV1 (AOM RTP payload format v1.0.0) ---

def leb128(value):
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def read_leb128(data, pos):
    value = 0
    for index in range(8):
        byte = data[pos + index]
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return value, pos + index + 1
    raise ValueError("leb128 longer than 8 bytes")


def av1_obu_elements(temporal_unit):
    """The OBUs of one temporal unit, as encoders write them (low-overhead format, section 5 of
    the AV1 spec), turned into RTP OBU elements: temporal delimiters and tile lists are dropped
    (payload format section 5) and each OBU loses its obu_size field, its header saying so
    (obu_has_size_field=0, which the payload format recommends; the element's length says it)."""
    elements, pos = [], 0
    while pos < len(temporal_unit):
        header = temporal_unit[pos]
        header_end = pos + (2 if header & OBU_EXTENSION_FLAG else 1)
        if header & OBU_HAS_SIZE_FIELD:
            size, start = read_leb128(temporal_unit, header_end)
        else:
            size, start = len(temporal_unit) - header_end, header_end
        if header >> 3 & 0xF not in (OBU_TEMPORAL_DELIMITER, OBU_TILE_LIST):
            elements.append(bytes([header & ~OBU_HAS_SIZE_FIELD]) + temporal_unit[pos + 1:header_end]
                            + temporal_unit[start:start + size])
        pos = start + size
    return elements


def av1_starts_sequence(elements, keyframe):
    """A keyframe whose temporal unit carries a sequence header starts a coded video sequence."""
    return keyframe and any(element[0] >> 3 & 0xF == OBU_SEQUENCE_HEADER for element in elements)


def av1_payloads(elements, new_sequence, payload_max=PAYLOAD_MAX):
    """Packs one temporal unit's OBU elements into RTP payloads (payload format sections 4.4, 4.5).

    Elements are packed in order; one that does not fit is fragmented, the packet that carries
    its first part ending with it (Y=1) and the next starting with the rest (Z=1). Room is counted
    as if every element had its LEB128 length; packets of up to three elements then say so in W
    and leave the last one's length out. N=1 on the first packet of a coded video sequence.
    """
    payloads, items, used, continues = [], [], 1, False

    def close(fragmented):
        nonlocal items, used, continues
        payloads.append(av1_aggregate(items, continues, fragmented, new_sequence and not payloads))
        items, used, continues = [], 1, fragmented

    for element in elements:
        while element:
            free = payload_max - used
            whole = len(leb128(len(element))) + len(element)
            if whole <= free:
                items.append(element)
                used += whole
                break
            part = free - len(leb128(free))
            if part < AV1_MIN_FRAGMENT and items:
                close(fragmented=False)
                continue
            items.append(element[:part])
            element = element[part:]
            close(fragmented=True)
    if items:
        close(fragmented=False)
    return payloads


def av1_aggregate(items, z, y, n):
    """Aggregation header Z|Y|W|N|0|0|0, then the OBU elements."""
    w = len(items) if len(items) <= 3 else 0
    sized = items[:-1] if w else items
    body = b"".join(leb128(len(item)) + item for item in sized) + (items[-1] if w else b"")
    return bytes([z << 7 | y << 6 | w << 4 | n << 3]) + body


# --- H.265 (RFC 7798) ---

def annexb_nal_units(access_unit):
    """The NAL units of one access unit in the byte-stream format (H.265 annex B), without their
    start codes. Zero bytes before a start code are leading_zero_8bits or trailing_zero_8bits, never
    part of a NAL unit (whose last byte is never 0x00: H.265 section 7.4.2), so they are dropped."""
    starts, pos = [], 0
    while (found := access_unit.find(b"\x00\x00\x01", pos)) >= 0:
        starts.append(found + 3)
        pos = found + 3
    units = []
    for index, start in enumerate(starts):
        end = starts[index + 1] - 3 if index + 1 < len(starts) else len(access_unit)
        unit = access_unit[start:end].rstrip(b"\x00")
        if len(unit) >= 2:  # at least the two-byte NAL unit header (end of sequence has no more)
            units.append(unit)
    return units


def h265_nal_type(unit):
    """The type in a NAL unit header (or a payload header, which has the same layout): F(1) Type(6)
    LayerId(6) TID(3)."""
    return unit[0] >> 1 & 0x3F


def h265_payloads(units, payload_max=PAYLOAD_MAX):
    """Packs one access unit's NAL units, in order, into RTP payloads (RFC 7798 section 4.4).

    A NAL unit larger than a payload goes out in fragmentation units (`h265_fragments`); smaller ones
    that follow each other are gathered into an aggregation packet while it has room (the parameter
    sets before a keyframe's slice usually share one), and one that travels alone is a single NAL
    unit packet: the NAL unit itself. Without sprop-max-don-diff no DONL or DOND fields are sent.
    """
    payloads, run = [], []

    def flush():
        if len(run) == 1:
            payloads.append(run[0])
        elif run:
            payloads.append(h265_aggregate(run))
        run.clear()

    for unit in units:
        if len(unit) > payload_max:
            flush()
            payloads += h265_fragments(unit, payload_max)
            continue
        if run and 2 + sum(2 + len(item) for item in run) + 2 + len(unit) > payload_max:
            flush()
        run.append(unit)
    flush()
    return payloads


def h265_aggregate(units):
    """An aggregation packet (section 4.4.2): a payload header of type 48 whose F is set if any
    unit's is and whose LayerId and TID are the lowest among the units, then each unit after its
    16-bit size."""
    forbidden = any(unit[0] & 0x80 for unit in units)
    layer_id = min((unit[0] & 1) << 5 | unit[1] >> 3 for unit in units)
    tid = min(unit[1] & 0x07 for unit in units)
    header = bytes([forbidden << 7 | H265_AP << 1 | layer_id >> 5, (layer_id & 0x1F) << 3 | tid])
    return header + b"".join(struct.pack("!H", len(unit)) + unit for unit in units)


def h265_fragments(unit, payload_max=PAYLOAD_MAX):
    """A NAL unit too large for one payload as fragmentation units (section 4.4.3): the payload
    header copies the unit's F, LayerId and TID with type 49; the FU header has S on the first
    fragment, E on the last and the unit's type; the unit's own two-byte header is not sent (the
    receiver rebuilds it from these). The unit is larger than a payload, so there are always at
    least two fragments (S and E never on the same one, as the RFC requires)."""
    header = bytes([unit[0] & 0x81 | H265_FU << 1, unit[1]])
    body, room = unit[2:], payload_max - 3
    count = -(-len(body) // room)
    return [header + bytes([(H265_FU_S if index == 0 else 0) | (H265_FU_E if index == count - 1 else 0) | h265_nal_type(unit)])
            + body[index * room:(index + 1) * room] for index in range(count)]


def h265_nal_types(payload):
    """NAL unit types in one RTP payload (RFC 7798, no DONL): single NAL unit, AP or FU."""
    if len(payload) < 2:
        return
    kind = h265_nal_type(payload)
    if kind == H265_AP:
        pos = 2
        while pos + 2 < len(payload):
            yield h265_nal_type(payload[pos + 2:])
            pos += 2 + int.from_bytes(payload[pos:pos + 2], "big")
    elif kind == H265_FU:
        if len(payload) > 2 and payload[2] & H265_FU_S:  # the fragmented unit's type, told on its first fragment
            yield payload[2] & 0x3F
    else:
        yield kind


# --- Encoders for aiortc ---

class RealtimeEncoder(Encoder):
    """A PyAV encoder opened for the frame's size and opened anew when the size changes (so a new
    size starts with a keyframe); a keyframe forced on request (aiortc's PLI/FIR); one encoded frame
    per call."""

    payload_max = PAYLOAD_MAX

    # --ignore-keyframe-requests: a sender that answers no PLI or FIR (keyframes on its own
    # interval only), as a busy or broken publisher does.
    honours_requests = True

    def __init__(self, keyframe_interval):
        self.keyframe_interval = keyframe_interval
        self.codec = None
        # Encoders in these settings give one packet per frame; should one hold a frame back and
        # then give two, the second waits for the next call rather than joining the first's RTP frame.
        self.pending = collections.deque()

    def encode(self, frame, force_keyframe=False):
        if frame.format.name != "yuv420p":
            frame = frame.reformat(format="yuv420p")
        if self.codec is None or (frame.width, frame.height) != (self.codec.width, self.codec.height):
            self.codec = self.open(frame.width, frame.height)
        if force_keyframe and self.honours_requests:
            frame.pict_type = av.video.frame.PictureType.I
        self.pending.extend(self.codec.encode(frame))
        if not self.pending:
            return [], 0
        return self.pack(self.pending.popleft())

    def pack(self, packet):
        timestamp = convert_timebase(packet.pts, packet.time_base, VIDEO_TIME_BASE)
        return self.payloads(bytes(packet), packet.is_keyframe), timestamp

    def context(self, name, width, height):
        codec = av.CodecContext.create(name, "w")
        codec.width, codec.height, codec.pix_fmt = width, height, "yuv420p"
        codec.time_base = VIDEO_TIME_BASE
        codec.framerate = fractions.Fraction(FRAME_RATE)
        codec.bit_rate = BITRATE
        codec.gop_size = max(1, round(self.keyframe_interval * FRAME_RATE))
        return codec


class Vp9Encoder(RealtimeEncoder):
    mime_type = "video/VP9"

    def __init__(self, keyframe_interval):
        super().__init__(keyframe_interval)
        self.picture_id = random.randrange(1 << 15)

    def open(self, width, height):
        codec = self.context("libvpx-vp9", width, height)
        codec.options = {
            "deadline": "realtime", "cpu-used": "8",
            # No look-ahead and no alternate reference: every frame comes out at once, shown, alone
            # (no superframes with hidden frames).
            "lag-in-frames": "0", "auto-alt-ref": "0",
            # Constant bitrate, as aiortc's VP8 encoder does it.
            "minrate": str(BITRATE), "maxrate": str(BITRATE), "bufsize": str(BITRATE),
        }
        return codec

    def payloads(self, frame, keyframe):
        size = vp9_keyframe_size(frame) if keyframe else None
        payloads = vp9_payloads(frame, self.picture_id, keyframe, size, self.payload_max)
        self.picture_id = (self.picture_id + 1) % (1 << 15)
        return payloads


class Av1Encoder(RealtimeEncoder):
    mime_type = "video/AV1"

    def open(self, width, height):
        codec = self.context("libsvtav1", width, height)
        # SVT-AV1's real-time mode: low-delay prediction, no look-ahead, constant bitrate. It
        # returns each frame's temporal unit from the call that gave the frame, and honours forced
        # keyframes (each with a new sequence header).
        codec.options = {"preset": "10", "svtav1-params": "rtc=1:rc=2:pred-struct=1:lookahead=0"}
        return codec

    def payloads(self, temporal_unit, keyframe):
        elements = av1_obu_elements(temporal_unit)
        return av1_payloads(elements, av1_starts_sequence(elements, keyframe), self.payload_max)


class H265Encoder(RealtimeEncoder):
    mime_type = "video/H265"

    def open(self, width, height):
        codec = self.context("libx265", width, height)
        gop = max(1, round(self.keyframe_interval * FRAME_RATE))
        kbps = BITRATE // 1000
        # x265's zerolatency tune: no B-frames, no look-ahead, one frame thread, so each frame's
        # access unit comes back from the call that gave the frame. Closed GOPs and forced-idr make
        # every keyframe, scheduled or forced (PLI/FIR), an IDR; repeat-headers puts VPS, SPS and
        # PPS in front of each, so a receiver can start at any keyframe. info=0 leaves out the SEI
        # with x265's version and settings. Constant bitrate through the VBV, as aiortc's VP8 does.
        codec.options = {
            "preset": "ultrafast", "tune": "zerolatency", "forced-idr": "1",
            "x265-params": f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes=0:open-gop=0:repeat-headers=1:info=0"
                           f":vbv-maxrate={kbps}:vbv-bufsize={kbps}:log-level=error",
        }
        return codec

    def payloads(self, access_unit, keyframe):
        return h265_payloads(annexb_nal_units(access_unit), self.payload_max)


# --- aiortc integration ---

ENCODERS = {encoder.mime_type.lower(): encoder for encoder in (Vp9Encoder, Av1Encoder, H265Encoder)}
# As browsers offer them: VP9 profile 0; AV1 Main profile, Main tier, up to level 3.1; H.265 Main
# profile, Main tier, up to level 3.1, one RTP stream (SRST). Level 3.1 is enough for 480x272 at
# 30 fps, as the encoders make it.
FORMAT_PARAMETERS = {
    Vp9Encoder.mime_type: {"profile-id": 0},
    Av1Encoder.mime_type: {"profile": 0, "level-idx": 5, "tier": 0},
    H265Encoder.mime_type: {"profile-id": 1, "tier-flag": 0, "level-id": 93, "tx-mode": "SRST"},
}


def register(keyframe_interval=2.0, honour_requests=True):
    """Offers VP9, AV1 and H.265 (after aiortc's own codecs, with RTX) and lets aiortc's senders
    encode them.

    Idempotent. `keyframe_interval` (seconds) applies to the encoders made from then on;
    `honour_requests` False: they answer no PLI or FIR.
    """
    RealtimeEncoder.honours_requests = honour_requests
    video = aiortc.codecs.CODECS["video"]
    for mime_type, parameters in FORMAT_PARAMETERS.items():
        if any(codec.mimeType == mime_type for codec in video):
            continue
        payload_type = max(codec.payloadType for codec in video) + 1
        video += [
            RTCRtpCodecParameters(mimeType=mime_type, clockRate=90000, payloadType=payload_type,
                                  rtcpFeedback=[RTCRtcpFeedback(type="nack"), RTCRtcpFeedback(type="nack", parameter="pli")],
                                  parameters=dict(parameters)),
            RTCRtpCodecParameters(mimeType="video/rtx", clockRate=90000, payloadType=payload_type + 1,
                                  parameters={"apt": payload_type}),
        ]

    def get_encoder(codec):
        encoder = ENCODERS.get(codec.mimeType.lower())
        return encoder(keyframe_interval) if encoder else aiortc.codecs.get_encoder(codec)

    # RTCRtpSender calls the name it imported; aiortc's own function still serves every other codec.
    aiortc.rtcrtpsender.get_encoder = get_encoder


# --- Keyframes on the wire ---

def is_keyframe(mime_type, payloads):
    """Whether one encoded frame's RTP payloads, as an aiortc encoder returned them, are a keyframe."""
    mime_type = mime_type.lower()
    if mime_type == "video/vp8":
        _, data = VpxPayloadDescriptor.parse(payloads[0])
        return bool(data) and not data[0] & 1  # frame tag: 0 in the lowest bit is a key frame (RFC 6386 9.1)
    if mime_type == "video/vp9":
        return not payloads[0][0] & VP9_P  # one layer: only keyframes are not inter-predicted
    if mime_type == "video/av1":
        return bool(payloads[0][0] & 0x08)  # N: every keyframe here starts a coded video sequence
    if mime_type == "video/h264":
        return any(nal_type == 5 for payload in payloads for nal_type in h264_nal_types(payload))
    if mime_type == "video/h265":
        return any(nal_type in H265_IRAP for payload in payloads for nal_type in h265_nal_types(payload))
    return False


def h264_nal_types(payload):
    """NAL unit types in one RTP payload (RFC 6184): single NAL unit, STAP-A or FU-A."""
    kind = payload[0] & 0x1F
    if kind == 24:  # STAP-A: 16-bit sizes, each followed by its NAL unit
        pos = 1
        while pos + 2 < len(payload):
            yield payload[pos + 2] & 0x1F
            pos += 2 + int.from_bytes(payload[pos:pos + 2], "big")
    elif kind == 28:  # FU-A: the fragmented unit's type, told on its first fragment
        if payload[1] & 0x80:
            yield payload[1] & 0x1F
    else:
        yield kind
