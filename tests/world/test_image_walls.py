"""Every wall of the image, proven against the real engine.

Each network wall shows both sides: the walled box (the worker's exact flags)
is refused, fast, AND a control (same image, no walls, same networks) reaches
the same listener, so the refusal is the firewall's doing and not a missing
route. All targets are the harness's own listeners on --internal networks.
"""

from __future__ import annotations

import time

import pytest

from imdbox.runflags import CAPABILITIES, HOST_ADDRS_ENV
from tests.harness import boxes
from tests.harness.topology import GATEWAY_LISTENER_REPLY

# In a parallel run (-n) one worker runs this module's tests: its walled box and controls are module fixtures.
pytestmark = pytest.mark.xdist_group("image_walls")

MARKER = "worker-command-ran"


@pytest.fixture(scope="module")
def module_volume(docker_client):
    with boxes.volume(docker_client) as name:
        yield name


@pytest.fixture(scope="module")
def walled(docker_client, box_image, topology, module_volume):
    box = boxes.start_walled(docker_client, box_image, topology, volume=module_volume)
    yield box
    box.remove(force=True)


@pytest.fixture(scope="module")
def control(docker_client, box_image, topology):
    box = boxes.start_control(docker_client, box_image, topology)
    yield box
    box.remove(force=True)


def both_sides(walled, control, url):
    """The box is refused (fast) and the control reaches the same listener."""
    started = time.monotonic()
    refused = boxes.http_probe(walled, url)
    elapsed = time.monotonic() - started
    reached = boxes.http_probe(control, url)
    assert reached.reached, f"control could not reach {url}: {reached} (the test world is broken, not the wall)"
    assert refused.outcome == "refused", f"walled box was not refused at {url}: {refused}"
    assert elapsed < 2.5, f"refusal took {elapsed:.1f}s: walls must REJECT, not DROP"


# --- the internet ----------------------------------------------------------------


def test_the_internet_is_reachable(walled, topology):
    probe = boxes.http_probe(walled, topology.url("internet"))
    assert probe.reached and probe.detail.endswith("internet"), probe


# --- the Mac, the home network, Tailscale, metadata -------------------------------


def test_the_mac_as_default_gateway_is_refused(walled, control, topology):
    code, routes = boxes.run(walled, ["ip", "-4", "route", "show", "default"])
    assert topology.gateway_ip in routes, f"premise: the box's default route goes via the test gateway: {routes}"
    url = f"http://{topology.gateway_ip}/"
    assert GATEWAY_LISTENER_REPLY.decode().strip() in boxes.run(control, ["curl", "-sS", "-m", "3", url])[1]
    refused = boxes.http_probe(walled, url)
    assert refused.outcome == "refused", refused


@pytest.mark.parametrize("name", ["host.docker.internal", "gateway.docker.internal"])
def test_the_mac_by_docker_desktops_names_is_refused(walled, control, name):
    both_sides(walled, control, f"http://{name}/")


@pytest.mark.parametrize(
    "target",
    ["router", "lan10", "tailscale", "metadata", "ecs-metadata"],
    ids=["router-192.168", "lan-10/8", "tailscale-100.100.100.100", "metadata-169.254.169.254", "ecs-169.254.170.2"],
)
def test_private_and_special_ranges_are_refused(walled, control, topology, target):
    both_sides(walled, control, topology.url(target))


# --- IPv6 ---------------------------------------------------------------------------


def test_ipv6_is_refused_even_when_the_network_hands_it_out(walled, control, topology):
    code, addrs = boxes.run(walled, ["cat", "/proc/net/if_inet6"])
    assert any(line.startswith("fd00001d0001") for line in addrs.splitlines()), "premise: the box got a v6 address"
    both_sides(walled, control, f"http://[{topology.targets['mac'].ip6}]/")


# --- DNS ----------------------------------------------------------------------------


def test_names_resolve_through_the_containers_resolver(walled):
    code, out = boxes.read(walled, ["getent", "hosts", "imdt-listener-internet"])
    assert code == 0 and "198.51.100.10" in out, out


# Under the firewall's 2 s bound, twice; without it, glibc waits 10 s for each name.
NO_ANSWER_START = 12.0


