"""The service part of the fault campaign (dev/faults.py): `recbot serve` as Sora's webhooks
drive it, with three workers sharing one PostgreSQL catalog (three data directories).

  service   channels open and close on a schedule (20 over about 5 minutes; 8 over about 2 with
            --short), each a Sora-compatible test server with one VP8+Opus publisher behind one
            signaling URL (a router here sends each WebSocket to its channel's server, as a Sora
            cluster would). Each test server sends its session's webhooks itself, as Sora does:
            `session.created` once it listens, `session.destroyed` at the end of its life, each
            to a different worker (as a load balancer would).
            Checks, per channel: recorded exactly once (one job, claimed once, one session with
            complete recordings that `recbot verify` passes), its recording started within 2 s
            of `session.created` (the session's row) and ended within 2 s of
            `session.destroyed`, exit 0.
"""
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports import free_port  # noqa: E402

common = None  # dev/faults.py, which imports this module and sets it

SECRET = "faults-webhook-secret"
TOKEN = "faults-api-token"
WORKERS = 3


class Router:
    """One signaling URL for every channel: the first message of a WebSocket (Sora's `connect`)
    names the channel, and the rest of the conversation goes to that channel's server."""

    def __init__(self):
        self.backends = {}
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.port = None
        ready = threading.Event()
        self.thread = threading.Thread(target=self.run, args=(ready,), daemon=True)
        self.thread.start()
        if not ready.wait(10):
            raise RuntimeError("the signaling router did not start")

    def run(self, ready):
        asyncio.set_event_loop(self.loop)
        from websockets.asyncio.server import serve

        async def start():
            self.server = await serve(self.handle, "127.0.0.1", 0, max_size=None)
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
        self.loop.run_until_complete(start())
        self.loop.run_forever()

    def register(self, channel, url):
        with self.lock:
            self.backends[channel] = url

    def unregister(self, channel):
        with self.lock:
            self.backends.pop(channel, None)

    async def handle(self, client):
        from websockets.asyncio.client import connect
        try:
            first = await asyncio.wait_for(client.recv(), 10)
            channel = json.loads(first).get("channel_id")
        except Exception:  # noqa: BLE001 - a client that says nothing usable is closed
            await client.close(1002, "no connect message")
            return
        with self.lock:
            backend = self.backends.get(channel)
        if backend is None:
            await client.close(4490, "no such channel")
            return
        try:
            async with connect(backend, max_size=None) as upstream:
                await upstream.send(first)

                async def pump(source, destination):
                    async for message in source:
                        await destination.send(message)
                tasks = {asyncio.create_task(pump(client, upstream)), asyncio.create_task(pump(upstream, client))}
                _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in pending:
                    task.cancel()
                code = upstream.close_code or 1000
        except Exception:  # noqa: BLE001 - the backend went away: the client sees a close
            code = 1011
        await client.close(code if code != 1006 else 1011)

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)


class Worker:
    """`recbot serve` with its own data directory, host name and log; `port` once it listens."""

    def __init__(self, recbot, work, index, environment, rules):
        self.host = f"worker-{index}"
        self.data = os.path.join(work, f"data-{index}")
        self.log = os.path.join(work, f"serve-{index}.log")
        self.process = common.spawn([recbot, "serve", "--data-dir", self.data, "--listen", "127.0.0.1:0", "--lease", "5s",
                                     "--capacity", "8", "--rules", rules, "--prune-every", "0"], self.log,
                                    env=dict(environment, RECBOT_HOST=self.host))
        self.port = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.port is None:
            with open(self.log, errors="replace") as text:
                for line in text:
                    if "recbot serve: listening on 127.0.0.1:" in line:
                        self.port = int(line.rsplit(":", 1)[1])
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        if self.port is None:
            raise RuntimeError(f"recbot serve did not start (see {self.log})")

    @property
    def webhook_url(self):
        return f"http://127.0.0.1:{self.port}/webhooks/sora"


class Channel:
    """One channel's life: its server (which sends the session's webhooks), and when it sent them."""

    def __init__(self, index, start, life):
        self.name = f"ch-{index:02d}"
        self.index, self.start, self.life = index, start, life
        self.sora_session = self.created_at = self.destroyed_at = None
        self.problems = []

    def run(self, began, work, router, workers):
        time.sleep(max(0.0, began + self.start - time.monotonic()))
        port = free_port()
        # Routed before the server exists: its session.created may reach a worker at once.
        router.register(self.name, f"ws://127.0.0.1:{port}/signaling")
        # Each webhook to the next worker in turn (created to one, destroyed to the next).
        urls = [workers[(self.index + turn) % WORKERS].webhook_url for turn in range(WORKERS)]
        server = common.TestServer(os.path.join(work, self.name), [
            "--port", str(port), "--publisher", "vp8", "--channel-outlives-clients", "--max-seconds", str(self.life + 90),
            "--channel-id", self.name, "--lifetime", str(self.life), "--webhook-secret", SECRET,
            *[argument for url in urls for argument in ("--webhook-url", url)]])
        try:
            server.wait_listening()
            server.process.wait(timeout=self.life + 60)
            self.read_webhooks(server.out_path)
        except Exception as error:  # noqa: BLE001 - recorded as this channel's problem
            self.problems.append(f"{type(error).__name__}: {error}")
        finally:
            router.unregister(self.name)
            server.stop(wait=1)

    def read_webhooks(self, path):
        with open(path) as text:
            for line in text:
                event = json.loads(line)
                if event.get("type") != "webhook":
                    continue
                if event.get("status") != 200:
                    self.problems.append(f"{event['event']} answered {event.get('status')}")
                self.sora_session = event["session_id"]
                if event["event"] == "session.created":
                    self.created_at = event["at"]
                elif event["event"] == "session.destroyed":
                    self.destroyed_at = event["at"]
        if self.created_at is None or self.destroyed_at is None:
            self.problems.append("the server did not send both session webhooks")


