"""The tests' own little world: every target a wall must refuse, and the internet.

All networks are `--internal` (no route off this machine) and their listeners
are containers of ours answering with their own name. The box is attached to
all of them, so each target is one hop away and a refusal can only be the
firewall's: a control container (same image, no walls, same networks) reaches
every one of the same listeners.

    imdt-mac       198.51.100.128/25 + fd00:1d:1::/64 (dual stack: gives the default route)
                   .129 = the gateway = this host   -> "the Mac" (listener on the host)
                   .255 = the subnet's broadcast (listeners answer UDP 9999, broadcasts too)
                   .200 / ::200 = host.docker.internal, gateway.docker.internal, IPv6 target
    imdt-internet  198.51.100.0/25   .10 "internet" (HTTP), .53 "dns" (a resolver that is not ours)
                   .30 = "mac" again, as host.docker.internal and gateway.docker.internal
                   to Docker's resolver here (the only network a box made by `box` is on)
                   .1 = this host on a network that is not its gateway: a listener on
                   :8099 stands for a Mac's public or VPN address
    imdt-lan       192.168.77.0/24   .10 "router"
    imdt-private   10.77.0.0/24      .10 "lan10"
    imdt-tailscale 100.100.100.0/24  .100 "tailscale"
    imdt-metadata  169.254.168.0/22  169.254.169.254 "metadata", 169.254.170.2 "ecs-metadata"

TEST-NET-1 and -3 (192.0.2.0/24, 203.0.113.0/24) are this machine's own uplink
and package mirrors, so the tests use only TEST-NET-2.
"""

from __future__ import annotations

import base64
import http.server
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import docker
from docker.types import IPAMConfig, IPAMPool

from imdbox import engine
from imdbox.check.runner import Targets
from imdbox.throwaway import once_free

PREFIX = "imdt-"
# The harness's own containers (listeners, the feed, controls, keepers) run the box image
# for its node and tools, not its entrypoint: its HEALTHCHECK would only fail there, every
# 10 s in each of them, as load on a small machine.
NO_HEALTHCHECK = {"test": ["NONE"]}
LISTENER_JS = (Path(__file__).with_name("listener.mjs")).read_text()


@dataclass(frozen=True)
class Net:
    name: str
    subnet: str
    gateway: str
    subnet6: Optional[str] = None


@dataclass(frozen=True)
class Target:
    name: str
    network: str
    ip: str
    ip6: Optional[str] = None
    # On one more network too: (network, address, the names Docker's resolver answers there).
    also: Optional[tuple[str, str, tuple[str, ...]]] = None


NETS = [
    # First: the dual-stack network, whose gateway becomes the box's default route.
    Net(PREFIX + "mac", "198.51.100.128/25", "198.51.100.129", "fd00:1d:1::/64"),
    Net(PREFIX + "internet", "198.51.100.0/25", "198.51.100.1"),
    Net(PREFIX + "lan", "192.168.77.0/24", "192.168.77.1"),
    Net(PREFIX + "private", "10.77.0.0/24", "10.77.0.1"),
    Net(PREFIX + "tailscale", "100.100.100.0/24", "100.100.100.1"),
    Net(PREFIX + "metadata", "169.254.168.0/22", "169.254.168.1"),
]

# Docker Desktop answers these names (the ones box check probes) for every box. An
# --internal network's resolver has no upstream to ask, so without an answer each lookup
# would hang until the firewall's 2 s bound, twice at every start of every box the `box`
# command makes: the "mac" listener answers to them on the internet network too.
MAC_NAMES = Targets.mac_names
MAC_ON_INTERNET = "198.51.100.30"

