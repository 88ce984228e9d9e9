#!/usr/bin/env python3
"""A private Janus (VideoRoom plugin, WebSocket transport) for recbot's tests, and an asyncio
client of Janus's JSON API over that WebSocket.

JanusProcess writes its own configuration into a temporary folder: only the VideoRoom plugin and
the WebSocket transport are loaded (their folders hold a symlink to that one library each), the
WebSocket API listens on 127.0.0.1 only, and ICE is lite like Sora's, with one host candidate and no STUN.

  async with JanusProcess(ws_port=8188) as janus:
      client = await JanusClient.connect(janus.ws_url)
      session = await client.create_session()
      handle = await session.attach("janus.plugin.videoroom")
      reply = await handle.request({"request": "list"})

Run alone it starts Janus, creates the room and waits (for trying pages by hand):
  janus_room.py --ws-port 8188 --room 1234
"""
import argparse
import asyncio
import itertools
import json
import os
import random
import shutil
import signal
import socket
import string
import sys
import tempfile

from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

JANUS_LIB = "/usr/lib/x86_64-linux-gnu/janus"
VIDEOROOM = "janus.plugin.videoroom"
KEEPALIVE_SECONDS = 25  # Janus drops a session after session_timeout (60 s) without traffic


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def media_address():
    """The host's own IPv4 address on its default route (a UDP connect sends nothing): Janus never
    gathers loopback candidates (it skips loopback interfaces), so media goes over this address,
    which still never leaves the machine. None when there is no route at all."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            return probe.getsockname()[0]
    except OSError:
        return None


def room_settings(room, bitrate=4_000_000):
    """The room recbot's tests use: every video codec a browser publishes in the order Janus should
    prefer, Opus with FEC and DTX allowed, and a generous bitrate (simulcast needs ~1.5 Mbit/s for
    three layers; the publishers' BWE limits them anyway)."""
    return {
        "room": room, "description": "recbot", "publishers": 16, "bitrate": bitrate, "bitrate_cap": False,
        "fir_freq": 10, "videocodec": "vp8,vp9,av1,h264", "audiocodec": "opus", "opus_fec": True, "opus_dtx": True,
        # Janus 1.x detects simulcast and VP9/AV1 SVC by itself; these only keep its defaults explicit.
        "audiolevel_ext": True, "transport_wide_cc_ext": True, "playoutdelay_ext": True, "videoorient_ext": True,
        "notify_joining": True,
    }


class JanusProcess:
    """Janus with a configuration of its own in a temp folder; stopped (and the folder removed) on exit."""

    def __init__(self, ws_port=0, rtp_ports=None, debug_level=4, log_path=None, media_ip=None):
        self.ws_port = ws_port or free_port()
        self.media_ip = media_ip or media_address()
        if self.media_ip is None:
            # Janus skips loopback interfaces when it gathers candidates: without another IPv4
            # address it offers none, and no recorder could connect. Say so instead.
            raise RuntimeError("janus_room: this host has no IPv4 address besides loopback, and Janus gathers no loopback "
                               "candidates; give it one, e.g. ip link add recbot0 type dummy && "
                               "ip addr add 192.0.2.2/24 dev recbot0 && ip link set recbot0 up")
        self.rtp_ports = rtp_ports  # "min-max" or None (the kernel picks)
        self.debug_level = debug_level
        self.log_path = log_path
        self.process = None
        self.folder = None

    @property
    def ws_url(self):
        return f"ws://127.0.0.1:{self.ws_port}"

    def write_config(self):
        self.folder = tempfile.mkdtemp(prefix="janus-")
        folders = {}
        # One folder per kind of module, holding only the modules wanted: Janus loads every .so it finds.
        for kind, wanted in (("plugins", ["libjanus_videoroom.so"]), ("transports", ["libjanus_websockets.so"]),
                             ("events", []), ("loggers", [])):
            path = os.path.join(self.folder, kind)
            os.makedirs(path)
            for name in wanted:
                os.symlink(os.path.join(JANUS_LIB, kind, name), os.path.join(path, name))
            folders[kind] = path
        configs = os.path.join(self.folder, "etc")
        os.makedirs(configs)
        media = f'\trtp_port_range = "{self.rtp_ports}"\n' if self.rtp_ports else ""
        files = {
            "janus.jcfg": (
                "general: {\n"
                f'\tconfigs_folder = "{configs}"\n'
                f'\tplugins_folder = "{folders["plugins"]}"\n'
                f'\ttransports_folder = "{folders["transports"]}"\n'
                f'\tevents_folder = "{folders["events"]}"\n'
                f'\tloggers_folder = "{folders["loggers"]}"\n'
                f"\tdebug_level = {self.debug_level}\n"
                "\tdebug_timestamps = true\n"
                "\tsession_timeout = 60\n"
                "\tserver_name = \"recbot-janus\"\n"
                "}\n"
                "certificates: {\n}\n"
                # Janus's default NACK queue is 200 ms; recbot asks for losses a bit later on a busy box.
                f"media: {{\n\tmin_nack_queue = 1000\n{media}}}\n"
                # Like Sora: ICE lite, one host candidate (media_address: Janus skips loopback), no
                # STUN/TURN, no mDNS lookups. Without the enforce list libnice offers every address,
                # IPv6 link-local ones too.
                "nat: {\n\tnice_debug = false\n\tice_lite = true\n\tfull_trickle = false\n\tignore_mdns = true\n"
                + (f'\tice_enforce_list = "{self.media_ip}"\n' if self.media_ip else "") + "}\n"
                "plugins: {\n}\ntransports: {\n}\nloggers: {\n}\nevents: {\n\tbroadcast = false\n}\n"),
            "janus.transport.websockets.jcfg": (
                "general: {\n\tjson = \"plain\"\n\tws = true\n"
                f"\tws_port = {self.ws_port}\n\tws_ip = \"127.0.0.1\"\n\twss = false\n"
                '\tws_logging = "err,warn"\n}\n'
                "admin: {\n\tadmin_ws = false\n\tadmin_wss = false\n}\n"),
            # Rooms come from the API (JanusRoom.ensure_room): only the general section here.
            "janus.plugin.videoroom.jcfg": "general: {\n}\n",
        }
        for name, text in files.items():
            with open(os.path.join(configs, name), "w") as out:
                out.write(text)
        return os.path.join(configs, "janus.jcfg")

    async def start(self, timeout=15):
        config = self.write_config()
        log = open(self.log_path, "ab") if self.log_path else open(os.path.join(self.folder, "janus.log"), "wb")
        self.log_file = log
        # Its own process group, so nothing Janus might fork outlives it.
        self.process = await asyncio.create_subprocess_exec(
            "janus", "-C", config, "-F", os.path.dirname(config), stdin=asyncio.subprocess.DEVNULL,
            stdout=log, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            if self.process.returncode is not None:
                raise RuntimeError(f"janus exited with {self.process.returncode}; see {log.name}")
            try:
                client = await JanusClient.connect(self.ws_url)
                await client.close()
                return self
            except OSError:
                if asyncio.get_running_loop().time() > deadline:
                    raise RuntimeError(f"janus did not open {self.ws_url}; see {log.name}")
                await asyncio.sleep(0.2)

    async def stop(self):
        if self.process and self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)  # Janus's clean shutdown
            try:
                await asyncio.wait_for(self.process.wait(), 5)
            except asyncio.TimeoutError:
                self.process.kill()
                await self.process.wait()
        if getattr(self, "log_file", None):
            self.log_file.close()
        if self.folder:
            # The configuration goes; the log stays only when it was written outside (log_path).
            shutil.rmtree(self.folder, ignore_errors=True)

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc):
        await self.stop()


