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

from . import runflags

_INET = re.compile(r"\binet (\d+\.\d+\.\d+\.\d+)/\d+")
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


def engine_host(client, image: str) -> list[str]:
    """The engine's host's addresses, listed by a one-off container on the host network
    that has no capabilities, a read-only root and runs only `ip addr` as nobody."""
    from .throwaway import throwaway

    with throwaway(client, runflags.host_lister_kwargs(image)) as lister:
        lister.start()
        lister.wait(timeout=60)
        out = lister.logs(stdout=True, stderr=False)
    return parse_ip_addr(out.decode(errors="replace"))


def collect(client, image: str) -> tuple[str, ...]:
    """Both sets, once per process (a command makes several boxes)."""
    if image not in _cache:
        _cache[image] = usable([*this_machine(), *engine_host(client, image)])
    return _cache[image]