def schedule(short):
    """(start, life) in seconds per channel: staggered, a few at once, lives of varied length."""
    if short:
        return [(index * 10.0, 20.0 + (index * 7) % 10) for index in range(8)]
    return [(index * 12.5, 30.0 + (index * 7) % 20) for index in range(20)]


def part_service(options, work, result):
    import faults_fleet  # the throwaway PostgreSQL of the fleet part
    if not os.path.exists(f"{faults_fleet.PG_BIN}/initdb"):
        result.skipped = "PostgreSQL 15 is not installed (deploy/install-deps.sh)"
        return
    postgres = faults_fleet.Postgres()
    router = Router()
    workers = []
    try:
        catalog = postgres.fresh_database("service")
        rules = os.path.join(work, "rules.json")
        with open(rules, "w") as handle:
            json.dump({"rules": [{"name": "every channel", "channel": {"prefix": "ch-"}}]}, handle)
        environment = dict(os.environ, RECBOT_CATALOG_URL=catalog, RECBOT_URLS=f"ws://127.0.0.1:{router.port}/signaling",
                           RECBOT_ALLOW_ADDRESSES="127.0.0.1/32", RECBOT_LOG_LEVEL="info", RECBOT_SERVE_WEBHOOK_SECRET=SECRET,
                           RECBOT_SERVE_API_TOKEN=TOKEN)
        workers = [Worker(options.recbot, work, index + 1, environment, rules) for index in range(WORKERS)]
        channels = [Channel(index, start, life) for index, (start, life) in enumerate(schedule(options.short))]
        began = time.monotonic()
        threads = [threading.Thread(target=c.run, args=(began, work, router, workers), daemon=True) for c in channels]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        judge(channels, postgres, workers, options, work, result, environment)
        failover(options, work, router, workers, postgres, environment, result)
    finally:
        for worker in workers:
            worker.process.terminate()  # a graceful stop: no recording is left by now
        for worker in workers:
            common.finish(worker.process, timeout=30)
        router.stop()
        postgres.remove()


def rows(postgres, sql):
    text = postgres.psql(sql, database="service")
    return [line.split("|") for line in text.splitlines() if line]


def judge(channels, postgres, workers, options, work, result, environment):
    # Every job ends within a heartbeat or two of its session.destroyed; give the last ones time.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not rows(postgres, "SELECT id FROM jobs WHERE state IN ('queued', 'running')"):
            break
        time.sleep(0.5)
    jobs = {r[0]: r for r in rows(postgres, "SELECT sora_session_id, id, state, fence, exit_status, coalesce(end_reason, '') FROM jobs")}
    starts, stops = [], []
    verified = verify(workers, options, work, environment)
    for channel in channels:
        result.runs += 1
        problems = list(channel.problems)
        job = jobs.get(channel.sora_session)
        if job is None:
            problems.append("no job")
        else:
            _, job_id, state, fence, exit_status, reason = job
            if state != "ended" or fence != "1" or exit_status != "0":
                problems.append(f"job {state}, claimed {fence} times, exit {exit_status}: {reason}")
            sessions = rows(postgres, f"SELECT extract(epoch FROM to_timestamp(started_at / 1000.0)), coalesce(ended_at, 0), "
                                      f"coalesce(segment, 1) FROM sessions WHERE channel_id = '{channel.name}'")
            if len(sessions) != 1:
                problems.append(f"{len(sessions)} sessions")
            else:
                started, ended, segment = float(sessions[0][0]), int(sessions[0][1]) / 1000, sessions[0][2]
                start_delay = started - (channel.created_at or 0)
                stop_delay = ended - (channel.destroyed_at or 0)
                starts.append(start_delay)
                stops.append(stop_delay)
                if not 0 <= start_delay <= 2:
                    problems.append(f"started {start_delay:.2f} s after session.created")
                if not -1 <= stop_delay <= 2:
                    problems.append(f"ended {stop_delay:.2f} s after session.destroyed")
                if segment != "1":
                    problems.append(f"recorded in {segment} segments")
            files = rows(postgres, f"SELECT id, status FROM recordings WHERE session_id = '{job_id}'")
            if not files or any(status != "complete" for _, status in files):
                problems.append(f"recordings {[status for _, status in files]}")
            unverified = [file_id for file_id, _ in files if file_id not in verified]
            if unverified:
                problems.append(f"{len(unverified)} of {len(files)} files not verified")
        if problems:
            result.failures += [f"service {channel.name}: {problem}" for problem in problems]
        else:
            result.passed += 1
    if starts:
        result.numbers.append(f"{len(channels)} channels on {WORKERS} workers: start after session.created median "
                              f"{statistics.median(starts):.2f} s, max {max(starts):.2f} s; end after session.destroyed median "
                              f"{statistics.median(stops):.2f} s, max {max(stops):.2f} s")