def test_a_box_whose_resolver_cannot_answer_still_starts_in_seconds(docker_client, box_image, topology, test_volume):
    """On a network with no upstream resolver (imdt-lan alone: no way out, and nobody to
    answer Docker Desktop's names), the firewall's lookups of host.docker.internal and
    gateway.docker.internal are bounded: the walls are up in seconds, not after the
    resolver's own timeouts."""
    started = time.monotonic()
    box = boxes.start_walled(docker_client, box_image, topology, volume=test_volume, alone_on="imdt-lan", timeout=60)
    try:
        took = time.monotonic() - started
        # The lookup really has no answer here: it hangs until a bound ends it (124), no
        # "no such name" (2), so the start above went through the bounded path.
        code, out = boxes.run(box, ["timeout", "3", "getent", "ahostsv4", "host.docker.internal"])
        assert code == 124, (code, out)
        assert took < NO_ANSWER_START, f"the walls took {took:.1f} s on a network whose resolver cannot answer"
    finally:
        box.remove(force=True)


@pytest.mark.parametrize("proto", ["UDP", "TCP"])
def test_dns_to_any_other_server_is_refused(walled, control, topology, proto):
    dns = topology.targets["dns"].ip
    cmd = ["bash", "-c", f"echo query | socat -T2 - {proto}:{dns}:53"]
    code, out = boxes.run(control, cmd)
    assert "imd-test-listener:dns" in out, f"control: {out}"
    started = time.monotonic()
    code, out = boxes.run(walled, cmd)
    assert code != 0 and "imd-test-listener" not in out, out
    assert any(s in out.lower() for s in ("refused", "not permitted", "unreachable", "no route")), out
    assert time.monotonic() - started < 2.5


# --- multicast and broadcast ---------------------------------------------------------


@pytest.mark.parametrize(
    "dest", ["224.0.0.251:5353", "239.255.255.250:1900", "255.255.255.255:9"], ids=["mdns", "ssdp", "broadcast"]
)
def test_multicast_and_broadcast_are_refused(walled, control, dest):
    cmd = ["bash", "-c", f"echo hello | socat - UDP-DATAGRAM:{dest},broadcast"]
    code, out = boxes.run(control, cmd)
    assert code == 0, f"control could not send to {dest}: {out}"
    code, out = boxes.run(walled, cmd)
    assert code != 0 and "not permitted" in out.lower(), out


# --- inbound --------------------------------------------------------------------------


def test_nothing_outside_reaches_a_server_inside(walled, control, topology):
    server = (
        "require('http').createServer((q, s) => s.end('imd-test-listener:inside')).listen(8080, '0.0.0.0', "
        "() => console.log('up'))"
    )
    walled.exec_run(["node", "-e", server], user="imd", detach=True)
    time.sleep(1)
    code, out = boxes.run(walled, ["curl", "-sS", "-m", "2", "http://localhost:8080/"])
    assert "imd-test-listener:inside" in out, f"premise: the server runs inside: {out}"
    walled.reload()
    ip = walled.attrs["NetworkSettings"]["Networks"]["imdt-internet"]["IPAddress"]
    probe = boxes.http_probe(control, f"http://{ip}:8080/", seconds=2)
    assert not probe.reached, probe


# --- the host by an address that is not its gateway, and directed broadcast -----------


def test_the_host_by_a_public_address_is_refused(walled, control, topology):
    both_sides(walled, control, topology.host_public_url)


def test_breaking_twin_without_the_host_addresses_the_host_is_reached(docker_client, box_image, topology, test_volume):
    def forget(kwargs):
        kwargs["environment"].pop(HOST_ADDRS_ENV)

    box = boxes.start_walled(docker_client, box_image, topology, volume=test_volume, mutate=forget)
    try:
        probe = boxes.http_probe(box, topology.host_public_url)
        assert probe.reached and probe.detail.endswith("host-public"), probe
    finally:
        box.remove(force=True)


# A datagram to the box's own subnet's broadcast address on the Mac network
# (198.51.100.128/25 is no private range), with SO_BROADCAST. The listeners there
# log every datagram on 9999 with its sender: that log is the proof it arrived.
BROADCAST_JS = """
import dgram from "node:dgram";
const s = dgram.createSocket("udp4");
const out = (w) => { console.log(w); process.exit(0); };
s.on("error", (e) => out("refused " + e.code));
s.bind(0, () => {
  s.setBroadcast(true);
  s.send("imdt", 9999, "198.51.100.255", (e) => (e ? out("refused " + e.code) : setTimeout(() => out("sent"), 500)));
});
"""


def broadcast(box, topology, user="imd") -> tuple[str, bool]:
    """(what the sender saw, whether the Mac network's listener received it from the box)."""
    code, out = boxes.run(box, ["node", "--input-type=module", "-e", BROADCAST_JS], user=user)
    assert code == 0, out
    box.reload()
    ip = box.attrs["NetworkSettings"]["Networks"][topology.network_names[0]]["IPAddress"]
    listener = next(c for c in topology.containers if c.name.endswith("listener-mac"))
    return out.strip(), f"udp 9999 from {ip}" in listener.logs().decode()