TARGETS = [
    Target(
        "mac",
        PREFIX + "mac",
        "198.51.100.200",
        "fd00:1d:1::200",
        also=(PREFIX + "internet", MAC_ON_INTERNET, MAC_NAMES),
    ),
    Target("internet", PREFIX + "internet", "198.51.100.10"),
    Target("dns", PREFIX + "internet", "198.51.100.53"),
    Target("router", PREFIX + "lan", "192.168.77.10"),
    Target("lan10", PREFIX + "private", "10.77.0.10"),
    Target("tailscale", PREFIX + "tailscale", "100.100.100.100"),
    Target("metadata", PREFIX + "metadata", "169.254.169.254"),
    Target("ecs-metadata", PREFIX + "metadata", "169.254.170.2"),
]

GATEWAY_LISTENER_REPLY = b"imd-test-listener:gateway\n"
HOST_LISTENER_PORT = 8099  # on the internet network's gateway: a host address that is not the box's gateway


def check_targets():
    """`box check`'s network probes aimed at this world's listeners, and nothing else."""
    t = {target.name: target for target in TARGETS}
    return Targets(
        lan=(t["router"].ip, t["lan10"].ip),
        tailscale=(t["tailscale"].ip,),
        metadata=(t["metadata"].ip, t["ecs-metadata"].ip),
        ipv6=(t["mac"].ip6,),
        dns_servers=(t["dns"].ip,),
        jail_target=t["metadata"].ip,
        dns_name=f"{PREFIX}listener-internet",  # the box's resolver (Docker's) knows the listener by name
    )


@dataclass
class Topology:
    nets: list[Net]
    targets: dict[str, Target]
    gateway_ip: str  # the Mac as the box's default gateway: a listener on this host
    extra_hosts: dict[str, str]  # what Docker Desktop's names resolve to in this world
    containers: list = field(default_factory=list)
    _servers: list = field(default_factory=list)

    @property
    def network_names(self) -> list[str]:
        return [n.name for n in self.nets]

    @property
    def host_public_url(self) -> str:
        """This host's listener on its (non-private, non-gateway) internet-network address."""
        return f"http://{self.nets[1].gateway}:{HOST_LISTENER_PORT}/"

    def url(self, target: str, path: str = "/", scheme: str = "http") -> str:
        return f"{scheme}://{self.targets[target].ip}{path}"

    def tls_cert(self, target: str) -> str:
        """The PEM of the certificate `target` answers HTTPS with (tests/harness/listener.mjs)."""
        container = next(c for c in self.containers if c.name == f"{PREFIX}listener-{target}")
        found = re.search(rb"^tls-cert (\S+)$", container.logs(), re.M)
        assert found, f"the {target} listener printed no certificate"
        return base64.b64decode(found.group(1)).decode()


class _GatewayHandler(http.server.BaseHTTPRequestHandler):
    reply = GATEWAY_LISTENER_REPLY

    def do_GET(self):
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.end_headers()
        self.wfile.write(self.reply)

    def log_message(self, *args):
        pass


def side_by_side(work, items) -> list:
    """`work` on each item, all at once: each call mostly waits on the engine (a listener's
    start or removal, 0.3 s), and the world's nine one by one were seconds of a quiet machine
    at the run's start and end. The first error is raised once all are done."""
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(len(items)) as pool:
        return list(pool.map(work, items))


def apart(networks) -> list[list]:
    """The networks' containers in groups that share no network. Docker's 20.10.24 can
    deadlock when two containers leave one network at once (see scripts/test): a group is
    removed one by one, the groups side by side."""
    groups: list[dict] = []  # each: its containers by id
    for n in networks:
        merged = {c.id: c for c in n.containers}
        for g in [g for g in groups if merged.keys() & g.keys()]:
            groups.remove(g)
            merged.update(g)
        groups.append(merged)
    return [list(g.values()) for g in groups if g]


def _remove_leftovers(client: docker.DockerClient) -> None:
    # Anything still attached (listeners, boxes of an interrupted run) goes too:
    # the subnets are fixed, so only one topology can exist at a time.
    networks = client.networks.list(names=[n.name for n in NETS])
    for n in networks:
        n.reload()
    side_by_side(lambda group: [engine.remove_box(c) for c in group], apart(networks))
    side_by_side(lambda n: once_free(n.remove, in_use=(403, 409)), networks)  # 403: active endpoints
    for t in TARGETS:  # a listener whose network went first
        for c in client.containers.list(all=True, filters={"name": f"^{PREFIX}listener-{t.name}$"}):
            c.remove(force=True)


