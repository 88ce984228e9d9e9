#!/usr/bin/python3
"""gst_recorder.py: a baseline Sora recorder built on GStreamer's webrtcbin, for bench/bench.sh.

Why: issue 13 asks how recbot's CPU and memory compare with an off-the-shelf stack doing the same
job on the same load. This is that other stack: a recvonly Sora client that remuxes every
publisher's RTP into WebM (no decoding, no transcoding), so the benchmark can run it and recbot
against identical sessions of the test server (Tests/Peers/sora_test_server.py) and compare.
It is independent of recbot: GStreamer does ICE (libnice), DTLS-SRTP, jitter buffering, NACK and
RTX; Python only does the signaling and builds the pipeline.

  /usr/bin/python3 bench/gst_recorder.py --url ws://127.0.0.1:PORT/signaling \
      --channel CHANNEL --out DIR [--duration SECONDS]

Run it with Debian's /usr/bin/python3 (python3-gi, the GStreamer typelibs and python3-websockets
are Debian packages; deploy/install-deps.sh installs them). Logs go to stderr; at the end it prints
one JSON line on stdout:

  {"type": "report", "files": ["DIR/<connection_id>.webm", ...], "publishers": N}

What it does:
- Signaling (docs sora-protocol.md): `connect` as recvonly on the WebSocket; answers `offer` and
  `re-offer` (publishers joining or leaving) with `answer` / `re-answer`; trickles its ICE
  candidates as `candidate`; answers `ping` with `pong`; ignores `notify` and `push`; follows a
  `redirect`. It stops on `disconnect`, on the WebSocket closing, on SIGINT/SIGTERM or after
  --duration, sends `{"type": "disconnect"}` (when the socket is still open) and finalizes files.
- webrtcbin: bundle-policy max-bundle, latency 200 ms (--latency), do-nack on the transceivers
  whose section offers `a=rtcp-fb:PT nack` (video; webrtcbin then also repairs from the offer's
  RTX, apt and FID group). webrtcbin 1.22 needs two corrections for NACK to work at all, made
  here (see on_new_jitterbuffer and on_element_added): it gives every jitter buffer the do-nack
  of one transceiver instead of the stream's own, so do-retransmission is set per jitter buffer;
  its RTP session sends feedback only in early-RTCP mode (one packet per regular interval,
  about 1 s here) once it sees more than 3 sources, so immediate feedback is forced and the
  receiver gets its own RTCP budget (--rtcp-bandwidth, 100 kbit/s). Before, the test server's
  --loss 5 cost half of the video frames (keyframe waits); after, none. Also, rtpbin's lip sync
  moves a stream's timestamps by up to ~150 ms at once when an SR comes; limited to 1 ms a buffer.
- Every webrtcbin source pad is mapped to its publisher through the remote SDP: the transceiver's
  mid names an m-section, whose `a=msid:<stream id> <track>` stream id is the publisher's
  connection id. Each publisher gets ONE file, DIR/<connection_id>.webm: one webmmux, with a
  request pad for each kind the SDP says that publisher sends (an active VP8/VP9 video section,
  an active Opus audio section), requested when the first of its pads appears. Each track is
  webrtcbin pad -> queue -> rtpvp8depay|rtpvp9depay|rtpopusdepay+opusparse -> webmmux, linked when its
  pad comes, in either order; the queue holds the first track while the muxer waits for the
  second. A kind whose pad has not come --track-wait seconds (5) after the publisher's first one
  has its muxer pad released, so the file goes on without it; a pad that comes after that, or of a
  codec WebM cannot take (H.264, H.265, AV1 here), goes to a fakesink (logged).
- A publisher whose sections a re-offer turns off (port 0 or inactive) has its file finalized
  then; the others at the end: buffers from webrtcbin are dropped from then on, EOS goes into
  each branch's queue, and the file counts as written once EOS reaches its filesink.
- Python threads: two, whatever the number of publishers (asyncio for the WebSocket, a GLib main
  loop for GStreamer). GStreamer's own streaming threads are per stream, as webrtcbin makes them
  (a jitter buffer and a queue per track). Python runs per pad and per signaling message, never
  per packet or frame.

Not done: data-channel signaling (connect says data_channel_signaling false; a server that
forces it is not followed), simulcast and spotlight choices, H.265/AV1 recording (WebM takes VP8,
VP9 and Opus here; GStreamer 1.22 has no rtpav1depay; H.264 only with --h264-matroska, into a
Matroska file of its own), stats in `pong`. With BUNDLE every stream shares one transport in
webrtcbin, so a flow error in one branch (e.g. a caps the muxer refuses) stops the whole receive
path: the branches here are plain remuxes and the test server's streams all negotiate.
"""
import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("Nice", "0.1")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC, Nice  # noqa: E402