class JanusError(Exception):
    pass


def transaction_id():
    return "".join(random.choice(string.ascii_letters + string.digits) for _ in range(12))


class JanusClient:
    """One WebSocket to Janus (subprotocol janus-protocol). Requests carry a transaction; their
    replies ("success"/"error", or "ack" then an "event" for asynchronous plugin requests) go back
    to the caller. Everything else (events, webrtcup, media, hangup...) goes to the handle's queue."""

    def __init__(self, ws):
        self.ws = ws
        self.pending = {}  # transaction -> future of the final reply
        self.acks = {}  # transaction -> whether an ack may come first
        self.handles = {}  # handle id -> JanusHandle
        self.sessions = {}
        self.reader = asyncio.create_task(self.read())
        self.closed = asyncio.Event()

    @classmethod
    async def connect(cls, url):
        ws = await ws_connect(url, subprotocols=["janus-protocol"], max_size=8 << 20, ping_interval=None)
        return cls(ws)

    async def close(self):
        for session in list(self.sessions.values()):
            await session.destroy()
        self.reader.cancel()
        await self.ws.close()

    async def send(self, message, asynchronous=False):
        """Sends a request; returns Janus's final reply for it (raises on "error")."""
        message = dict(message)
        message["transaction"] = transaction_id()
        future = asyncio.get_running_loop().create_future()
        self.pending[message["transaction"]] = future
        self.acks[message["transaction"]] = asynchronous
        await self.ws.send(json.dumps(message))
        reply = await asyncio.wait_for(future, 20)
        if reply.get("janus") == "error":
            raise JanusError(json.dumps(reply.get("error")))
        data = (reply.get("plugindata") or {}).get("data") or {}
        if data.get("error_code"):
            raise JanusError(f"{data.get('error_code')}: {data.get('error')}")
        return reply

    async def read(self):
        try:
            async for text in self.ws:
                message = json.loads(text)
                kind = message.get("janus")
                transaction = message.get("transaction")
                if kind == "ack" and self.acks.get(transaction):
                    continue  # an asynchronous plugin request: its event follows
                future = self.pending.pop(transaction, None) if transaction else None
                if future is not None and not future.done():
                    self.acks.pop(transaction, None)
                    future.set_result(message)
                    continue
                handle = self.handles.get(message.get("sender"))
                if handle is not None:
                    handle.events.put_nowait(message)
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(JanusError("janus websocket closed"))

    async def create_session(self):
        reply = await self.send({"janus": "create"})
        session = JanusSession(self, reply["data"]["id"])
        self.sessions[session.id] = session
        return session