def _create_network(client: docker.DockerClient, net: Net):
    pools = [IPAMPool(subnet=net.subnet, gateway=net.gateway)]
    if net.subnet6:
        pools.append(IPAMPool(subnet=net.subnet6))
    return client.networks.create(
        net.name,
        driver="bridge",
        internal=True,  # never a route off this machine
        enable_ipv6=bool(net.subnet6),
        ipam=IPAMConfig(pool_configs=pools),
        labels={"imd-test": "1"},
    )


def _start_listener(client: docker.DockerClient, image: str, target: Target):
    networking = client.api.create_networking_config(
        {target.network: client.api.create_endpoint_config(ipv4_address=target.ip, ipv6_address=target.ip6)}
    )
    host_config = client.api.create_host_config(network_mode=target.network)
    cid = client.api.create_container(
        image,
        entrypoint=["node", "--input-type=module", "-e", LISTENER_JS],
        command=[],
        environment={"LISTENER_NAME": target.name, "LISTENER_IP": target.ip},
        labels={"imd-test": "1"},
        healthcheck=NO_HEALTHCHECK,
        name=f"{PREFIX}listener-{target.name}",
        host_config=host_config,
        networking_config=networking,
    )["Id"]
    if target.also:
        network, ip, aliases = target.also
        client.api.connect_container_to_network(cid, network, ipv4_address=ip, aliases=list(aliases))
    client.api.start(cid)
    return client.containers.get(cid)


def start_again(topo: Topology) -> None:
    """The listeners, stopped (an engine restart: they have no restart policy), started again."""

    def start(container) -> None:
        container.reload()
        assert container.status == "exited", (container.name, container.status)
        container.start()

    side_by_side(start, topo.containers)


def _wait_listening(container, timeout: float = 20.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if b"listening:" in container.logs():
            return
        container.reload()
        if container.status == "exited":
            raise RuntimeError(f"listener {container.name} died: {container.logs().decode()}")
        time.sleep(0.2)
    raise RuntimeError(f"listener {container.name} did not start")


def _plan() -> Topology:
    """The topology as data: what build() makes, and what attach() finds."""
    return Topology(
        nets=list(NETS),
        targets={t.name: t for t in TARGETS},
        gateway_ip=NETS[0].gateway,
        extra_hosts=dict.fromkeys(MAC_NAMES, TARGETS[0].ip),
    )


def attach(client: docker.DockerClient) -> Topology:
    """The topology another process of this run built (a parallel run's workers): the
    same world, its listeners looked up; its teardown is the builder's."""
    topo = _plan()
    topo.containers = [client.containers.get(f"{PREFIX}listener-{t.name}") for t in TARGETS]
    return topo


def build(client: docker.DockerClient, image: str) -> Topology:
    _remove_leftovers(client)
    for net in NETS:
        _create_network(client, net)
    topo = _plan()
    topo.containers = side_by_side(lambda t: _start_listener(client, image, t), TARGETS)
    side_by_side(_wait_listening, topo.containers)
    # The gateway addresses live on this host's bridges: the listeners are ours, on this host.
    host_handler = type("_HostHandler", (_GatewayHandler,), {"reply": b"imd-test-listener:host-public\n"})
    for address, handler in (
        ((topo.gateway_ip, 80), _GatewayHandler),
        ((NETS[1].gateway, HOST_LISTENER_PORT), host_handler),
    ):
        server = http.server.ThreadingHTTPServer(address, handler)
        # Its shutdown waits for the loop to look again: every 0.1 s, not the default 0.5 s.
        threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True).start()
        topo._servers.append(server)
    return topo


def teardown(client: docker.DockerClient, topo: Topology) -> None:
    side_by_side(lambda server: (server.shutdown(), server.server_close()), topo._servers)
    _remove_leftovers(client)
