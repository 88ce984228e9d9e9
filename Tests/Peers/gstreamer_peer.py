#!/usr/bin/python3
"""A second, independent WebRTC peer for recbot's data-channel interop tests:
GStreamer's webrtcbin (libnice for ICE, OpenSSL DTLS, usrsctp for SCTP).

Run with Debian's /usr/bin/python3 (python3-gi and the GStreamer typelibs come
from Debian packages, not PyPI). It offers only an application m-line with two
data channels, exchanges SDP with the test as JSON lines, sends a fixed set of
messages on each channel once it opens, collects what recbot sends back, then
closes "#fast" (an SCTP stream reset), waits for recbot to close "#chat" from its
side, and reports:

  {"type": "offer", "sdp": "..."}                                   (stdout)
  {"type": "answer", "sdp": "..."}                                  (stdin)
  {"type": "opened", "label": "#chat"}                              (stdout)
  {"type": "report", "state": "connected", "opened": [...], "closed": [...],
   "sent": {"#chat": [{"text": ...} | {"hex": ...}]},
   "received": {"#chat": [{"text": ...} | {"hex": ...}]}}           (stdout)
"""
import argparse
import json
import sys
import threading

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("Nice", "0.1")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC, Nice  # noqa: E402

# What the peer sends once a channel is open: more than one SCTP chunk (the
# 5000-byte string), non-ASCII text and binary. No empty message: webrtcbin 1.22
# hands sctpenc a zero-length buffer, which fails and errors the whole channel.
PLANS = {
    "#chat": [
        {"text": "hello from webrtcbin"},
        {"text": "x" * 5000},
        {"text": "こんにちは、レコーダー"},
        {"hex": bytes(range(256)).hex()},
        {"text": "last"},
    ],
    "#fast": [
        {"text": "fast-1"},
        {"text": "fast-2"},
        {"hex": "00ff00ff"},
    ],
}


def bulk_message(index):
    """The test rebuilds these to compare: 16 kB each, numbered."""
    return f"bulk-{index:05d}-" + "b" * 16_000


def emit(message):
    sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def log(text):
    sys.stderr.write(f"gstreamer_peer: {text}\n")
    sys.stderr.flush()


