#!/usr/bin/env python3
"""Checks the test server's VP9, AV1 and H.265 payloaders (video_codecs.py) against RTP
depacketizers written by others, then decodes every frame they give back.

Frames of synthetic_media's test pattern (320x240, then 480x272 from half way) are encoded and
packetized as the test server sends them, with a keyframe forced a third of the way in as a PLI
forces it, and RTP packets built around the payloads (the marker on each frame's last packet):

- VP9: GStreamer's `appsrc ! rtpvp9depay ! vp9dec ! appsink`. GStreamer's Python bindings are
  Debian's (/usr/bin/python3), while PyAV and aiortc are installed for the other python3; so the
  packets go to a file, each after its 16-bit length (as RFC 4571 frames RTP on a stream), and this
  script, run again by /usr/bin/python3 with --gstreamer FILE, feeds them to GStreamer. Besides the
  decoded frames, the sizes rtpvp9depay announces in its caps, which it takes from the scalability
  structures, must be the sizes decoded. (rtpvp9depay ends a frame at the RTP marker, so the E bit
  goes unchecked.)
- AV1: there is no AV1 depacketizer in Debian 12's GStreamer 1.22 (rtpav1depay comes with
  gst-plugins-rs, which Debian 12 does not package), none in Debian's ffmpeg 5.1 and no PyPI
  package for it that we could find. The FFmpeg 8.1 inside PyAV 18.1 has one (libavformat's RTP
  demuxer knows AV1): the packets go over loopback UDP to PyAV's SDP demuxer, and libdav1d decodes
  the temporal units it reassembles. Every fifth temporal unit gets padding OBUs, so that some
  packets carry more than three OBU elements (W=0, every element with its length).
- H.265: two depacketizers. GStreamer's `appsrc ! rtph265depay ! libde265dec ! appsink` (the
  byte-stream between them pinned to whole access units; libde265dec is gst-plugins-bad's libde265
  decoder: gstreamer1.0-libav, which has avdec_h265, is not installed), run by /usr/bin/python3 as
  for VP9; and FFmpeg's RTP demuxer in PyAV, as for AV1, with FFmpeg's own hevc decoder.

Each codec runs twice: with the server's payload size and with a small one, so that frames span
several packets (VP9), OBUs are fragmented across packets (AV1, Z and Y) and NAL units across
fragmentation units (H.265; with the server's size a keyframe's parameter sets, and sometimes its
slice, share an aggregation packet, and small frames go as single NAL unit packets). Every frame
must come back decoded, in order, at the size it was sent at. Exits 0 when all do, 1 otherwise.

  python3 Tests/Peers/depay_check.py [--frames 150]
"""
import argparse
import asyncio
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

# PyAV, aiortc and video_codecs are imported where used: /usr/bin/python3 runs --gstreamer without them.
HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM_PYTHON = "/usr/bin/python3"
PAYLOAD_TYPE = 96
SSRC = 0x5EC0DE
RESIZED = (480, 272)
SMALL_PAYLOAD = 160
KEYFRAME_INTERVAL = 1.0  # seconds: several scheduled keyframes besides the forced one and the resize's
UDP_QUIET_SECONDS = 1  # an RTP session over UDP has no end: reading stops after this much silence
OBU_PADDING = 15


