"""The walls `box check` proves, in the order it prints them.

Each id matches a probe in probe/ (its main.mjs's CHECKS); a wall with no result from the box is a FAIL.
"""

from __future__ import annotations

from typing import NamedTuple


class Wall(NamedTuple):
    number: int
    id: str
    title: str


WALLS: list[Wall] = [
    Wall(1, "user", "user: the worker is imd, not root"),
    Wall(2, "capabilities", "capabilities: all five sets empty"),
    Wall(3, "no_new_privs", "no_new_privs: on, and no setuid file to use"),
    Wall(4, "seccomp", "seccomp: filter mode on"),
    Wall(5, "mounts", "the Mac's files: nothing mounted from the host"),
    Wall(6, "firewall", "firewall: there, and imd cannot read or change it"),
    Wall(7, "mac", "the Mac: host.docker.internal and the gateway refused"),
    Wall(8, "lan", "your router / home network: private ranges refused"),
    Wall(9, "tailscale", "Tailscale: 100.64.0.0/10 refused"),
    Wall(10, "metadata", "cloud metadata: 169.254.169.254, 169.254.170.2 refused"),
    Wall(11, "multicast", "multicast / broadcast (mDNS, SSDP, own subnets) refused"),
    Wall(12, "ipv6", "IPv6: every destination refused"),
    Wall(13, "dns", "DNS: the box's resolver only"),
    Wall(14, "internet", "the internet: reachable"),
    Wall(15, "browser", "the browser: works behind the walls"),
    Wall(16, "read_jail", "read jail: a job's jail keeps the home, and the job still works"),
    Wall(17, "jailed_root", "jailed root vs the firewall"),
    Wall(18, "resources", "resource caps: CPUs, memory, pids"),
    Wall(19, "secrets", "the worker's secrets are private"),
    Wall(20, "image", "the image: pinned tools present"),
    Wall(21, "read_only", "the image is read-only: nobody can change it"),
    Wall(22, "host_addrs", "the Mac by any of its addresses: refused"),
    Wall(23, "worker_hands", "the worker's hands: its git and forge on a job's tree"),
    Wall(24, "worker_view", "the worker's view: no agent CLI, login or git of its own"),
]

BY_ID = {w.id: w for w in WALLS}
BY_NUMBER = {w.number: w for w in WALLS}

# The lines a job's jail runs again, on a job's network of its own (probe/network.mjs
# fromJobsJail), with the firewall's counters read around them (counters.py).
FROM_A_JOBS_JAIL: tuple[str, ...] = ("mac", "lan", "tailscale", "metadata", "multicast", "ipv6", "dns", "host_addrs")