class Peer:
    def __init__(self, args):
        self.args = args
        self.loop = GLib.MainLoop()
        self.pipeline = Gst.Pipeline.new("peer")
        self.webrtc = Gst.ElementFactory.make("webrtcbin", "webrtc")
        if self.webrtc is None:
            raise SystemExit("webrtcbin is missing: install gstreamer1.0-plugins-bad and gstreamer1.0-nice")
        self.webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
        self.pipeline.add(self.webrtc)
        # Loopback only, UDP only: the tests never leave this host, and recbot
        # ignores TCP candidates. An explicit local address stops libnice from
        # gathering every interface. PyGObject takes ownership of the
        # ice-agent it is handed (a floating GstObject), so the wrapper is kept
        # alive as long as webrtcbin: dropping it would free webrtcbin's agent.
        self.ice_agent = self.webrtc.get_property("ice-agent")
        self.ice_agent.set_property("ice-tcp", False)
        loopback = Nice.Address.new()
        loopback.set_from_string("127.0.0.1")
        self.ice_agent.get_property("agent").add_local_address(loopback)
        self.candidates = []
        self.offer_sent = False
        self.channels = {}
        self.opened = []
        self.received = {label: [] for label in PLANS}
        self.closed = []
        self.state = "new"
        self.reported = False
        self.webrtc.connect("on-ice-candidate", self.on_ice_candidate)
        self.webrtc.connect("notify::ice-gathering-state", self.on_gathering_state)
        self.webrtc.connect("notify::connection-state", self.on_connection_state)

    def start(self):
        # Channels are created in READY and the offer only once PLAYING, from
        # the main loop. webrtcbin 1.22 signals negotiation-needed as soon as it
        # reaches READY; an offer made then races the channel's creation and
        # sometimes has no transport to gather candidates for.
        self.pipeline.set_state(Gst.State.READY)
        self.add_channel("#chat", None)
        options = Gst.Structure.new_from_string("application/data-channel, ordered=(boolean)false, max-retransmits=(int)0")
        self.add_channel("#fast", options)
        self.pipeline.set_state(Gst.State.PLAYING)
        GLib.idle_add(self.create_offer)
        GLib.timeout_add(int(self.args.seconds * 1000), self.on_deadline)
        threading.Thread(target=self.read_stdin, daemon=True).start()
        self.loop.run()
        self.pipeline.set_state(Gst.State.NULL)

    # Signaling

    def create_offer(self):
        promise = Gst.Promise.new_with_change_func(self.on_offer_created, None)
        self.webrtc.emit("create-offer", None, promise)
        return False

    def on_offer_created(self, promise, _):
        promise.wait()
        reply = promise.get_reply()
        offer = reply.get_value("offer") if reply is not None and reply.has_field("offer") else None
        if offer is None:
            log(f"create-offer failed: {reply.to_string() if reply is not None else None}")
            GLib.idle_add(self.finish, "failed")
            return
        self.webrtc.emit("set-local-description", offer, Gst.Promise.new())

    def on_ice_candidate(self, _element, mline_index, candidate):
        self.candidates.append(candidate)

    def on_gathering_state(self, *_):
        state = self.webrtc.get_property("ice-gathering-state")
        if state == GstWebRTC.WebRTCICEGatheringState.COMPLETE and not self.offer_sent:
            self.offer_sent = True
            sdp = self.webrtc.get_property("local-description").sdp.as_text()
            emit({"type": "offer", "sdp": self.with_candidates(sdp)})

    def with_candidates(self, sdp):
        """The offer with every gathered candidate (webrtcbin trickles them)."""
        lines = sdp.rstrip("\r\n").split("\r\n")
        missing = [f"a={c}" for c in self.candidates if f"a={c}" not in lines]
        at = next((i for i, line in enumerate(lines) if line.startswith("m=")), len(lines))
        # After the last attribute of the first (bundled) m-section.
        end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith("m=")), len(lines))
        lines[end:end] = missing
        return "\r\n".join(lines) + "\r\n"

    def read_stdin(self):
        for line in sys.stdin:
            message = json.loads(line)
            if message.get("type") == "answer":
                GLib.idle_add(self.apply_answer, message["sdp"])

    def apply_answer(self, text):
        result, sdp = GstSdp.SDPMessage.new_from_text(text)
        if result != GstSdp.SDPResult.OK:
            log(f"unparsable answer: {result}")
            self.finish("failed")
            return False
        answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, sdp)
        self.webrtc.emit("set-remote-description", answer, Gst.Promise.new())
        return False

    def on_connection_state(self, *_):
        state = self.webrtc.get_property("connection-state")
        if state == GstWebRTC.WebRTCPeerConnectionState.CONNECTED:
            self.state = "connected"
        elif state == GstWebRTC.WebRTCPeerConnectionState.FAILED:
            GLib.idle_add(self.finish, "failed")

    # Data channels

    def add_channel(self, label, options):
        channel = self.webrtc.emit("create-data-channel", label, options)
        if channel is None:
            raise SystemExit(f"webrtcbin refused to create {label}")
        self.channels[label] = channel
        channel.connect("on-open", lambda ch: GLib.idle_add(self.on_open, label))
        channel.connect("on-close", lambda ch: GLib.idle_add(self.on_close, label))
        channel.connect("on-error", lambda ch, error: log(f"{label} error: {error}"))
        # Empty messages arrive as None.
        channel.connect("on-message-string", lambda ch, text: GLib.idle_add(self.on_message, label, {"text": text or ""}))
        channel.connect(
            "on-message-data",
            lambda ch, data: GLib.idle_add(self.on_message, label, {"hex": data.get_data().hex() if data is not None else ""}),
        )

    def on_open(self, label):
        self.opened.append(label)
        emit({"type": "opened", "label": label})
        channel = self.channels[label]
        for entry in PLANS[label]:
            if "text" in entry:
                channel.emit("send-string", entry["text"])
            else:
                channel.emit("send-data", GLib.Bytes.new(bytes.fromhex(entry["hex"])))
        return False

    def on_message(self, label, entry):
        self.received[label].append(entry)
        if sum(len(v) for v in self.received.values()) == self.args.expect:
            # Everything recbot sends has arrived. Now volume: more than recbot's receive
            # window in one burst on "#chat", so usrsctp's flow and congestion control run
            # against its SACKs. (Only after the "#fast" messages: with max-retransmits 0
            # they are abandoned, as they should be, if a burst drops them.) Then close
            # "#fast" (stream reset); recbot closes "#chat" from its side; report once both
            # are closed both ways.
            for index in range(self.args.bulk):
                self.channels["#chat"].emit("send-string", bulk_message(index))
            self.channels["#fast"].emit("close")
            # A cap, not the expected time: on a loaded 2-core machine the burst and both closes
            # have taken over 5 s (other suites run meanwhile); --seconds still bounds the run.
            GLib.timeout_add(15000, self.finish, self.state)
        return False

    def on_close(self, label):
        self.closed.append(label)
        if set(self.closed) >= set(PLANS):
            # webrtcbin signals on-close when our side is reset, while its own reset of
            # the stream may still be queued in usrsctp: let it go out before stopping.
            GLib.timeout_add(500, self.finish, self.state)
        return False

    def on_deadline(self):
        self.finish(self.state if self.state != "connected" else "timeout")
        return False

    def finish(self, state):
        if self.reported:
            return False
        self.reported = True
        emit({
            "type": "report",
            "state": state,
            "opened": self.opened,
            "closed": self.closed,
            "sent": {label: PLANS[label] for label in self.opened},
            "bulk": self.args.bulk,
            "received": self.received,
        })
        self.loop.quit()
        return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0, help="give up (and report) after this long")
    parser.add_argument("--expect", type=int, default=0, help="report once this many messages arrived from recbot")
    parser.add_argument("--bulk", type=int, default=0, help="then send this many 16 kB messages on #chat")
    args = parser.parse_args()
    Gst.init(None)
    Peer(args).start()


if __name__ == "__main__":
    main()
