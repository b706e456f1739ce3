"""The attempts each wall refused, from the firewall's own counters (imdbox/refused.py):
read from a walled box on the test world that tries each wall, and from one that tries
nothing (the control: all 0). Every probe aims at a listener of the harness's own."""

from __future__ import annotations

import shlex

import docker.errors
import pytest

from imdbox import layout, refused
from imdbox.engine import AS_IMD
from imdbox.errors import BoxError
from tests.harness import boxes
from tests.harness.jobs import WORK_ROOT

pytestmark = pytest.mark.usefixtures("box_image")

# One attempt at each wall, as imd, each aimed at the test world's own listener for it (the
# reserved ranges have none: their rules are read in the listing test below).
ATTEMPTS = {
    "the Mac": "curl -sS -m 2 http://198.51.100.200/",
    "home network": "curl -sS -m 2 http://10.77.0.10/",
    "Tailscale": "curl -sS -m 2 http://100.100.100.100/",
    "cloud metadata": "curl -sS -m 2 http://169.254.169.254/",
    "multicast/broadcast": "node -e \"require('dgram').createSocket('udp4').send('x', 9999, '224.0.0.251', () => process.exit())\"",
    "DNS elsewhere": "curl -sS -m 2 telnet://198.51.100.53:53",
    "IPv6": "curl -sS -m 2 'http://[fd00:1d:1::200]/'",
}


# From a job's jail, on its network of its own, the same attempts leave through pasta's sockets
# in the box: the same walls refuse them, and count them. But IPv6: a job's network has none
# beyond its loopback, so that attempt fails in the jail and nothing reaches the firewall.
IN_A_JOBS_JAIL = f"mkdir -p {WORK_ROOT}/imdt-job/node && cd {WORK_ROOT}/imdt-job/node && exec {layout.JAIL} claude --program /bin/sh -c "


@pytest.mark.parametrize("where", ["the box", "a job's jail"])
def test_each_wall_counts_the_attempts_it_refused(docker_client, box_image, topology, test_volume, where):
    box = boxes.start_walled(docker_client, box_image, topology, volume=test_volume)
    try:
        before = refused.read(box)
        for wall, command in ATTEMPTS.items():
            if where != "the box":
                command = IN_A_JOBS_JAIL + shlex.quote(command)
            code, out = boxes.run(box, [*AS_IMD, "/bin/sh", "-c", command], user="root")
            assert code != 0 or wall == "multicast/broadcast", (wall, out)  # refused
            after = refused.read(box)
            if where != "the box" and wall == "IPv6":
                assert "after 0 ms" in out and after == before, (out, before, after)
            else:
                assert after[wall] >= before[wall] + 1, (wall, before, after, out)
            before = after
    finally:
        box.remove(force=True)


def test_a_box_that_tries_nothing_counts_nothing(docker_client, box_image, topology, test_volume):
    box = boxes.start_walled(docker_client, box_image, topology, volume=test_volume)
    try:
        assert refused.read(box) == dict.fromkeys(refused.WALLS, 0)
    finally:
        box.remove(force=True)


V4 = """-P OUTPUT DROP -c 0 0
-A OUTPUT -o lo -c 5 300 -j ACCEPT
-A OUTPUT -p udp -m udp --dport 53 -c 2 120 -j REJECT --reject-with icmp-admin-prohibited
-A OUTPUT -m addrtype --dst-type MULTICAST -c 1 60 -j REJECT --reject-with icmp-admin-prohibited
-A OUTPUT -d 198.51.100.200/32 -c 3 180 -j REJECT --reject-with icmp-admin-prohibited
-A OUTPUT -d 10.0.0.0/8 -c 4 240 -j REJECT --reject-with icmp-admin-prohibited
-A OUTPUT -d 127.0.0.0/8 ! -o lo -c 1 60 -j REJECT --reject-with icmp-admin-prohibited
-A OUTPUT -c 9 900 -j ACCEPT
"""
V6 = """-P OUTPUT DROP -c 0 0
-A OUTPUT -o lo -c 0 0 -j ACCEPT
-A OUTPUT -p ipv6-icmp -m icmp6 --icmpv6-type 143 -c 2 192 -j REJECT --reject-with icmp6-adm-prohibited
-A OUTPUT -c 7 420 -j REJECT --reject-with icmp6-adm-prohibited
"""


def test_the_listing_is_read_rule_by_rule():
    assert refused.count(V4, V6) == {
        **dict.fromkeys(refused.WALLS, 0),
        "DNS elsewhere": 2,
        "multicast/broadcast": 1,
        "the Mac": 3,
        "home network": 4,
        "reserved ranges": 1,
        "IPv6": 7,
    }


def test_box_check_tallies_what_was_refused_and_what_was_let_out():
    # The loopback's packets are neither: the firewall's answers to what it refused come back
    # to the box that way. The kernel's own IPv6 messages are no attempt.
    assert refused.tally(V4, V6) == (11 + 7, 9)
    # A firewall changed after box set it (check's twins) is read all the same.
    assert refused.tally("-P OUTPUT ACCEPT -c 4 240\n-N IMDT\n", "") == (0, 4)


@pytest.mark.parametrize(
    "line",
    [
        "-A OUTPUT -d 8.8.8.8/24 -c 1 1 -j REJECT --reject-with icmp-admin-prohibited",  # not a rule box writes
        "-A OUTPUT -c 1 1 -j DROP",
        "-A INPUT -c 1 1 -j ACCEPT",
        "-N IMDT",
    ],
)
def test_a_rule_box_did_not_write_is_an_error_not_a_guess(line):
    with pytest.raises(ValueError):
        refused.count(V4 + line + "\n", V6)


class _Restarting:
    """A box Docker began restarting between `box status` looking and reading: no exec."""

    def exec_run(self, *args, **kwargs):
        raise docker.errors.APIError("409 Conflict", explanation="Container 1234 is restarting")


def test_a_box_that_takes_no_exec_is_one_line_not_a_crash():
    with pytest.raises(BoxError, match=r"counters could not be read \(the engine: Container 1234 is restarting\)"):
        refused.read(_Restarting())
