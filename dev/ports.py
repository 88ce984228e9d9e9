"""Free loopback ports for the development and benchmark scripts: the one picker (the Swift
tests have theirs, TestSupport.freeLoopbackPort, on the same rule)."""
import random
import socket

_GIVEN_PORTS = set()


def free_port():
    """A free loopback port below the kernel's ephemeral range: a port from bind(0) can be handed
    to an outgoing connection (weed's own gRPC clients) before the server binds it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
            low = int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    if low < 11000:  # nothing below the range: the kernel's choice, race and all
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return probe.getsockname()[1]
    for _ in range(200):
        port = random.randint(10000, low - 1)
        if port in _GIVEN_PORTS:
            continue
        _GIVEN_PORTS.add(port)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port below the ephemeral range")


if __name__ == "__main__":
    print(free_port())
