"""How many attempts each wall refused since the box started: the firewall's own rule
counters (firewall/init-firewall.sh writes the rules), read through one root exec of the
image's iptables and ip6tables, by absolute path, with fixed arguments. Nothing stays
running as root to watch; a restart sets the rules, and so the counters, anew.

`iptables -S OUTPUT -v` prints each rule as the firewall wrote it, with `-c PACKETS BYTES`
before its target. Each REJECT rule is one wall's, by its match; a line of any other shape
is an error, never a guess.
"""

from __future__ import annotations

import re
from typing import Optional

import docker.errors

from . import engine
from .errors import BoxError
from .layout import IP6TABLES, IPTABLES, LOOPBACK_V4, REFUSED_V4

# In the order `box status` shows them.
WALLS = (
    "the Mac",
    "home network",
    "Tailscale",
    "cloud metadata",
    "multicast/broadcast",
    "DNS elsewhere",
    "reserved ranges",
    "IPv6",
)
# Both listings in one exec, since each exec is an ssh login of its own over an ssh:// engine:
# the IPv6 one after a line no listing holds.
_SPLIT = "-- IPv6 --"
LIST = f'"$0" -w -S OUTPUT -v && echo "{_SPLIT}" && "$1" -w -S OUTPUT -v'  # sh, with $0 and $1 the tools
READ = ["/bin/sh", "-c", LIST, IPTABLES, IP6TABLES]

# Each refused range's rule, as the firewall writes it (the loopback's on every other device).
_NETS = {(f"{net} ! -o lo" if net == LOOPBACK_V4 else net): wall for net, wall in REFUSED_V4.items()}
_MATCHES = {
    "-p udp -m udp --dport 53": "DNS elsewhere",
    "-p tcp -m tcp --dport 53": "DNS elsewhere",
    "-m addrtype --dst-type BROADCAST": "multicast/broadcast",
    "-m addrtype --dst-type MULTICAST": "multicast/broadcast",
    "-m addrtype --dst-type ANYCAST": "multicast/broadcast",
}
# IPv6: the kernel's own ICMPv6 (firewall/init-firewall.sh), refused but not an attempt.
_KERNEL_V6 = {f"-p ipv6-icmp -m icmp6 --icmpv6-type {t}" for t in (133, 135, 143)}
_HOST = re.compile(r"-d (\d{1,3}\.){3}\d{1,3}/32")  # the Mac's addresses, one rule each
_POLICY = re.compile(r"-P OUTPUT DROP -c \d+ \d+")
_ANY_POLICY = re.compile(r"-P OUTPUT (?P<target>ACCEPT|DROP) -c (?P<packets>\d+) \d+")
_RULE = re.compile(
    r"-A OUTPUT (?:(?P<match>.+?) )?-c (?P<packets>\d+) \d+ -j (?P<target>ACCEPT|REJECT)(?: --reject-with \S+)?"
)


def _v4_wall(match: str) -> str:
    if match in _MATCHES:
        return _MATCHES[match]
    if match.startswith("-d ") and match[3:] in _NETS:
        return _NETS[match[3:]]
    if _HOST.fullmatch(match):
        return "the Mac"
    raise ValueError(match)


def count(v4: str, v6: str) -> dict[str, int]:
    """Refused packets per wall, from the two listings. Raises ValueError on a line that is
    not one the firewall writes."""
    counts = dict.fromkeys(WALLS, 0)
    for family, text in (("v4", v4), ("v6", v6)):
        for line in text.splitlines():
            if not line or _POLICY.fullmatch(line):
                continue
            m = _RULE.fullmatch(line)
            if not m:
                raise ValueError(line)
            match = m["match"] or ""
            if m["target"] == "ACCEPT" or (family == "v6" and match in _KERNEL_V6):
                continue
            if family == "v6" and match:
                raise ValueError(line)
            wall = "IPv6" if family == "v6" else _v4_wall(match)
            counts[wall] += int(m["packets"])
    return counts


def tally(v4: str, v6: str) -> tuple[int, int]:
    """Packets refused and packets let out of the box, from the two listings: every REJECT
    rule's (the kernel's own IPv6 aside), and every ACCEPT rule's or ACCEPT policy's but the
    loopback's, which also carries the firewall's own answers to what it refused back to the
    box. Lines of other shapes are passed over: this reads a firewall that may have been
    changed (box check's twins), not only the one box wrote."""
    refused = let_out = 0
    for family, text in (("v4", v4), ("v6", v6)):
        for line in text.splitlines():
            if policy := _ANY_POLICY.fullmatch(line):
                let_out += int(policy["packets"]) if policy["target"] == "ACCEPT" else 0
                continue
            rule = _RULE.fullmatch(line)
            if rule is None:
                continue
            if rule["target"] == "ACCEPT":
                let_out += 0 if rule["match"] == "-o lo" else int(rule["packets"])
            elif not (family == "v6" and rule["match"] in _KERNEL_V6):
                refused += int(rule["packets"])
    return refused, let_out


def read(container) -> dict[str, int]:
    """The counts in a running box."""
    try:
        return count(*listings(container))
    except ValueError as exc:
        raise BoxError(f"the firewall's counters could not be read: a rule box did not write ({exc})") from None


def listings(container) -> tuple[str, str]:
    """The IPv4 and IPv6 listings of a running box, counters and all."""
    try:
        code, out = engine.exec_as_root(container, READ)
    except docker.errors.APIError as exc:  # it stopped, or Docker began restarting it, meanwhile
        raise BoxError(f"the firewall's counters could not be read (the engine: {exc.explanation or exc})") from None
    both = split(out)
    if code != 0 or both is None:
        raise BoxError(f"the firewall's counters could not be read (iptables and ip6tables: exit {code})")
    return both


def split(out: str) -> Optional[tuple[str, str]]:
    """LIST's output as the IPv4 and IPv6 listings; None if it is not whole."""
    v4, found, v6 = out.partition(f"\n{_SPLIT}\n")
    return (v4, v6) if found else None
