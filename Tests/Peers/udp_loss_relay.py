"""A small asyncio UDP relay between an ICE-lite server (Janus) and one recorder, which drops a
share of the SRTP/SRTCP datagrams going to the recorder: loss on the SFU -> recorder path without
root or firewall rules (sora_janus_server.py --loss PERCENT).

The recorder is told the relay's address as the server's only candidate. The relay works like a
port-restricted NAT: every address the recorder sends from gets a socket of its own towards the
server, so the server (ICE lite: it answers checks, never makes them) sees each as a
peer-reflexive candidate and answers through it, and the answers go back to the right address.

What is dropped: only datagrams from the server to the recorder whose first byte is 128-191
(RFC 7983: RTP and RTCP, here SRTP and SRTCP), PERCENT % of them, decided by a random.Random(seed)
drawn once per such datagram in arrival order: the same seed drops the same ordinal datagrams.
STUN (0-3), DTLS (20-63) and everything from the recorder pass untouched. `stats` counts what
went each way, by kind, and what was dropped.

`delay_ms` holds every datagram, both ways, that long (order kept): a lossy path is never a
0.1 ms one, and Janus needs a round trip of at least 1 ms to keep packets for resending at all
(it measures the RTT in whole milliseconds and sizes its resend queue only when that changes
from 0; on loopback it stays 0, and nothing lost is ever resent).
"""
import asyncio
import os
import random
import re
import time


def kind_of(data):
    first = data[0] if data else -1
    if 0 <= first <= 3:
        return "stun"
    if 20 <= first <= 63:
        return "dtls"
    if 128 <= first <= 191:
        return "rtp"
    return "other"


class _Listener(asyncio.DatagramProtocol):
    def __init__(self, relay):
        self.relay = relay

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, address):
        self.relay.from_recorder(data, address)


class _Upstream(asyncio.DatagramProtocol):
    """The socket towards the server for one recorder address."""

    def __init__(self, relay, recorder_address):
        self.relay = relay
        self.recorder_address = recorder_address
        self.transport = None
        self.waiting = []  # datagrams from the recorder before the socket is up

    def connection_made(self, transport):
        self.transport = transport
        for data in self.waiting:
            transport.sendto(data)
        self.waiting = []

    def datagram_received(self, data, address):
        self.relay.from_server(data, self.recorder_address)

    def send(self, data):
        if self.transport is None:
            self.waiting.append(data)
        else:
            self.transport.sendto(data)


