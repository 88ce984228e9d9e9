"""Counts a process's heap allocations (libc malloc calls) over a window, for bench.py
--count-allocations: a uprobe on libc's malloc, read with `perf stat`. Needs root and perf
(Debian: linux-perf). The probe traps on every call, so a run that counts is slower: its CPU
columns are not comparable with a run that does not."""
import glob
import subprocess
import threading

EVENT = "probe_libc:malloc"


def ensure_probe():
    """Adds the uprobe once; says plainly what is missing when it cannot."""
    try:
        listed = subprocess.run(["perf", "probe", "-l"], capture_output=True, text=True)
    except FileNotFoundError:
        raise SystemExit("--count-allocations needs perf (apt-get install linux-perf)")
    if EVENT in listed.stdout:
        return
    libraries = glob.glob("/lib/*-linux-gnu/libc.so.6") + glob.glob("/usr/lib/*-linux-gnu/libc.so.6")
    if not libraries:
        raise SystemExit("--count-allocations: libc.so.6 not found")
    added = subprocess.run(["perf", "probe", "-x", libraries[0], "malloc"], capture_output=True, text=True)
    if added.returncode != 0:
        raise SystemExit(f"--count-allocations: perf probe failed (root needed): {added.stderr.strip()}")


class AllocationCount(threading.Thread):
    """Counts `pid`'s malloc calls for `window` seconds, starting `delay` seconds from now."""

    def __init__(self, pid, delay, window):
        super().__init__(daemon=True)
        self.pid, self.delay, self.window = pid, delay, window
        self.count = None

    def run(self):
        command = ["perf", "stat", "-x", ",", "-e", EVENT, "-p", str(self.pid), "--", "sleep", str(self.window)]
        threading.Event().wait(self.delay)
        out = subprocess.run(command, capture_output=True, text=True)
        for line in out.stderr.splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2] == EVENT and fields[0].isdigit():
                self.count = int(fields[0])

    def per_packet(self, packets, duration, ramp):
        """Allocations per packet, the window's packets taken at the run's steady rate (half the
        ramp counted: publishers join evenly over it)."""
        if self.count is None or packets <= 0:
            return None
        rate = packets / max(1.0, duration - ramp / 2)
        return self.count / (rate * self.window)