def pattern_frames(count):
    """`count` frames of the server's test pattern, produced at once, changing size half way."""
    from synthetic_media import MediaClock, PatternVideo

    clock = MediaClock()
    clock.epoch = time.monotonic() - count  # the whole timeline is already due: recv never waits
    video = PatternVideo(clock=clock)
    video.resize_at(count // 2 / video.fps, *RESIZED)

    async def take():
        return [await video.recv() for _ in range(count)]

    return asyncio.run(take())


def rtp_packets(encoder, frames):
    """Encodes and packetizes the frames as aiortc's sender does; returns the packets and the
    number of keyframes among them."""
    from aiortc.rtp import RtpPacket

    import video_codecs

    packets, keyframes, sequence = [], 0, 4242
    for index, frame in enumerate(frames):
        payloads, timestamp = encoder.encode(frame, force_keyframe=index == len(frames) // 3)
        keyframes += video_codecs.is_keyframe(encoder.mime_type, payloads)
        for number, payload in enumerate(payloads):
            packet = RtpPacket(payload_type=PAYLOAD_TYPE, sequence_number=sequence & 0xFFFF, timestamp=timestamp,
                               ssrc=SSRC, marker=int(number == len(payloads) - 1))
            packet.payload = payload
            packets.append(packet.serialize())
            sequence += 1
    return packets, keyframes


# What GStreamer runs per codec: the RTP caps' encoding name, then depacketizer (named depay) to decoder.
GSTREAMER_PIPELINES = {
    "vp9": ("VP9", "rtpvp9depay name=depay ! vp9dec"),
    "h265": ("H265", "rtph265depay name=depay ! video/x-h265,stream-format=byte-stream,alignment=au ! libde265dec"),
}


def gstreamer_vp9_sizes(packets):
    """The sizes of the frames GStreamer decodes from VP9 packets; the sizes rtpvp9depay announces
    must be those decoded."""
    return gstreamer_sizes(packets, "vp9", check_announced=True)


def gstreamer_h265_sizes(packets):
    """The sizes of the frames GStreamer decodes from H.265 packets (rtph265depay's caps carry no
    size for a byte-stream)."""
    return gstreamer_sizes(packets, "h265", check_announced=False)


def gstreamer_sizes(packets, codec, check_announced):
    """The sizes of the frames GStreamer decodes from the packets (run by /usr/bin/python3)."""
    with tempfile.NamedTemporaryFile(suffix=".rtp") as file:
        file.write(b"".join(struct.pack("!H", len(packet)) + packet for packet in packets))
        file.flush()
        run = subprocess.run([SYSTEM_PYTHON, os.path.abspath(__file__), "--gstreamer", file.name, "--codec", codec],
                             capture_output=True, text=True, timeout=120)
    if run.returncode:
        raise RuntimeError(f"GStreamer side failed: {run.stderr.strip()[-2000:]}")
    result = json.loads(run.stdout)
    if result["error"]:
        raise RuntimeError(f"GStreamer: {result['error']}")
    decoded = [tuple(size) for size in result["sizes"]]
    if result["early_caps"]:
        print(f"  ({result['early_caps']} frame(s) came out under the next size's caps and were sized by their buffers)")
    if not check_announced:
        return decoded
    # rtpvp9depay puts the scalability structure's size into its caps: each new size must be there.
    changes = [size for index, size in enumerate(decoded) if index == 0 or decoded[index - 1] != size]
    if [tuple(size) for size in result["announced"]] != changes:
        raise RuntimeError(f"sizes in the scalability structures {result['announced']}, decoded {changes}")
    return decoded


def gstreamer_side(path, codec):
    """Feeds the length-prefixed RTP packets in `path` to the codec's depacketizer and decoder; prints
    as JSON the decoded frames' sizes, the sizes the depacketizer announced in its caps and the
    pipeline's first error."""
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstVideo", "1.0")
    from gi.repository import Gst, GstVideo

    Gst.init(None)
    encoding, depay_and_decode = GSTREAMER_PIPELINES[codec]
    pipeline = Gst.parse_launch(
        f"appsrc name=src format=time caps=application/x-rtp,media=video,encoding-name={encoding},clock-rate=90000,"
        f"payload={PAYLOAD_TYPE} ! {depay_and_decode} ! appsink name=sink sync=false")
    source, sink = pipeline.get_by_name("src"), pipeline.get_by_name("sink")
    announced = []

    def on_event(pad, info):
        event = info.get_event()
        if event.type == Gst.EventType.CAPS:
            structure = event.parse_caps().get_structure(0)
            announced.append((structure.get_value("width"), structure.get_value("height")))
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("depay").get_static_pad("src").add_probe(Gst.PadProbeType.EVENT_DOWNSTREAM, on_event)
    pipeline.set_state(Gst.State.PLAYING)
    with open(path, "rb") as file:
        data = file.read()
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from("!H", data, pos)
        source.emit("push-buffer", Gst.Buffer.new_wrapped(data[pos + 2:pos + 2 + length]))
        pos += 2 + length
    source.emit("end-of-stream")
    # A frame's size is its caps' size, unless its buffer has the size of the caps before: GStreamer
    # 1.22's libde265dec sets a new size's caps one frame early (it has parsed the new SPS while it
    # still holds the last frame of the old size), so that frame goes out under the new caps.
    sizes, caps_sizes, early = [], [], 0
    while (sample := sink.emit("try-pull-sample", 10 * Gst.SECOND)) is not None:
        info = GstVideo.VideoInfo.new_from_caps(sample.get_caps())
        size = (info.width, info.height)
        if not caps_sizes or caps_sizes[-1][0] != size:
            caps_sizes.append((size, info.size))
        buffer_size = sample.get_buffer().get_size()
        if buffer_size != info.size and len(caps_sizes) > 1 and buffer_size == caps_sizes[-2][1]:
            size = caps_sizes[-2][0]
            early += 1
        sizes.append(size)
    error = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    print(json.dumps({"sizes": sizes, "announced": announced, "early_caps": early,
                      "error": error.parse_error()[0].message if error else None}))


def free_port_pair():
    """An even UDP port whose successor is free too: FFmpeg takes port and port + 1 (RTCP)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rtp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rtcp:
            rtp.bind(("127.0.0.1", 0))
            port = rtp.getsockname()[1]
            if port % 2 == 0 and port < 65535:
                try:
                    rtcp.bind(("127.0.0.1", port + 1))
                    return port
                except OSError:
                    pass


def udp_port_bound(port):
    with open("/proc/net/udp") as table:
        return any(line.split()[1].endswith(f":{port:04X}") for line in table.readlines()[1:])


def send_when_bound(packets, port):
    """Waits for FFmpeg's socket (a packet sent earlier would be lost), then sends, paced so
    that no socket buffer overflows."""
    deadline = time.monotonic() + 10
    while not udp_port_bound(port) and time.monotonic() < deadline:
        time.sleep(0.01)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        for packet in packets:
            sender.sendto(packet, ("127.0.0.1", port))
            time.sleep(0.0005)


def ffmpeg_av1_sizes(packets):
    """The sizes of the frames libdav1d decodes from what FFmpeg's RTP demuxer reassembles."""
    return ffmpeg_sizes(packets, "AV1", "libdav1d")


def ffmpeg_h265_sizes(packets):
    """The sizes of the frames FFmpeg's hevc decoder decodes from what its RTP demuxer reassembles
    (the parameter sets travel in-band, so the SDP needs no sprop-vps, sprop-sps or sprop-pps)."""
    return ffmpeg_sizes(packets, "H265", "hevc")


def ffmpeg_sizes(packets, encoding, decoder_name):
    """The sizes of the frames `decoder_name` decodes from what FFmpeg's RTP demuxer reassembles."""
    import av

    port = free_port_pair()
    sdp = (f"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=depay check\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
           f"m=video {port} RTP/AVP {PAYLOAD_TYPE}\r\na=rtpmap:{PAYLOAD_TYPE} {encoding}/90000\r\n")
    with tempfile.NamedTemporaryFile("w", suffix=".sdp") as file:
        file.write(sdp)
        file.flush()
        threading.Thread(target=send_when_bound, args=(packets, port), daemon=True).start()
        container = av.open(file.name, format="sdp", options={"protocol_whitelist": "file,udp,rtp"},
                            timeout=(10, UDP_QUIET_SECONDS))
    decoder = av.CodecContext.create(decoder_name, "r")
    sizes = []
    try:
        for packet in container.demux():
            if packet.size:
                sizes += [(frame.width, frame.height) for frame in decoder.decode(packet)]
    except av.error.ExitError:
        pass  # PyAV's read timeout: the silence after the last packet
    finally:
        container.close()
    sizes += [(frame.width, frame.height) for frame in decoder.decode(None)]
    return sizes


def padded_av1_encoder():
    """An AV1 encoder that adds three padding OBUs to every fifth temporal unit (decoders skip them)."""
    import video_codecs

    class PaddedAv1Encoder(video_codecs.Av1Encoder):
        count = 0

        def payloads(self, temporal_unit, keyframe):
            self.count += 1
            if self.count % 5 == 0:
                padding = bytes([OBU_PADDING << 3 | video_codecs.OBU_HAS_SIZE_FIELD, 3]) + b"pad"
                temporal_unit += padding * 3
            return super().payloads(temporal_unit, keyframe)

    return PaddedAv1Encoder(KEYFRAME_INTERVAL)


def check(name, encoder, depacketize_and_decode, frames):
    """One run; prints what came back and returns whether every frame did, at its size."""
    expected = [(frame.width, frame.height) for frame in frames]
    packets, keyframes = rtp_packets(encoder, frames)
    try:
        decoded = depacketize_and_decode(packets)
    except Exception as error:  # noqa: BLE001 - any failure of the other side is this check's failure
        print(f"FAIL {name}: {error}")
        return False
    counts = ", ".join(f"{width}x{height}: {decoded.count((width, height))}" for width, height in sorted(set(decoded)))
    ok = decoded == expected
    mismatch = "" if ok else f"; first difference at frame {first_difference(decoded, expected)}"
    print(f"{'ok' if ok else 'FAIL'} {name}: {len(packets)} packets, {keyframes} keyframes sent; "
          f"{len(decoded)} of {len(frames)} frames decoded ({counts}){mismatch}")
    return ok


def first_difference(decoded, expected):
    return next((index for index, (a, b) in enumerate(zip(decoded, expected)) if a != b), min(len(decoded), len(expected)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--gstreamer", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--codec", choices=sorted(GSTREAMER_PIPELINES), default="vp9", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.gstreamer:
        gstreamer_side(args.gstreamer, args.codec)
        return 0

    sys.path.insert(0, os.path.join(HERE, "..", "PythonSupport"))
    try:
        import av

        import video_codecs
    except ImportError as error:
        print(f"depay_check: {error}: run it with the python3 that has PyAV and aiortc (GStreamer's half "
              f"runs with {SYSTEM_PYTHON} on its own)", file=sys.stderr)
        return 2

    frames = pattern_frames(args.frames)
    results = []
    for payload_max in (video_codecs.PAYLOAD_MAX, SMALL_PAYLOAD):
        vp9 = video_codecs.Vp9Encoder(KEYFRAME_INTERVAL)
        av1 = padded_av1_encoder()
        h265_gstreamer = video_codecs.H265Encoder(KEYFRAME_INTERVAL)
        h265_ffmpeg = video_codecs.H265Encoder(KEYFRAME_INTERVAL)
        vp9.payload_max = av1.payload_max = h265_gstreamer.payload_max = h265_ffmpeg.payload_max = payload_max
        results.append(check(f"VP9 -> GStreamer rtpvp9depay, vp9dec (payloads <= {payload_max} bytes)", vp9,
                             gstreamer_vp9_sizes, frames))
        results.append(check(f"AV1 -> FFmpeg {av.ffmpeg_version_info} RTP demuxer, libdav1d (payloads <= {payload_max} bytes)", av1,
                             ffmpeg_av1_sizes, frames))
        results.append(check(f"H265 -> GStreamer rtph265depay, libde265dec (payloads <= {payload_max} bytes)", h265_gstreamer,
                             gstreamer_h265_sizes, frames))
        results.append(check(f"H265 -> FFmpeg {av.ffmpeg_version_info} RTP demuxer, hevc (payloads <= {payload_max} bytes)", h265_ffmpeg,
                             ffmpeg_h265_sizes, frames))
    print(f"depay_check: {results.count(True)} passed, {results.count(False)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