def test_a_directed_broadcast_is_refused(walled, control, topology):
    assert broadcast(control, topology, user="root") == ("sent", True), "the control's broadcast arrives"
    assert broadcast(walled, topology) == ("refused EPERM", False)


def test_breaking_twin_without_the_address_type_rule_a_broadcast_gets_out(
    docker_client, box_image, topology, test_volume
):
    box = boxes.start_walled(docker_client, box_image, topology, volume=test_volume)
    try:
        rule = "OUTPUT -m addrtype --dst-type BROADCAST -j REJECT --reject-with icmp-admin-prohibited"
        code, out = boxes.run(box, ["iptables", "-D", *rule.split()], user="root")
        assert code == 0, out
        assert broadcast(box, topology) == ("sent", True)
    finally:
        box.remove(force=True)


# --- nobody changes the image: read-only root, no setuid ---------------------------------


def test_a_write_to_the_image_fails_read_only_even_for_root(walled):
    for user in ("imd", "root"):
        code, out = boxes.run(walled, ["bash", "-c", "echo x > /usr/local/bin/imdt-write"], user=user)
        assert code != 0 and "Read-only file system" in out, (user, out)
    code, out = boxes.run(walled, ["bash", "-c", "echo x > /tmp/imdt-write && echo written"], user="imd")
    assert code == 0 and "written" in out, out  # the tmpfs is there for temp files


# --- health ---------------------------------------------------------------------------

HEALTHY = ["/usr/local/lib/imd-box/worker/as-imd", "/usr/local/lib/imd-box/worker/healthy"]


def _health(box, want: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        box.reload()
        health = box.attrs["State"].get("Health") or {}
        if health.get("Status") == want:
            return health
        time.sleep(0.5)
    raise AssertionError(f"health never became {want}: {box.attrs['State'].get('Health')}")


def test_the_image_health_check_runs_as_imd_by_path(walled):
    check = walled.attrs["Config"]["Healthcheck"]
    assert check["Test"] == ["CMD", *HEALTHY], check  # the one drop, by path: never root by bare name


def test_health_says_whether_the_walls_were_verified(docker_client, box_image, topology, test_volume):
    """The image's own check, run every second here: healthy with the walls verified;
    the breaking twin removes the entrypoint's marker (as root: the test, not imd)."""

    def fast(kwargs):
        kwargs["healthcheck"] = {"test": ["CMD", *HEALTHY], "interval": 10**9, "timeout": 5 * 10**9, "retries": 1}

    box = boxes.start_walled(docker_client, box_image, topology, volume=test_volume, mutate=fast)
    try:
        health = _health(box, "healthy")
        assert health["Log"][-1]["Output"].strip() == "walls verified", health
        code, out = boxes.run(box, ["rm", "/run/imd-box/walls-verified"], user="imd")
        assert code != 0, "imd removed the walls' marker"
        code, out = boxes.run(box, ["rm", "/run/imd-box/walls-verified"], user="root")
        assert code == 0, out
        health = _health(box, "unhealthy")
        assert "the walls were not verified" in health["Log"][-1]["Output"], health
    finally:
        box.remove(force=True)


# --- the drop to imd --------------------------------------------------------------------


def test_the_worker_runs_as_imd_with_nothing(walled):
    status = boxes.proc_status(walled, boxes.pid_of(walled, "^sleep infinity"))
    assert status["Uid"].split() == ["1000"] * 4
    assert status["Gid"].split() == ["1000"] * 4
    assert status["Groups"].split() == ["1000"]
    for cap_set in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[cap_set], 16) == 0, f"{cap_set} = {status[cap_set]}"
    assert status["NoNewPrivs"] == "1"
    assert status["Seccomp"] == "2", "seccomp filter mode"
    assert status["Umask"] == "0077", "what the worker writes (its device key, logins) is private"


def test_commands_in_the_running_box_get_the_workers_powers_only(walled):
    """`box status`/`box shell` exec through engine.AS_IMD: the same drop as the worker."""
    from imdbox.engine import AS_IMD

    code, out = boxes.run(
        walled, [*AS_IMD, "bash", "-c", "id -u; id -G; umask; grep -E '^(Cap|NoNew)' /proc/self/status"], user="root"
    )
    assert code == 0, out
    lines = out.split()
    assert lines[:3] == ["1000", "1000", "0077"], out
    for cap_set in ("CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"):
        assert int(lines[lines.index(cap_set) + 1], 16) == 0, out
    assert lines[lines.index("NoNewPrivs:") + 1] == "1", out