def verify(workers, options, work, environment):
    """Recording ids `recbot verify --pending` passed on their worker's host."""
    passed = set()
    for worker in workers:
        log = os.path.join(work, f"verify-{worker.host}.log")
        with open(log, "wb") as handle:
            done = subprocess.run([options.recbot, "verify", "--pending", "--json", "--data-dir", worker.data, "--host", worker.host],
                                  stdout=subprocess.PIPE, stderr=handle, env=environment, timeout=600)
        try:
            entries = json.loads(done.stdout or b"[]")
        except ValueError:
            continue
        passed |= {str(e.get("recording_id")) for e in entries if e.get("verification") == "verified"}
    return passed


def failover(options, work, router, workers, postgres, environment, result):
    """SIGKILL of the worker holding a live recording (60 s in, a 90 s channel; 15 s of 45 with
    --short): another worker continues it in the same session with at most 15 s of media lost,
    the dead worker's files are repaired on its host, and every part verifies."""
    result.runs += 1
    life, kill_at = (45.0, 15.0) if options.short else (90.0, 60.0)
    channel = Channel(99, 0.0, life)
    channel.name = "ch-failover"
    thread = threading.Thread(target=channel.run, args=(time.monotonic(), work, router, workers), daemon=True)
    thread.start()
    problems = []
    held = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and held is None:
        found = rows(postgres, "SELECT j.id, j.worker_host FROM jobs j WHERE j.channel_id = 'ch-failover' AND j.state = 'running' "
                               "AND EXISTS (SELECT 1 FROM recordings r WHERE r.session_id = j.id)")
        held = found[0] if found else None
        time.sleep(0.2)
    if held is None:
        thread.join()
        result.failures.append("service failover: the recording never started")
        return
    job_id, host = held
    victim = next(w for w in workers if w.host == host)
    time.sleep(max(0.0, kill_at - (time.time() - (channel.created_at or time.time()))))
    victim.process.kill()
    thread.join()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and rows(postgres, f"SELECT 1 FROM jobs WHERE id = '{job_id}' AND state = 'running'"):
        time.sleep(0.5)
    job = rows(postgres, f"SELECT fence, coalesce(exit_status, -1), state FROM jobs WHERE id = '{job_id}'")[0]
    if job != ["2", "0", "ended"]:
        problems.append(f"job claims/exit/state {job}")
    session = rows(postgres, f"SELECT coalesce(segment, 1), ended_at IS NOT NULL FROM sessions WHERE id = '{job_id}'")[0]
    if session != ["2", "t"]:
        problems.append(f"session segment/ended {session}")
    outage = rows(postgres, f"SELECT cause, coalesce(media_lost_ms, -1) FROM interruptions WHERE session_id = '{job_id}' ORDER BY ordinal")
    lost = int(outage[-1][1]) / 1000 if outage and outage[-1][0] == "failover" else None
    if lost is None or not 0 <= lost <= 15:
        problems.append(f"interruptions {outage}")
    log = os.path.join(work, "failover-commands.log")
    with open(log, "ab") as handle:
        repair = subprocess.run([options.recbot, "repair", "--all", "--data-dir", victim.data, "--host", victim.host],
                                stdout=handle, stderr=handle, env=environment, timeout=300)
        verified = [subprocess.run([options.recbot, "verify", job_id, "--data-dir", w.data, "--host", w.host], stdout=handle, stderr=handle,
                                   env=environment, timeout=300).returncode for w in workers]
    if repair.returncode != 0 or any(verified):
        problems.append(f"repair exit {repair.returncode}, verify exits {verified} (see {log})")
    parts = rows(postgres, f"SELECT part, host FROM recordings WHERE session_id = '{job_id}' ORDER BY part")
    if not parts or parts[0][0] != "1" or len({h for _, h in parts}) != 2:
        problems.append(f"parts {parts}")
    if problems:
        result.failures += [f"service failover: {problem}" for problem in problems]
    else:
        result.passed += 1
    result.numbers.append(f"SIGKILL of the worker recording a live channel {kill_at:.0f} s in: "
                          f"{lost if lost is not None else '?'} s of media lost, continued in the same session")