class LossRelay:
    def __init__(self, server_address, bind_host, percent=0.0, seed=1, delay_ms=0.0):
        self.server_address = tuple(server_address)
        self.delay = max(0.0, float(delay_ms)) / 1000
        self.bind_host = bind_host
        self.percent = float(percent)
        self.seed = seed
        self.rng = random.Random(seed)
        self.listener = None
        self.upstreams = {}  # recorder address -> _Upstream
        trace = os.environ.get("RECBOT_RELAY_TRACE")
        self.trace_file = open(trace, "a", buffering=1) if trace else None
        self.stats = {"loss_percent": self.percent, "seed": seed, "delay_ms": float(delay_ms), "server": list(self.server_address), "relay": None,
                      "recorder_addresses": [],
                      "to_recorder": {"rtp_forwarded": 0, "rtp_dropped": 0, "stun": 0, "dtls": 0, "other": 0},
                      "to_server": {"rtp": 0, "stun": 0, "dtls": 0, "other": 0}}

    @property
    def address(self):
        return self.listener.get_extra_info("sockname")[:2]

    async def start(self):
        loop = asyncio.get_running_loop()
        self.listener, _ = await loop.create_datagram_endpoint(lambda: _Listener(self), local_addr=(self.bind_host, 0))
        self.stats["relay"] = list(self.address)
        return self

    def close(self):
        for upstream in self.upstreams.values():
            if upstream.transport is not None:
                upstream.transport.close()
        if self.listener is not None:
            self.listener.close()

    def trace(self, direction, data, dropped=False):
        """RECBOT_RELAY_TRACE=FILE: one line per SRTP/SRTCP datagram (the headers are in the
        clear): time, direction, dropped, size, payload type, SSRC, sequence number."""
        if self.trace_file is None or len(data) < 12 or kind_of(data) != "rtp":
            return
        pt = data[1]
        rtcp = 192 <= pt <= 223  # RFC 5761: RTCP packet types share the byte with RTP's marker and payload type
        ssrc = int.from_bytes(data[4:8] if rtcp else data[8:12], "big")
        seq = 0 if rtcp else int.from_bytes(data[2:4], "big")
        self.trace_file.write(f"{time.monotonic():.4f} {direction} {int(dropped)} {len(data)} {pt} {ssrc} {seq}\n")

    def from_recorder(self, data, address):
        self.trace("up", data)
        self.stats["to_server"][kind_of(data)] += 1
        upstream = self.upstreams.get(address)
        if upstream is None:
            upstream = self.upstreams[address] = _Upstream(self, address)
            self.stats["recorder_addresses"].append(list(address))
            asyncio.ensure_future(asyncio.get_running_loop().create_datagram_endpoint(
                lambda: upstream, local_addr=(self.bind_host, 0), remote_addr=self.server_address))
        self.later(upstream.send, data)

    def later(self, send, data):
        """`send(data)` after the path's delay (call_later keeps the order of equal delays)."""
        if self.delay > 0:
            asyncio.get_running_loop().call_later(self.delay, send, data)
        else:
            send(data)

    def from_server(self, data, recorder_address):
        kind = kind_of(data)
        counts = self.stats["to_recorder"]
        if kind == "rtp":
            if self.percent > 0 and self.rng.random() * 100 < self.percent:
                counts["rtp_dropped"] += 1
                self.trace("down", data, dropped=True)
                return
            self.trace("down", data)
            counts["rtp_forwarded"] += 1
        else:
            counts[kind] += 1
        self.later(lambda payload: self.listener.sendto(payload, recorder_address), data)

    # --- the SDP the recorder sees ---

    @staticmethod
    def server_candidate(sdp):
        """(ip, port) of the offer's best UDP host candidate (Janus: ICE lite, one host candidate)."""
        best = None
        for match in re.finditer(r"^a=candidate:\S+ (\d+) (\S+) (\d+) (\S+) (\d+) typ (\S+)", sdp, re.M | re.I):
            component, transport, priority, ip, port, kind = match.groups()
            if component != "1" or transport.lower() != "udp" or ":" in ip:
                continue
            if best is None or int(priority) > best[0]:
                best = (int(priority), ip, int(port))
        return (best[1], best[2]) if best else None

    def rewrite(self, sdp):
        """The offer with the relay as the server's only candidate (other candidates removed)."""
        relay_ip, relay_port = self.address
        server_ip, server_port = self.server_address
        out = []
        for line in sdp.replace("\r\n", "\n").split("\n"):
            match = re.match(r"a=candidate:(\S+) (\d+) (\S+) (\d+) (\S+) (\d+) (typ .*)$", line, re.I)
            if match:
                foundation, component, transport, priority, ip, port, rest = match.groups()
                if (ip, int(port)) != (server_ip, server_port):
                    continue  # only the relayed path exists for the recorder
                line = f"a=candidate:{foundation} {component} {transport} {priority} {relay_ip} {relay_port} {rest}"
            elif line.startswith("m=") and line.split()[1] == str(server_port):
                parts = line.split()
                parts[1] = str(relay_port)
                line = " ".join(parts)
            elif line == f"c=IN IP4 {server_ip}":
                line = f"c=IN IP4 {relay_ip}"
            out.append(line)
        return "\r\n".join(line for line in out if line) + "\r\n"