try:
    import websockets  # Debian's python3-websockets (10.x) or any newer release
except ImportError:  # pragma: no cover - an installation problem, said plainly
    sys.exit("gst_recorder: the websockets package is missing: apt-get install python3-websockets")

# Depayloader (and parser) per RTP encoding name, for what WebM can hold. Nothing decodes:
# opusparse only completes the caps (rtpopusdepay 1.22 gives no rate, which webmmux requires).
DEPAYLOADERS = {"VP8": ("video", ["rtpvp8depay"]), "VP9": ("video", ["rtpvp9depay"]),
                "OPUS": ("audio", ["rtpopusdepay", "opusparse"])}
STARTED = time.monotonic()


def log(text):
    sys.stderr.write(f"gst_recorder {time.monotonic() - STARTED:8.3f}: {text}\n")
    sys.stderr.flush()


def parse_sdp_sections(text):
    """The media sections of an SDP: kind, port, mid, direction, msid stream id and the first
    codec name of each, in m-line order."""
    sections = []
    for line in text.splitlines():
        if line.startswith("m="):
            fields = line[2:].split()
            sections.append({"kind": fields[0], "port": fields[1] if len(fields) > 1 else "0",
                             "formats": fields[3:], "mid": None, "direction": "sendrecv", "msid": None, "codecs": {}})
        elif not sections:
            continue
        elif line.startswith("a=mid:"):
            sections[-1]["mid"] = line[len("a=mid:"):].strip()
        elif line.startswith("a=msid:"):
            sections[-1]["msid"] = line[len("a=msid:"):].split()[0] if line[len("a=msid:"):].split() else None
        elif line in ("a=sendonly", "a=recvonly", "a=sendrecv", "a=inactive"):
            sections[-1]["direction"] = line[2:]
        elif line.startswith("a=rtpmap:"):
            pt, _, rest = line[len("a=rtpmap:"):].partition(" ")
            sections[-1]["codecs"][pt] = rest.split("/")[0].upper()
        elif line.startswith("a=rtcp-fb:") and line.split()[1:] == ["nack"]:
            sections[-1]["nack"] = True
        elif line.startswith("a=ssrc:"):
            sections[-1].setdefault("ssrcs", set()).add(int(line[len("a=ssrc:"):].split()[0]))
    for section in sections:
        section["codec"] = next((section["codecs"].get(pt) for pt in section["formats"] if pt in section["codecs"]), None)
        # What the server sends us: its side must send, and the section must not be released.
        section["active"] = section["port"] != "0" and section["direction"] in ("sendonly", "sendrecv")
    return sections