class JanusSession:
    def __init__(self, client, session_id):
        self.client = client
        self.id = session_id
        self.keepalive = asyncio.create_task(self.keep_alive())

    async def keep_alive(self):
        while True:
            await asyncio.sleep(KEEPALIVE_SECONDS)
            try:
                await self.client.send({"janus": "keepalive", "session_id": self.id})
            except (JanusError, ConnectionClosed, asyncio.TimeoutError):
                return

    async def attach(self, plugin=VIDEOROOM):
        reply = await self.client.send({"janus": "attach", "session_id": self.id, "plugin": plugin})
        handle = JanusHandle(self, reply["data"]["id"])
        self.client.handles[handle.id] = handle
        return handle

    async def destroy(self):
        self.keepalive.cancel()
        self.client.sessions.pop(self.id, None)
        try:
            await self.client.send({"janus": "destroy", "session_id": self.id})
        except (JanusError, ConnectionClosed, asyncio.TimeoutError):
            pass


class JanusHandle:
    def __init__(self, session, handle_id):
        self.session = session
        self.id = handle_id
        self.events = asyncio.Queue()  # unsolicited messages for this handle

    def base(self, kind):
        return {"janus": kind, "session_id": self.session.id, "handle_id": self.id}

    async def request(self, body):
        """A synchronous plugin request (create, list, listparticipants...): its data."""
        reply = await self.session.client.send({**self.base("message"), "body": body})
        return reply["plugindata"]["data"]

    async def message(self, body, jsep=None):
        """An asynchronous plugin request (join, configure, start, update...): (data, jsep) of its event."""
        message = {**self.base("message"), "body": body}
        if jsep is not None:
            message["jsep"] = jsep
        reply = await self.session.client.send(message, asynchronous=True)
        return reply["plugindata"]["data"], reply.get("jsep")

    async def trickle(self, candidate=None, completed=False):
        body = {"completed": True} if completed else candidate
        await self.session.client.send({**self.base("trickle"), "candidate": body})

    async def detach(self):
        self.session.client.handles.pop(self.id, None)
        try:
            await self.session.client.send(self.base("detach"))
        except (JanusError, ConnectionClosed, asyncio.TimeoutError):
            pass


async def ensure_room(handle, room, **overrides):
    """Creates the room unless it exists (not permanent: it lives as long as this Janus)."""
    exists = await handle.request({"request": "exists", "room": room})
    if not exists.get("exists"):
        await handle.request({"request": "create", **room_settings(room), **overrides})
    return room


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ws-port", type=int, default=8188)
    parser.add_argument("--room", type=int, default=1234)
    args = parser.parse_args()
    janus = JanusProcess(ws_port=args.ws_port)
    await janus.start()
    try:
        client = await JanusClient.connect(janus.ws_url)
        session = await client.create_session()
        handle = await session.attach()
        await ensure_room(handle, args.room)
        print(json.dumps({"type": "janus", "ws_url": janus.ws_url, "room": args.room, "log": janus.log_file.name}), flush=True)
        stop = asyncio.Event()
        for number in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(number, stop.set)
        await stop.wait()
        await client.close()
    finally:
        await janus.stop()


if __name__ == "__main__":
    asyncio.run(main())
