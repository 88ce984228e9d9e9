#!/usr/bin/env python3
"""aiortc's own SCTP codec as an independent reference for recbot's.

  sctp_vectors.py make         -> JSON list of packets built by aiortc, with their fields
  sctp_vectors.py parse < hex  -> JSON of what aiortc parses from each hex line
"""
import json
import sys

from aiortc import rtcsctptransport as s


def fields(chunk):
    out = {"type": chunk.type, "flags": chunk.flags}
    for name in ("initiate_tag", "advertised_rwnd", "outbound_streams", "inbound_streams", "initial_tsn", "tsn", "stream_id",
                 "stream_seq", "protocol", "cumulative_tsn"):
        if hasattr(chunk, name):
            out[name] = getattr(chunk, name)
    if hasattr(chunk, "user_data"):
        out["user_data"] = chunk.user_data.hex()
    if hasattr(chunk, "params"):
        out["params"] = [[t, v.hex()] for t, v in chunk.params]
    if hasattr(chunk, "gaps"):
        out["gaps"] = [list(g) for g in chunk.gaps]
        out["duplicates"] = list(chunk.duplicates)
    if hasattr(chunk, "streams"):
        out["streams"] = [list(x) for x in chunk.streams]
    if isinstance(chunk, s.CookieEchoChunk):
        out["body"] = chunk.body.hex()
    return out


def make():
    vectors = []

    def add(name, chunk, tag=0x01020304):
        data = s.serialize_packet(5000, 5000, tag, chunk)
        vectors.append({"name": name, "hex": data.hex(), "tag": tag, "chunk": fields(chunk)})

    init = s.InitChunk()
    init.initiate_tag, init.advertised_rwnd, init.outbound_streams, init.inbound_streams, init.initial_tsn = 0x12345678, 131072, 65535, 65535, 0xABCDEF01
    init.params = [(0x8008, bytes([192, 130])), (0xC000, b"")]
    add("init", init, tag=0)
    ack = s.InitAckChunk()
    ack.initiate_tag, ack.advertised_rwnd, ack.outbound_streams, ack.inbound_streams, ack.initial_tsn = 0x0BADCAFE, 65536, 1024, 2048, 7
    ack.params = [(7, b"state-cookie-bytes!")]
    add("init-ack", ack)
    for name, flags in (("data-ordered", 0x03), ("data-unordered-middle", 0x04), ("data-first-fragment", 0x02)):
        data = s.DataChunk(flags=flags)
        data.tsn, data.stream_id, data.stream_seq, data.protocol, data.user_data = 0xFFFFFFFE, 3, 9, 51, "héllo".encode()
        add(name, data)
    sack = s.SackChunk()
    sack.cumulative_tsn, sack.advertised_rwnd, sack.gaps, sack.duplicates = 100, 4096, [(2, 3), (5, 5)], [99, 98]
    add("sack", sack)
    forward = s.ForwardTsnChunk()
    forward.cumulative_tsn, forward.streams = 200, [(1, 5), (2, 7)]
    add("forward-tsn", forward)
    reconfig = s.ReconfigChunk()
    reconfig.params = [(13, bytes(s.StreamResetOutgoingParam(request_sequence=5, response_sequence=4, last_tsn=150, streams=[1, 3])))]
    add("reconfig", reconfig)
    shutdown = s.ShutdownChunk()
    shutdown.cumulative_tsn = 300
    add("shutdown", shutdown)
    add("cookie-echo", s.CookieEchoChunk(body=b"xyz-cookie"))
    heartbeat = s.HeartbeatChunk()
    heartbeat.params = [(1, b"heartbeat-info")]
    add("heartbeat", heartbeat)
    add("cookie-ack", s.CookieAckChunk())
    print(json.dumps(vectors))


def parse():
    results = []
    for line in sys.stdin.read().split():
        source, destination, tag, chunks = s.parse_packet(bytes.fromhex(line))
        results.append({"source": source, "destination": destination, "tag": tag, "chunks": [fields(c) for c in chunks]})
    print(json.dumps(results))


if __name__ == "__main__":
    {"make": make, "parse": parse}[sys.argv[1]]()
