"""The cost of a TURN relay (issue 14), for `bench/bench.sh --relay N[,N...]`: for each N,
recbot records the same synthetic channel directly, then relay-only through coturn over UDP and
over TCP (a coturn started for the run on loopback). Columns as in the capacity table, then:
  xdirect   recbot's CPU and peak RSS relayed, as multiples of the direct run's
  turn      coturn's own CPU in cores (what a TURN server spends on this channel)
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dev"))
from ports import free_port  # noqa: E402  (the one port picker)

TURN_USER, TURN_PASSWORD = "bench", "bench-relay"


class Coturn:
    """Debian's turnserver on loopback: UDP and TCP on one port, relayed ports on loopback."""

    def __init__(self, work):
        self.port = free_port()
        base = 40000 + (os.getpid() % 200) * 100
        self.process = subprocess.Popen([
            "turnserver", "-n", "--no-cli", "--log-file=stdout", "--simple-log", "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1",
            f"--listening-port={self.port}", f"--min-port={base}", f"--max-port={base + 99}", "--lt-cred-mech", "--realm=recbot",
            f"--user={TURN_USER}:{TURN_PASSWORD}", "--fingerprint", "--allow-loopback-peers", "--no-multicast-peers", "--no-dtls",
            "--no-tls", f"--userdb={work}/turndb", f"--pidfile={work}/turn.pid",
        ], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.started = time.time()
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)

    def ice_servers(self, work, transport):
        path = os.path.join(work, f"ice-{transport}.json")
        # The credential is in it: readable by this user only from the start.
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
            handle.write(f'[{{"urls": ["turn:127.0.0.1:{self.port}?transport={transport}"], '
                         f'"username": "{TURN_USER}", "credential": "{TURN_PASSWORD}"}}]')
        return path

    def stop(self):
        """coturn's CPU in cores over its life."""
        self.process.kill()
        _, _, usage = os.wait4(self.process.pid, 0)
        return (usage.ru_utime + usage.ru_stime) / max(1e-9, time.time() - self.started)


def relay_runs(counts, args, cache, run):
    """`run` is bench.run (one recorder run on one channel)."""
    print(f"\nTURN relay, recbot only, {args.duration:.0f} s per run: direct, then relay-only through coturn over UDP and TCP")
    print("    N path        cores  us/pkt  rss MB  frames%  rcv drops exit  xdirect cpu / rss   turn")
    results = []
    for n in counts:
        direct = run("recbot", n, args, cache)
        direct["path"] = "direct"
        print(f"{n:>5} {'direct':<10} {direct['cpu_cores']:>6.2f} {direct['us_per_packet']:>7.1f} {direct['rss_mb']:>7.0f} "
              f"{direct['worst_share']:>8.2f} {direct['drops']:>10} {direct['exit']:>4}", flush=True)
        results.append(direct)
        for transport in ("udp", "tcp"):
            work = tempfile.mkdtemp(prefix=f"recbot-bench-turn-{transport}-{n}-")
            coturn = Coturn(work)
            try:
                relayed = run("recbot", n, args, cache,
                              recorder_extra=["--ice-servers", "@" + coturn.ice_servers(work, transport), "--ice-transport-policy", "relay"])
            finally:
                turn_cores = coturn.stop()
                if not args.keep:
                    shutil.rmtree(work, ignore_errors=True)
            relayed.update(path=f"turn-{transport}", turn_cores=turn_cores)
            cpu = relayed["cpu_cores"] / max(1e-9, direct["cpu_cores"])
            rss = relayed["rss_mb"] / max(1e-9, direct["rss_mb"])
            print(f"{n:>5} {'turn ' + transport:<10} {relayed['cpu_cores']:>6.2f} {relayed['us_per_packet']:>7.1f} {relayed['rss_mb']:>7.0f} "
                  f"{relayed['worst_share']:>8.2f} {relayed['drops']:>10} {relayed['exit']:>4}  {cpu:>6.2f}x / {rss:.2f}x  {turn_cores:>5.2f}", flush=True)
            results.append(relayed)
    return results