class Publisher:
    """One publisher's recording: webmmux -> filesink, and a branch per track linked into it."""

    def __init__(self, recorder, connection_id, kinds, matroska=False):
        self.recorder = recorder
        self.connection_id = connection_id
        # --h264-matroska: a publisher that sends H.264 goes to Matroska (WebM cannot hold it).
        self.path = os.path.join(recorder.args.out, f"{connection_id}.{'mkv' if matroska else 'webm'}")
        self.pipeline = recorder.pipeline
        self.mux = Gst.ElementFactory.make("matroskamux" if matroska else "webmmux", None)
        self.sink = Gst.ElementFactory.make("filesink", None)
        self.sink.set_property("location", self.path)
        # A recording, not a playback: write as data comes, never wait for the clock or preroll.
        self.sink.set_property("sync", False)
        self.sink.set_property("async", False)
        self.mux.set_property("offset-to-zero", True)
        self.pipeline.add(self.mux)
        self.pipeline.add(self.sink)
        self.mux.link(self.sink)
        # Request pads now, before data: webmmux (GstCollectPads) cannot take new pads once it has
        # written its header. It waits for data on every pad, so a kind that never comes is released.
        self.mux_pads = {kind: self.mux.request_pad_simple(f"{kind}_%u") for kind in sorted(kinds)}
        self.branches = {}  # kind -> (webrtcbin pad, queue)
        self.extra = []  # (webrtcbin pad, fakesink) for pads we do not record
        self.finalizing = False
        self.done = threading.Event()
        self.sink.get_static_pad("sink").add_probe(Gst.PadProbeType.EVENT_DOWNSTREAM, self.on_sink_event)
        self.mux.sync_state_with_parent()
        self.sink.sync_state_with_parent()
        GLib.timeout_add(int(recorder.args.track_wait * 1000), self.release_missing)
        log(f"publisher {connection_id}: recording {'+'.join(sorted(kinds))} to {self.path}")

    def on_sink_event(self, _pad, info):
        if info.get_event().type == Gst.EventType.EOS:
            log(f"publisher {self.connection_id}: file finalized")
            self.done.set()
            self.recorder.on_publisher_done()
        return Gst.PadProbeReturn.OK

    def attach(self, pad, kind, encoding):
        """Called with the recorder's lock held, from a streaming thread."""
        chain = DEPAYLOADERS.get(encoding, (None, None))[1]
        mux_pad = self.mux_pads.get(kind)
        if self.finalizing or chain is None or mux_pad is None or kind in self.branches:
            why = ("finalizing" if self.finalizing else f"{encoding} is not recorded" if chain is None
                   else f"its {kind} track was given up or is already recorded")
            log(f"publisher {self.connection_id}: pad {pad.get_name()} ({kind} {encoding}) to fakesink: {why}")
            self.extra.append((pad, self.recorder.discard(pad)))
            return
        queue = Gst.ElementFactory.make("queue", None)
        # Room for the first track while the muxer waits for the second (up to --track-wait).
        queue.set_property("max-size-buffers", 0)
        queue.set_property("max-size-bytes", 0)
        queue.set_property("max-size-time", int((self.recorder.args.track_wait + 5) * Gst.SECOND))
        elements = [queue] + [Gst.ElementFactory.make(name, None) for name in chain]
        if kind == "video":
            # Start on a keyframe, and ask for one (PLI) when packets are missing.
            elements[1].set_property("wait-for-keyframe", True)
            elements[1].set_property("request-keyframe", True)
        for element in elements:
            self.pipeline.add(element)
        for upstream, downstream in zip(elements, elements[1:]):
            upstream.link(downstream)
        if elements[-1].get_static_pad("src").link(mux_pad) != Gst.PadLinkReturn.OK:
            log(f"publisher {self.connection_id}: cannot link {chain[-1]} to {mux_pad.get_name()}")
        for element in reversed(elements):
            element.sync_state_with_parent()
        result = pad.link(queue.get_static_pad("sink"))
        if result != Gst.PadLinkReturn.OK:
            log(f"publisher {self.connection_id}: cannot link {pad.get_name()}: {result}")
        self.branches[kind] = (pad, queue)
        log(f"publisher {self.connection_id}: {kind} {encoding} from {pad.get_name()}")

    def release_missing(self):
        """GLib main loop: give up the kinds whose pads did not come in time."""
        with self.recorder.lock:
            if self.finalizing:
                return False
            for kind in [k for k in self.mux_pads if k not in self.branches]:
                log(f"publisher {self.connection_id}: no {kind} after {self.recorder.args.track_wait:g} s, recording without it")
                self.mux.release_request_pad(self.mux_pads.pop(kind))
        return False

    def finalize(self):
        """Stop taking data and send EOS down every branch (GLib main loop)."""
        with self.recorder.lock:
            if self.finalizing:
                return
            self.finalizing = True
            for kind in [k for k in self.mux_pads if k not in self.branches]:
                self.mux.release_request_pad(self.mux_pads.pop(kind))
            branches = list(self.branches.values())
        # Events go out without the lock: a queue's sink may take a moment to accept one.
        for pad, queue in branches:
            pad.add_probe(Gst.PadProbeType.BUFFER | Gst.PadProbeType.BUFFER_LIST, lambda *_: Gst.PadProbeReturn.DROP)
            queue.get_static_pad("sink").send_event(Gst.Event.new_eos())
        log(f"publisher {self.connection_id}: finalizing")


