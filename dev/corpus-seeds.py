#!/usr/bin/env python3
"""Turns the captured libwebrtc streams (Tests/Corpus/libwebrtc-janus/*.pcap, made by
dev/capture-corpus.sh) into fuzz seeds (Tests/Fuzz/corpus/<target>/libwebrtc-*):
- rtp: the first packet of each stream (its header extensions as libwebrtc and Janus set them),
  the first RTX packet, and the first RTCP compound;
- depacketizers (VP8, H.264, Opus), vp9, av1: the first whole video frame's payloads, and an
  audio packet, each payload behind a length byte as those targets split their input (a payload
  is cut at 255 bytes: the descriptors and the frame's start are what matter as a seed).
Run it after capture-corpus.sh and commit the seeds with the captures."""
import glob
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CAPTURES = os.path.join(ROOT, "Tests", "Corpus", "libwebrtc-janus")
SEEDS = os.path.join(ROOT, "Tests", "Fuzz", "corpus")


def packets(path):
    data = open(path, "rb").read()
    offset = 24
    while offset + 16 <= len(data):
        _, _, length, _ = struct.unpack("<IIII", data[offset:offset + 16])
        offset += 16
        yield data[offset + 28:offset + length]
        offset += length


def rtp_payload(packet):
    count = packet[0] & 0x0F
    start = 12 + 4 * count
    if packet[0] & 0x10:
        words = struct.unpack(">H", packet[start + 2:start + 4])[0]
        start += 4 + 4 * words
    end = len(packet) - (packet[-1] if packet[0] & 0x20 else 0)
    return packet[start:end]


def framed(payloads):
    out = b""
    for payload in payloads[:64]:
        payload = payload[:255]
        out += bytes([len(payload)]) + payload
    return out


def write(target, name, data):
    os.makedirs(os.path.join(SEEDS, target), exist_ok=True)
    with open(os.path.join(SEEDS, target, name), "wb") as seed:
        seed.write(data)


def main():
    for path in sorted(glob.glob(os.path.join(CAPTURES, "*.pcap"))):
        codec = os.path.basename(path)[:-5]
        seen, frame, frame_ts, video_ssrc, wrote_rtcp, audio = set(), [], None, None, False, None
        for packet in packets(path):
            if len(packet) < 12:
                continue
            if 200 <= packet[1] <= 206:
                if not wrote_rtcp:
                    write("rtp", f"libwebrtc-{codec}-rtcp", packet)
                    wrote_rtcp = True
                continue
            ssrc, pt = struct.unpack(">I", packet[8:12])[0], packet[1] & 0x7F
            if (ssrc, pt) not in seen:
                seen.add((ssrc, pt))
                write("rtp", f"libwebrtc-{codec}-pt{pt}", packet)
            payload = rtp_payload(packet)
            if pt == 111:
                if audio is None and payload:
                    audio = payload
                continue
            if video_ssrc is None:
                video_ssrc, frame_ts = ssrc, packet[4:8]
            if ssrc == video_ssrc and packet[4:8] == frame_ts and payload:
                frame.append(payload)
        target = {"vp8": "depacketizers", "h264": "depacketizers", "vp9": "vp9", "av1": "av1"}[codec]
        write(target, f"libwebrtc-{codec}-frame", framed(frame))
        if audio is not None and codec == "vp8":
            write("depacketizers", "libwebrtc-opus", framed([audio]))
        print(f"corpus-seeds: {codec}: {len(seen)} streams, first frame in {len(frame)} packets")


if __name__ == "__main__":
    main()
