"""The walls `box check` proves, in the order it prints them.

Each id matches a probe in probe/ (its main.mjs's CHECKS); a wall with no result from the box is a FAIL.
"""

from __future__ import annotations

from typing import NamedTuple


class Wall(NamedTuple):
    number: int
    id: str
    title: str  # what the line proves, in full (JSON's "wall")
    short: str  # its name on the report's one line: at most 52 characters, so "NN FAIL <short>" fits 60


WALLS: list[Wall] = [
    Wall(1, "user", "user: the worker is imd, not root", "user: imd, not root"),
    Wall(2, "capabilities", "capabilities: all five sets empty", "capabilities: none"),
    Wall(3, "no_new_privs", "no_new_privs: on, and no setuid file to use", "no_new_privs: on, no setuid file"),
    Wall(4, "seccomp", "seccomp: filter mode on", "seccomp: filter on"),
    Wall(5, "mounts", "the Mac's files: nothing mounted from the host", "the Mac's files: none mounted"),
    Wall(6, "firewall", "firewall: there, and imd cannot read or change it", "firewall: set, out of imd's reach"),
    Wall(7, "mac", "the Mac: host.docker.internal and the gateway refused", "the Mac: refused"),
    Wall(8, "lan", "your router / home network: private ranges refused", "your home network: refused"),
    Wall(9, "tailscale", "Tailscale: 100.64.0.0/10 refused", "Tailscale: refused"),
    Wall(10, "metadata", "cloud metadata: 169.254.169.254, 169.254.170.2 refused", "cloud metadata: refused"),
    Wall(
        11, "multicast", "multicast / broadcast (mDNS, SSDP, own subnets) refused", "multicast and broadcast: refused"
    ),
    Wall(12, "ipv6", "IPv6: every destination refused", "IPv6: refused"),
    Wall(13, "dns", "DNS: the box's resolver only", "DNS: the box's resolver only"),
    Wall(14, "internet", "the internet: reachable", "the internet: reachable"),
    Wall(15, "browser", "the browser: works behind the walls", "the browser: works"),
    Wall(
        16,
        "read_jail",
        "read jail: a job's jail keeps the home, and the job still works",
        "read jail: a job sees its workspace alone",
    ),
    Wall(17, "jailed_root", "jailed root vs the firewall", "jailed root: the firewall holds"),
    Wall(18, "resources", "resource caps: CPUs, memory, pids", "resource caps: CPUs, memory, pids"),
    Wall(19, "secrets", "the worker's secrets are private", "the worker's secrets: private"),
    Wall(20, "image", "the image: pinned tools present", "the image: its pinned tools"),
    Wall(21, "read_only", "the image is read-only: nobody can change it", "the image: read-only"),
    Wall(22, "host_addrs", "the Mac by any of its addresses: refused", "the Mac by any address: refused"),
    Wall(
        23,
        "worker_hands",
        "the worker's hands: its git and forge on a job's tree",
        "the worker's hands: in a job's jail",
    ),
    Wall(
        24,
        "worker_view",
        "the worker's view: no agent CLI, login or git of its own",
        "the worker's view: no CLI, login or git",
    ),
    Wall(
        25,
        "login_broker",
        "the Claude login: no job's jail holds it, the login broker does",
        "the Claude login: in no job's jail",
    ),
]

BY_ID = {w.id: w for w in WALLS}
BY_NUMBER = {w.number: w for w in WALLS}

# The lines a job's jail runs again, on a job's network of its own (probe/network.mjs
# fromJobsJail), with the firewall's counters read around them (counters.py).
FROM_A_JOBS_JAIL: tuple[str, ...] = ("mac", "lan", "tailscale", "metadata", "multicast", "ipv6", "dns", "host_addrs")