class Recorder:
    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.publishers = {}  # connection id -> Publisher
        self.sections = {}  # mid -> section of the current remote description
        self.aloop = None
        self.outbox = None
        self.stopping = None  # asyncio.Event
        self.all_done = threading.Event()
        self.transceiver_count = 0
        self.nack_count = 0
        self.section_list = []
        self.glib_loop = GLib.MainLoop()

        self.pipeline = Gst.Pipeline.new("gst-recorder")
        self.webrtc = Gst.ElementFactory.make("webrtcbin", "webrtc")
        if self.webrtc is None:
            sys.exit("gst_recorder: webrtcbin is missing: install gstreamer1.0-plugins-bad and gstreamer1.0-nice")
        self.webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
        self.webrtc.set_property("latency", args.latency)
        self.pipeline.add(self.webrtc)
        # Keep the ice-agent wrapper alive as long as webrtcbin (PyGObject owns the reference it got).
        self.ice_agent = self.webrtc.get_property("ice-agent")
        self.ice_agent.set_property("ice-tcp", False)
        for address in args.ice_address:
            nice_address = Nice.Address.new()
            if not nice_address.set_from_string(address):
                sys.exit(f"gst_recorder: --ice-address {address}: not an IP address")
            self.ice_agent.get_property("agent").add_local_address(nice_address)
        self.webrtc.connect("on-ice-candidate", self.on_ice_candidate)
        self.webrtc.connect("on-new-transceiver", self.on_new_transceiver)
        self.webrtc.connect("pad-added", self.on_pad_added)
        self.webrtc.connect("notify::connection-state", self.on_connection_state)
        self.pipeline.connect("deep-element-added", self.on_element_added)
        # webrtcbin 1.22 gives every jitter buffer the do-nack of one transceiver, not of the
        # stream's own (here: none NACKed whenever the last section was audio). Set it per stream.
        self.jitterbuffers = {}  # (session, ssrc) -> rtpjitterbuffer
        self.webrtc.get_by_name("rtpbin").connect("new-jitterbuffer", self.on_new_jitterbuffer)
        # rtpbin lines up each publisher's audio and video by their RTCP SRs, moving a jitter
        # buffer's ts-offset at once by whatever the next SR says: timestamps then step back by up
        # to ~150 ms in the file when the sender is loaded. Move it by at most 1 ms per buffer.
        self.webrtc.get_by_name("rtpbin").set_property("max-ts-offset-adjustment", Gst.MSECOND)
        bus = self.pipeline.get_bus()
        bus.add_signal_watch()
        bus.connect("message", self.on_bus_message)

    # Threads: the asyncio loop (WebSocket) and the GLib main loop (GStreamer signals, timers).

    def to_server(self, message):
        """Any thread: queue a message for the WebSocket, in order."""
        self.aloop.call_soon_threadsafe(self.outbox.put_nowait, message)

    def request_stop(self, why):
        """Any thread: end the session."""
        def stop():
            if not self.stopping.is_set():
                log(f"stopping: {why}")
                self.stopping.set()
        self.aloop.call_soon_threadsafe(stop)

    def on_bus_message(self, _bus, message):
        if message.type == Gst.MessageType.ERROR:
            error, debug = message.parse_error()
            log(f"error from {message.src.get_name()}: {error.message} ({debug})")
        elif message.type == Gst.MessageType.WARNING:
            warning, _ = message.parse_warning()
            log(f"warning from {message.src.get_name()}: {warning.message}")

    def on_element_added(self, _bin, _parent, element):
        factory = element.get_factory()
        if factory is not None and factory.get_name() == "rtpsession":
            # Send NACKs (and PLIs) at once, as RFC 4585 immediate feedback mode. Left to itself the
            # session uses early-RTCP mode when it sees more than 3 sources, which with BUNDLE means
            # any session with two publishers: then feedback waits for a slot in the regular RTCP
            # schedule (about a second at the default bandwidth), and a retransmission comes back
            # after the jitter buffer (200 ms) has given the packet up.
            element.get_property("internal-session").set_property("rtcp-immediate-feedback-threshold", 1 << 30)
            # Even then one early RTCP is allowed per regular interval, and the regular interval
            # follows the RTCP bandwidth, by default 5 % of a guessed 64 kbit/s shared by every
            # source: about a second, so most NACKs expired unsent and a 5 % loss cost half the
            # frames (keyframe waits). The only receiver gets its own RTCP budget instead.
            element.set_property("rtcp-rr-bandwidth", self.args.rtcp_bandwidth)
            element.set_property("rtcp-rs-bandwidth", 0)

    def on_new_jitterbuffer(self, _rtpbin, jitterbuffer, session, ssrc):
        """Streaming thread. When the SDP lists the SSRC (a=ssrc), NACK as its section says; else
        on_pad_added decides once the stream's pad exists."""
        with self.lock:
            self.jitterbuffers[(session, ssrc)] = jitterbuffer
            section = next((s for s in self.section_list if ssrc in s.get("ssrcs", ())), None)
        if section is not None:
            jitterbuffer.set_property("do-retransmission", section.get("nack", False))

    def set_nack_for_pad(self, pad, transceiver):
        """The jitter buffer feeding this webrtcbin pad NACKs as the pad's transceiver says. The
        pad's target is rtpbin's recv_rtp_src_SESSION_SSRC_PT."""
        target = pad.get_target() if isinstance(pad, Gst.GhostPad) else None
        fields = target.get_name().split("_") if target is not None else []
        if len(fields) == 6 and transceiver is not None:
            with self.lock:
                jitterbuffer = self.jitterbuffers.get((int(fields[3]), int(fields[4])))
            if jitterbuffer is not None:
                jitterbuffer.set_property("do-retransmission", transceiver.get_property("do-nack"))

    def on_connection_state(self, *_):
        state = self.webrtc.get_property("connection-state")
        log(f"connection state {state.value_nick}")
        if state == GstWebRTC.WebRTCPeerConnectionState.FAILED:
            self.request_stop("the peer connection failed")

    def on_new_transceiver(self, _webrtc, transceiver):
        # webrtcbin makes a transceiver for each offered section while answering (this client adds
        # none). Where the offer says the sender takes generic NACK (rtcp-fb nack: video here, with
        # RTX), have its jitter buffer ask for retransmissions; webrtcbin then also sets up RTX
        # repair from the offer's rtx payload types (apt) and FID groups.
        index = transceiver.get_property("mlineindex")
        with self.lock:
            section = self.section_list[index] if 0 <= index < len(self.section_list) else None
        nack = section.get("nack", False) if section is not None else transceiver.get_property("kind") == GstWebRTC.WebRTCKind.VIDEO
        transceiver.set_property("do-nack", nack)
        self.transceiver_count += 1
        self.nack_count += nack

    def on_ice_candidate(self, _webrtc, _mline_index, candidate):
        if candidate:
            self.to_server({"type": "candidate", "candidate": candidate})

    # Offer / answer (GLib side)

    def apply_offer(self, text, reply_type):
        sections = parse_sdp_sections(text)
        with self.lock:
            self.sections = {s["mid"]: s for s in sections if s["mid"] is not None}
            self.section_list = sections
        result, message = GstSdp.SDPMessage.new_from_text(text)
        if result != GstSdp.SDPResult.OK:
            log(f"unparsable {reply_type} offer: {result}")
            self.request_stop("bad offer")
            return False
        offer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.OFFER, message)
        log(f"{'offer' if reply_type == 'answer' else 're-offer'}: {len(sections)} sections, "
            f"{len({s['msid'] for s in sections if s['active'] and s['msid']})} publishers")
        promise = Gst.Promise.new_with_change_func(self.on_remote_set, reply_type)
        self.webrtc.emit("set-remote-description", offer, promise)
        return False

    def on_remote_set(self, promise, reply_type):
        promise.wait()
        reply = promise.get_reply()
        if reply is not None and reply.has_field("error"):
            log(f"set-remote-description failed: {reply.get_value('error')}")
            self.request_stop("cannot apply the offer")
            return
        self.webrtc.emit("create-answer", None, Gst.Promise.new_with_change_func(self.on_answer_created, reply_type))
        GLib.idle_add(self.finalize_departed)

    def on_answer_created(self, promise, reply_type):
        promise.wait()
        reply = promise.get_reply()
        answer = reply.get_value("answer") if reply is not None and reply.has_field("answer") else None
        if answer is None:
            log(f"create-answer failed: {reply.get_value('error') if reply is not None and reply.has_field('error') else reply}")
            self.request_stop("cannot answer")
            return
        log(f"{reply_type}: {self.transceiver_count} transceivers, {self.nack_count} with do-nack")
        # The answer goes out before set-local-description starts gathering, so it precedes candidates.
        self.to_server({"type": reply_type, "sdp": answer.sdp.as_text()})
        self.webrtc.emit("set-local-description", answer, Gst.Promise.new())

    # Media (streaming threads)

    def on_pad_added(self, _webrtc, pad):
        if pad.get_direction() != Gst.PadDirection.SRC:
            return
        transceiver = pad.get_property("transceiver")
        mid = transceiver.get_property("mid") if transceiver is not None else None
        self.set_nack_for_pad(pad, transceiver)
        caps = pad.get_current_caps() or pad.query_caps(None)
        structure = caps.get_structure(0) if caps is not None and caps.get_size() else None
        with self.lock:
            section = self.sections.get(mid)
            encoding = (structure.get_string("encoding-name") if structure is not None else None) \
                or (section or {}).get("codec") or "?"
            encoding = encoding.upper()
            kind = (structure.get_string("media") if structure is not None else None) \
                or (section or {}).get("kind") or DEPAYLOADERS.get(encoding, ("?",))[0]
            connection_id = (section or {}).get("msid")
            if not connection_id or connection_id == "-":
                log(f"pad {pad.get_name()} (mid {mid}, {kind} {encoding}): no publisher in the SDP, discarded")
                self.discard(pad)
                return
            publisher = self.publishers.get(connection_id)
            if publisher is None:
                matroska = self.args.h264_matroska and any(s["msid"] == connection_id and s["active"] and s["codec"] == "H264"
                                                           for s in self.sections.values())
                publisher = Publisher(self, connection_id, self.expected_kinds(connection_id), matroska)
                self.publishers[connection_id] = publisher
            publisher.attach(pad, kind, encoding)

    def expected_kinds(self, connection_id):
        """The kinds this publisher sends in a codec WebM can hold, per the current remote SDP."""
        return {s["kind"] for s in self.sections.values()
                if s["msid"] == connection_id and s["active"] and DEPAYLOADERS.get(s["codec"] or "", (None,))[0] == s["kind"]}

    def discard(self, pad):
        sink = Gst.ElementFactory.make("fakesink", None)
        sink.set_property("sync", False)
        sink.set_property("async", False)
        self.pipeline.add(sink)
        sink.sync_state_with_parent()
        pad.link(sink.get_static_pad("sink"))
        return sink

    # Finishing (GLib main loop)

    def finalize_departed(self):
        """After a re-offer: finalize the publishers it no longer sends us."""
        with self.lock:
            departed = [p for connection_id, p in self.publishers.items() if not p.finalizing
                        and not any(s["msid"] == connection_id and s["active"] for s in self.sections.values())]
        for publisher in departed:
            log(f"publisher {publisher.connection_id} left")
            publisher.finalize()
        return False

    def finalize_all(self):
        self.log_jitterbuffer_stats()
        with self.lock:
            publishers = list(self.publishers.values())
        for publisher in publishers:
            publisher.finalize()
        self.on_publisher_done()
        return False

    def log_jitterbuffer_stats(self):
        totals = dict.fromkeys(("num-pushed", "num-lost", "num-late", "rtx-count", "rtx-success-count"), 0)
        with self.lock:
            jitterbuffers = list(self.jitterbuffers.values())
        for jitterbuffer in jitterbuffers:
            stats = jitterbuffer.get_property("stats")
            for key in totals:
                ok, value = stats.get_uint64(key)
                totals[key] += value if ok else 0
        log(f"jitter buffers ({len(jitterbuffers)}): pushed {totals['num-pushed']}, lost {totals['num-lost']}, "
            f"late {totals['num-late']}, retransmissions asked {totals['rtx-count']}, repaired {totals['rtx-success-count']}")

    def on_publisher_done(self):
        with self.lock:
            if all(p.done.is_set() for p in self.publishers.values()):
                self.all_done.set()

    # Signaling (asyncio side)

    async def run(self):
        self.aloop = asyncio.get_running_loop()
        self.outbox = asyncio.Queue()
        self.stopping = asyncio.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.aloop.add_signal_handler(signum, lambda signum=signum: self.request_stop(signal.Signals(signum).name))
        self.pipeline.set_state(Gst.State.PLAYING)
        glib_thread = threading.Thread(target=self.glib_loop.run, name="glib", daemon=True)
        glib_thread.start()
        url = self.args.url
        ws = None
        try:
            for _ in range(3):  # the first node may redirect us to another one (a cluster)
                ws = await websockets.connect(url, max_size=None, open_timeout=10)
                connect = {"type": "connect", "role": "recvonly", "channel_id": self.args.channel, "multistream": True,
                           "audio": True, "video": True, "data_channel_signaling": False,
                           "sora_client": "gst_recorder (recbot benchmark baseline)",
                           "environment": f"{Gst.version_string()}; Python {sys.version.split()[0]}"}
                if self.args.metadata is not None:
                    connect["metadata"] = json.loads(self.args.metadata)
                if url != self.args.url:
                    connect["redirect"] = True
                await ws.send(json.dumps(connect))
                first = json.loads(await asyncio.wait_for(ws.recv(), 15))
                if first.get("type") != "redirect":
                    break
                log(f"redirected to {first.get('location')}")
                url = first["location"]
                await ws.close()
            else:
                raise RuntimeError("too many redirects")
            writer = asyncio.create_task(self.write(ws))
            reader = asyncio.create_task(self.read(ws, first))
            timer = asyncio.create_task(asyncio.sleep(self.args.duration)) if self.args.duration else None
            waits = [asyncio.create_task(self.stopping.wait()), reader] + ([timer] if timer else [])
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if timer is not None and timer.done():
                log(f"--duration {self.args.duration:g} s is over")
            self.stopping.set()
            if not reader.done():
                # Our disconnect goes after anything already queued (a re-answer, candidates).
                await self.outbox.put({"type": "disconnect", "reason": "NO-ERROR"})
            # What the jitter buffers still hold was sent before the session ended: let it out.
            await asyncio.sleep(self.args.latency / 1000 + 0.1)
            await self.finish_files()
            await self.outbox.put(None)
            try:
                await asyncio.wait_for(writer, 3)
                await asyncio.wait_for(reader, 3)  # the server closes after disconnect
            except Exception:  # noqa: BLE001 - leaving anyway (timeout, closed socket)
                pass
            for task in waits + [writer]:
                task.cancel()
        except (OSError, websockets.exceptions.WebSocketException, asyncio.TimeoutError, RuntimeError) as error:
            log(f"signaling failed: {error!r}")
            await self.finish_files()
        finally:
            if ws is not None:
                await ws.close()
            self.pipeline.set_state(Gst.State.NULL)
            self.glib_loop.quit()
            glib_thread.join(5)
        return self.report()

    async def finish_files(self):
        GLib.idle_add(self.finalize_all)
        done = await self.aloop.run_in_executor(None, self.all_done.wait, self.args.finalize_timeout)
        if not done:
            with self.lock:
                stuck = [p.connection_id for p in self.publishers.values() if not p.done.is_set()]
            log(f"gave up waiting for EOS after {self.args.finalize_timeout:g} s: {', '.join(stuck)}")

    async def write(self, ws):
        while True:
            message = await self.outbox.get()
            if message is None:
                return
            try:
                await ws.send(json.dumps(message))
            except websockets.exceptions.ConnectionClosed:
                return

    async def read(self, ws, first):
        message = first
        try:
            while True:
                kind = message.get("type")
                if kind == "offer":
                    log(f"offer for connection {message.get('connection_id')}")
                    GLib.idle_add(self.apply_offer, message["sdp"], "answer")
                elif kind in ("re-offer", "update"):
                    GLib.idle_add(self.apply_offer, message["sdp"], "re-answer" if kind == "re-offer" else "update")
                elif kind == "ping":
                    pong = {"type": "pong"}
                    if message.get("stats"):
                        pong["stats"] = []
                    await self.outbox.put(pong)
                elif kind == "disconnect":
                    log("the server sent disconnect")
                    return
                elif kind not in ("notify", "push", "switched"):
                    log(f"ignored signaling message {kind!r}")
                message = json.loads(await ws.recv())
        except websockets.exceptions.ConnectionClosed as closed:
            log(f"WebSocket closed: {closed.code} {closed.reason!r}" if hasattr(closed, "code") else f"WebSocket closed: {closed}")

    def report(self):
        files = [p.path for p in self.publishers.values() if os.path.exists(p.path) and os.path.getsize(p.path) > 0]
        return {"type": "report", "files": sorted(files), "publishers": len(self.publishers)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="Sora signaling URL, ws:// or wss://")
    parser.add_argument("--channel", required=True, help="channel_id to record")
    parser.add_argument("--out", required=True, help="directory for the WebM files")
    parser.add_argument("--duration", type=float, default=0, help="stop after this many seconds (0: when the server ends)")
    parser.add_argument("--metadata", help="JSON for connect's metadata (e.g. an access token)")
    parser.add_argument("--latency", type=int, default=200, help="webrtcbin jitter buffer latency, ms")
    parser.add_argument("--rtcp-bandwidth", type=int, default=100_000, metavar="BITS",
                        help="RTCP bandwidth of this receiver, bit/s: how often feedback (NACK, PLI) may go out")
    parser.add_argument("--track-wait", type=float, default=5.0,
                        help="record a publisher without a kind whose pad has not come this long after its first")
    parser.add_argument("--finalize-timeout", type=float, default=10.0, help="how long to wait for the files' EOS")
    parser.add_argument("--h264-matroska", action="store_true",
                        help="also record H.264 publishers (rtph264depay + h264parse) into DIR/<connection_id>.mkv (matroskamux)")
    parser.add_argument("--ice-address", action="append", default=None, metavar="IP",
                        help="gather ICE candidates on this local address only (repeatable; default 127.0.0.1 when the "
                             "signaling host is loopback, else every interface)")
    args = parser.parse_args()
    if args.ice_address is None:
        host = urllib.parse.urlparse(args.url).hostname or ""
        args.ice_address = ["127.0.0.1"] if host in ("127.0.0.1", "localhost", "::1") else []
    if args.h264_matroska:
        DEPAYLOADERS["H264"] = ("video", ["rtph264depay", "h264parse"])
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    Gst.init(None)
    report = asyncio.run(Recorder(args).run())
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
