"""Every IPv4 address of the host: the Mac (or Linux machine) box runs on, and
the machine Docker's engine runs on (Docker Desktop's VM, or the same Linux host).

The entrypoint REJECTs each one, so a box reaches none of the host's services by
any of its addresses: a public or VPN address of the Mac, a Linux server's public IP.
Loopback is left out: inside the box it is the box itself.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Optional

from . import runflags

_INET = re.compile(r"\binet (\d+\.\d+\.\d+\.\d+)/\d+")
_FIB_LEAF = re.compile(r"^\s+\|-- (\d+\.\d+\.\d+\.\d+)$")
_FIB_LOCAL = re.compile(r"^\s+/32 host LOCAL$")
_cache: dict[str, tuple[str, ...]] = {}


def usable(addresses: Iterable[str]) -> tuple[str, ...]:
    """Well-formed, non-loopback IPv4 addresses, sorted, once each."""
    out = set()
    for a in addresses:
        try:
            ip = ipaddress.IPv4Address(a)
        except ValueError:
            continue
        if not ip.is_loopback and not ip.is_unspecified:
            out.add(ip)
    return tuple(str(ip) for ip in sorted(out))


def this_machine() -> list[str]:
    """The IPv4 address of every interface here (psutil, not parsed ifconfig)."""
    import socket

    import psutil

    return [a.address for addrs in psutil.net_if_addrs().values() for a in addrs if a.family == socket.AF_INET]


def parse_ip_addr(text: str) -> list[str]:
    """`ip -4 -o addr show` output -> the addresses."""
    return _INET.findall(text)


def parse_fib_trie(text: str) -> list[str]:
    """/proc/<pid>/net/fib_trie -> the addresses of that network namespace: each leaf that
    holds a `/32 host LOCAL` route, the route the kernel makes for an address of its own
    (a broadcast leaf says BROADCAST). A table that repeats a leaf repeats nothing new."""
    found, leaf = [], None
    for line in text.splitlines():
        m = _FIB_LEAF.match(line)
        if m:
            leaf = m.group(1)
        elif leaf and _FIB_LOCAL.match(line):
            found.append(leaf)
    return found


def local_dockerd(engine_url: str) -> Optional[int]:
    """The pid of the engine when box reaches it through a unix socket that dockerd itself
    made and dockerd is a process here (the socket's peer, SO_PEERCRED: whoever called
    listen()): a Linux host's dockerd started by hand or by its service, rootless or not.
    None for anything else: Docker Desktop's VM behind its proxy, a tcp:// or ssh:// engine,
    a socket some other program serves, systemd's socket activation (the peer is systemd),
    a /proc that hides it."""
    import socket
    import struct

    if not engine_url.startswith("unix://") or not hasattr(socket, "SO_PEERCRED"):
        return None
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(engine_url[len("unix://") :])
            pid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
        with open(f"/proc/{pid}/comm") as comm:
            return pid if pid > 0 and comm.read().strip() == "dockerd" else None
    except OSError:
        return None


def engine_host(client, image: str, engine_url: str, prefix: str) -> list[str]:
    """The engine's host's addresses: the addresses of the network namespace `--network host`
    gives a container, which is dockerd's own. Read from dockerd's /proc/<pid>/net when it is a
    process here (readable by any user); else listed by a one-off container on the host network
    that has no capabilities, a read-only root and runs only `ip addr` as nobody."""
    pid = local_dockerd(engine_url)
    if pid is not None:
        try:
            with open(f"/proc/{pid}/net/fib_trie") as fib:
                return parse_fib_trie(fib.read())
        except OSError:
            pass
    from .throwaway import throwaway

    with throwaway(client, runflags.host_lister_kwargs(image), prefix) as lister:
        lister.start()
        lister.wait(timeout=60)
        out = lister.logs(stdout=True, stderr=False)
    return parse_ip_addr(out.decode(errors="replace"))


def collect(client, image: str, engine_url: str, prefix: str) -> tuple[str, ...]:
    """Both sets, once per process (a command makes several boxes); `prefix` names the
    lister box, when one is needed."""
    if image not in _cache:
        _cache[image] = usable([*this_machine(), *engine_host(client, image, engine_url, prefix)])
    return _cache[image]