def test_the_drop_refuses_to_run_as_anyone_but_root(walled):
    """as-imd starts only as root (docker exec's user): run as imd, it says so and runs nothing."""
    from imdbox.engine import AS_IMD

    code, out = boxes.run(walled, [*AS_IMD, "bash", "-c", "echo RAN"], user="imd")
    assert code == 1 and "RAN" not in out, out
    assert "as-imd: must start as root (got uid 1000)" in out, out


def test_the_worker_cannot_list_or_change_the_rules(docker_client, box_image, topology, test_volume):
    script = (
        "iptables -S >/dev/null 2>&1 && echo LISTED; iptables -F 2>/dev/null && echo FLUSHED; "
        "ip6tables -P OUTPUT ACCEPT 2>/dev/null && echo CHANGED6; "
        "unshare -U -r iptables -F 2>/dev/null && echo JAILED-FLUSHED; "
        f"echo {MARKER}"
    )
    box = boxes.create_walled(docker_client, box_image, topology, volume=test_volume, command=["bash", "-c", script])
    try:
        box.start()
        code, logs = boxes.wait_exit(box)
        assert MARKER in logs, logs
        for verb in ("LISTED", "FLUSHED", "CHANGED6", "JAILED-FLUSHED"):
            assert verb not in logs, logs
    finally:
        box.remove(force=True)
    # The rules are intact afterwards: read them as root in a fresh walled box.
    # (docker exec as root is the test's own view, not the worker's.)


def test_rules_survive_the_worker(walled):
    code, rules = boxes.run(walled, ["iptables", "-S", "OUTPUT"], user="root")
    assert code == 0 and "-A OUTPUT -d 169.254.0.0/16 -j REJECT" in rules, rules


# --- the read jail --------------------------------------------------------------------


JAIL = (
    "mkdir -p ~/.claude && echo secret-login > ~/.claude/.credentials.json && "
    "bwrap --ro-bind / / --tmpfs /home/imd --dev /dev --unshare-all --die-with-parent "
    "bash -c 'ls -A /home/imd; cat /home/imd/.claude/.credentials.json' ; echo jail-exit=$?"
)


def test_bwrap_works_for_the_worker_and_hides_its_home(docker_client, box_image, topology, test_volume):
    box = boxes.create_walled(docker_client, box_image, topology, volume=test_volume, command=["bash", "-c", JAIL])
    try:
        box.start()
        code, logs = boxes.wait_exit(box)
    finally:
        box.remove(force=True)
    assert "jail-exit=1" in logs, logs  # cat failed inside the jail
    assert "No such file" in logs and "secret-login" not in logs, logs


def test_the_jail_needs_the_boxs_seccomp_additions(docker_client, box_image, topology, test_volume):
    def docker_default_seccomp(kwargs):
        kwargs["security_opt"] = [o for o in kwargs["security_opt"] if not o.startswith("seccomp=")]

    box = boxes.create_walled(
        docker_client,
        box_image,
        topology,
        volume=test_volume,
        command=["bash", "-c", JAIL],
        mutate=docker_default_seccomp,
    )
    try:
        box.start()
        code, logs = boxes.wait_exit(box)
    finally:
        box.remove(force=True)
    assert "jail-exit=1" in logs and "bwrap: No permissions to create a new namespace" in logs, logs


# --- fail closed ----------------------------------------------------------------------


def _exits_without_running(docker_client, box_image, topology, volume, mutate):
    box = boxes.create_walled(
        docker_client,
        box_image,
        topology,
        volume=volume,
        command=["bash", "-c", f"echo {MARKER}; sleep 600"],
        mutate=mutate,
    )
    try:
        box.start()
        code, logs = boxes.wait_exit(box, timeout=60)
    finally:
        box.remove(force=True)
    assert code != 0, logs
    assert MARKER not in logs, logs
    assert "the worker was not started" in logs or "operation not permitted" in logs.lower(), logs
    return logs


@pytest.mark.parametrize("cap", CAPABILITIES)
def test_each_capability_is_needed(docker_client, box_image, topology, test_volume, cap):
    def drop(kwargs):
        kwargs["cap_add"] = [c for c in kwargs["cap_add"] if c != cap]

    logs = _exits_without_running(docker_client, box_image, topology, test_volume, drop)
    if cap == "NET_ADMIN":
        assert "needs NET_ADMIN" in logs, logs


