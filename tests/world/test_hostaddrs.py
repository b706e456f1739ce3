"""The host's addresses the firewall refuses (imdbox/hostaddrs.py): read from dockerd's own
/proc/<pid>/net when the engine is a dockerd on this machine, else listed by a one-off box on
the host network (Docker Desktop's VM, tcp://, ssh://). Both ways must give the same set."""

from __future__ import annotations

import os
import socket

import pytest

from imdbox import hostaddrs
from imdbox.endpoint import endpoint
from tests.conftest import IN_CI
from tests.harness.topology import PREFIX

# As the kernel prints it (two tables): the `/32 host LOCAL` leaves are the namespace's own
# addresses; a subnet's route and a BROADCAST leaf are not.
FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.77.0.0/24 2 0 2
        |-- 10.77.0.0
           /24 link UNICAST
Local:
  +-- 0.0.0.0/0 3 0 5
     +-- 127.0.0.0/8 2 0 2
        |-- 127.0.0.1
           /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 10.77.0.0/24 2 0 2
        |-- 10.77.0.1
           /32 host LOCAL
        |-- 10.77.0.255
           /32 link BROADCAST
     |-- 198.51.100.1
        /32 host LOCAL
"""


def test_the_local_table_gives_the_addresses_and_nothing_else():
    assert hostaddrs.parse_fib_trie(FIB_TRIE) == ["127.0.0.1", "10.77.0.1", "198.51.100.1"]
    assert hostaddrs.usable(hostaddrs.parse_fib_trie(FIB_TRIE)) == ("10.77.0.1", "198.51.100.1")


def test_only_a_socket_dockerd_serves_is_read_from_proc(tmp_path):
    assert hostaddrs.local_dockerd("tcp://127.0.0.1:2375") is None
    assert hostaddrs.local_dockerd("ssh://root@127.0.0.1") is None
    assert hostaddrs.local_dockerd(f"unix://{tmp_path}/none-such.sock") is None
    # A socket this test serves (as a proxy in front of an engine would): its peer is not dockerd.
    path = tmp_path / "proxy.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)  # a connection waits in the backlog: nobody need accept it
    try:
        assert hostaddrs.local_dockerd(f"unix://{path}") is None
    finally:
        server.close()


def test_dockerd_here_gives_the_addresses_the_lister_box_gives(docker_client, box_image, topology):
    url = endpoint(os.environ).host  # the suite's engine, as box finds it
    if hostaddrs.local_dockerd(url) is None:
        if IN_CI:
            pytest.fail(f"CI=true on this machine: dockerd must serve {url} itself", pytrace=False)
        pytest.skip(f"{url} is not served by a dockerd on this machine")
    read = hostaddrs.usable(hostaddrs.engine_host(docker_client, box_image, url, PREFIX + "box"))
    # Any URL that is not a unix socket's takes the lister box (as tcp:// and ssh:// engines do).
    listed = hostaddrs.usable(hostaddrs.engine_host(docker_client, box_image, "tcp://the-lister", PREFIX + "box"))
    assert read == listed
    # The test networks' gateways are this host's addresses, as a Linux server's public IP is.
    assert {net.gateway for net in topology.nets} <= set(read)