@pytest.mark.parametrize("given", ["203.0.113.7 not-an-address", "198.51.100.1;iptables -F", "256.1.1.1", "10.0.0.0/8"])
def test_a_malformed_host_address_stops_the_box(docker_client, box_image, topology, test_volume, given):
    def bad(kwargs):
        kwargs["environment"][HOST_ADDRS_ENV] = given

    logs = _exits_without_running(docker_client, box_image, topology, test_volume, bad)
    assert "is not an IPv4 address" in logs, logs


FAKE_IPTABLES_RESTORE = """#!/bin/bash
# A test's stand-in: silently drops the rules refusing other DNS servers from the table.
grep -v -e '--dport 53 -j REJECT' | exec /usr/sbin/iptables-nft-restore "$@"
"""
# Another: the table it is given gains a rule the kernel refuses, so none of it applies.
REFUSED_IPTABLES_RESTORE = """#!/bin/bash
sed 's|^COMMIT$|-A OUTPUT -d 192.0.2.1/99 -j ACCEPT\\nCOMMIT|' | exec /usr/sbin/iptables-nft-restore "$@"
"""


def _shadowed_restore(tmp_path, text: str):
    """A mutate that puts `text` where the firewall finds iptables-restore (the real one
    stays reachable as iptables-nft-restore)."""
    fake = tmp_path / "iptables-restore"
    fake.write_text(text)
    fake.chmod(0o755)

    def mutate(kwargs):
        kwargs["entrypoint"] = [
            "/usr/bin/tini", "--", "bash", "-c",
            "rm /usr/sbin/iptables-restore && cp /fake/iptables-restore /usr/sbin/iptables-restore "
            '&& exec /usr/local/bin/entrypoint.sh "$@"', "entrypoint",
        ]  # fmt: skip
        kwargs["volumes"] = {**kwargs["volumes"], str(tmp_path): {"bind": "/fake", "mode": "ro"}}
        kwargs["read_only"] = False  # the stand-in replaces an image file

    return mutate


def test_a_rule_that_does_not_read_back_stops_the_box(docker_client, box_image, topology, test_volume, tmp_path):
    """The entrypoint reads every rule back: one silently missing rule fails closed."""
    lying = _shadowed_restore(tmp_path, FAKE_IPTABLES_RESTORE)
    logs = _exits_without_running(docker_client, box_image, topology, test_volume, lying)
    assert "rules did not read back" in logs, logs
    assert "--dport 53 -j REJECT" in logs, "the entrypoint says which rule is missing"


def test_a_table_the_kernel_refuses_stops_the_box(docker_client, box_image, topology, test_volume, tmp_path):
    """The table is set in one transaction; refused, the box stops and says why."""
    refused = _shadowed_restore(tmp_path, REFUSED_IPTABLES_RESTORE)
    logs = _exits_without_running(docker_client, box_image, topology, test_volume, refused)
    assert "the rules did not apply" in logs and "invalid mask" in logs, logs


# --- the flags as the engine applied them ---------------------------------------------


def test_the_engine_applied_the_run_flags(walled, docker_client, module_volume):
    host = walled.attrs["HostConfig"]
    info = docker_client.info()
    assert host["CapDrop"] == ["ALL"] and sorted(host["CapAdd"]) == sorted(CAPABILITIES)
    assert host["Privileged"] is False
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert host["NanoCpus"] == int(min(4, info["NCPU"]) * 1e9)
    assert host["Memory"] == min(6 * 1024**3, info["MemTotal"]) == host["MemorySwap"]
    assert host["PidsLimit"] and host["PidsLimit"] > 0
    assert host["ShmSize"] >= 256 * 1024**2
    assert not host.get("PortBindings")
    assert host["Devices"] == [
        {"PathOnHost": "/dev/net/tun", "PathInContainer": "/dev/net/tun", "CgroupPermissions": "rwm"}
    ]
    assert host["Binds"] == [f"{module_volume}:/home/imd:rw"], "the named volume is the only bind"
    mounts = walled.attrs["Mounts"]
    assert [(m["Type"], m["Name"], m["Destination"]) for m in mounts] == [("volume", module_volume, "/home/imd")]


def test_the_image_carries_the_promised_tools(walled):
    code, out = boxes.run(
        walled,
        [
            "bash",
            "-c",
            "node --version; npm --version; git --version; forge --version; bwrap --version; socat -V | head -2",
        ],
    )
    assert code == 0, out
    assert "v24." in out and "\n11." in out and "git version" in out and "1.7.1" in out and "bubblewrap" in out
