"""`box check` tells the truth: every line is ok on a healthy box, and each line
turns FAIL when (and only when) the test breaks its wall in a throwaway box.

Every box here runs on the harness's --internal networks and aims only at the
harness's own listeners (tests/harness/topology.py). Walls are broken by the
test — a flag mutated, a rule deleted as root after the firewall, a file changed
in a copy of the image (the box's root is read-only) — never by a product switch.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import io
import json
import os
import re
import socket
import subprocess
import tarfile
import time
from typing import Optional

import pytest

from imdbox import layout, names
from imdbox import volume as volume_mod
from imdbox.check import runner, walls
from imdbox.check.report import Report
from imdbox.check.runner import PROBE_DIR, run_check
from imdbox.check.walls import WALLS
from imdbox.runflags import HOST_ADDRS_ENV
from tests.harness import boxes, login
from tests.harness import topology as topology_mod
from tests.harness.checks import TEST_TARGETS, show
from tests.harness.claude_settings import MANAGED
from tests.harness.twins import (
    JAIL_IN_NO_DOMAIN,
    NO_READY_LAUNCHER,
    PLACES_IN_THE_BOXS_FOLDERS,
    door_with,
    jail_with,
    patched_image,
    script_with,
)

# In a parallel run (-n) its checks spread over the workers, each making the module's fixtures
# (a volume) for its share: one worker's were its long pole. The lines of the healthy report
# are one worker's.
pytestmark = pytest.mark.usefixtures("box_image")

ROOT = names.REPO_ROOT
FIREWALL = "/usr/local/lib/imd-box/firewall/init-firewall.sh"
ENTRYPOINT = "/usr/local/bin/entrypoint.sh"
AS_IMD = layout.AS_IMD
BROWSER_DIR = "/usr/local/lib/imd-box/browser"
REJECT = "-j REJECT --reject-with icmp-admin-prohibited"
ALL = {w.id for w in WALLS}


def browser_in_image(client, image: str) -> bool:
    out = client.containers.run(
        image, entrypoint=["sh", "-c", f"test -f {BROWSER_DIR}/check.mjs && echo yes || echo no"], remove=True
    )
    return out.strip() == b"yes"


@pytest.fixture(scope="module")
def home_volume(docker_client):
    with boxes.volume(docker_client, "checkhome") as name:
        yield name


@pytest.fixture(scope="module")
def has_browser(docker_client, box_image):
    return browser_in_image(docker_client, box_image)


# The lines a job's jail runs again, on its network of its own: each FAILs where no jail runs.
FROM_A_JOBS_JAIL = set(walls.FROM_A_JOBS_JAIL)
# A twin's check runs every line but the browser's, the jail's own (the read jail's, the
# worker's hands' and its view's) and those a job's jail runs again, unless its break is theirs:
# read_jail=True (16, 23 and 25), hands=True (23), view=True (24), network=True, or browser=True (every line) for
# a break of the browser's or one that stops Chromium too. Those are a check's costliest
# (Chromium in 15 and 16; the jail's pass over the network, first and alone; the worker's git
# and forge in 23), and some forty twins would prove again what the healthy runs prove.
# A twin that runs no network line starts on the internet's network alone, as `box` starts a
# box: the other networks hold only those lines' targets.
BUT_THE_BROWSER = [w.id for w in WALLS if w.id != "browser"]
THE_JAILS = {"read_jail", "worker_hands", "login_broker"}
TWINS_LINES = [w for w in BUT_THE_BROWSER if w not in THE_JAILS and w != "worker_view" and w not in FROM_A_JOBS_JAIL]


@pytest.fixture(scope="module")
def check(docker_client, box_image, topology, home_volume):
    def go(
        volume: Optional[str] = None,
        patch: Optional[dict] = None,
        browser: bool = False,
        read_jail: bool = False,
        hands: bool = False,
        view: bool = False,
        network: bool = False,
        **kw,
    ) -> Report:
        more = (THE_JAILS if read_jail else set()) | ({"worker_hands"} if hands else set())
        more |= {"worker_view"} if view else set()
        only = () if browser else TWINS_LINES + sorted(more | (FROM_A_JOBS_JAIL if network else set()))
        whole_world = browser or network
        with patched_image(docker_client, box_image, patch or {}) as image:
            return run_check(
                boxes.engine_of(docker_client, image=image, volume=volume or home_volume),
                networks=topology.network_names if whole_world else [topology.targets["internet"].network],
                extra_hosts=topology.extra_hosts if whole_world else None,
                internet_url=kw.pop("internet_url", topology.url("internet")),
                targets=kw.pop("targets", TEST_TARGETS),
                only=only,
                name_prefix="imdt-check-",
                **kw,
            )

    return go


@pytest.fixture(scope="module")
def healthy(check, docker_client) -> Report:
    # A home of its own, as a new box's: the evidence (HEALTHY_EVIDENCE) is an empty volume's, and
    # a check before it in the module's home leaves folders the secrets line names too.
    with boxes.volume(docker_client, "checkhealthy") as volume:
        return check(volume=volume, browser=True)


def asked(report: Report) -> set:
    """The lines the probe ran: the ones it gave a result for (all, when it gave none)."""
    return set(report.probe_ms) or ALL


def expect_failed(report: Report, expected: set, has_browser: bool, browser_fails: bool = False) -> None:
    """Exactly these lines FAIL, of those the probe ran. Line 15 runs the image's own browser check:
    when the image has none it always says FAIL (missing) and is left out; `browser_fails` when the
    break also stops Chromium (the check must have asked for the browser)."""
    failed = set(report.failed()) & asked(report)
    if not has_browser:
        failed.discard("browser")
    elif browser_fails:
        assert "browser" in asked(report), "a twin that stops Chromium too runs the browser line: browser=True"
        expected = expected | {"browser"}
    assert failed == expected, show(report)


# ---------------------------------------------------------------- helpers that break one wall
# (and tests/harness/twins.py: a copy of the image with files changed, the scripts, door and jail changed)


def after_firewall(script: str) -> dict:
    """The real firewall runs, then `script` runs as root, then the real entrypoint drops
    to imd and the probe starts. (The entrypoint calls the firewall by this path.)"""
    real = (ROOT / "firewall" / "init-firewall.sh").read_bytes()
    wrapper = f"#!/bin/bash\nset -euo pipefail\n{FIREWALL}.real\n{script}\n".encode()
    return {FIREWALL + ".real": real, FIREWALL: wrapper}


def entrypoint_with(old: str, new: str) -> dict:
    return script_with("entrypoint.sh", ENTRYPOINT, (old, new))


def drop_with(old: str, new: str) -> dict:
    """The privilege drop (worker/as-imd, which the entrypoint execs) with one change."""
    return script_with("worker/as-imd", AS_IMD, (old, new))


DROP = "--inh-caps=-all --ambient-caps=-all --bounding-set=-all --no-new-privs"


# ---------------------------------------------------------------- the healthy box


@pytest.mark.alone  # under 10 s on a machine of the user's, not on cores three other tests share
def test_healthy_box_every_line_ok_in_under_10s(check, has_browser):
    # A check of its own, now that the machine is quiet: the module's `healthy` report may
    # be the one made side by side, when this test follows the group's on its worker.
    healthy = check(browser=True)
    failed = set(healthy.failed())
    if not has_browser:
        assert failed == {"browser"}, show(healthy)
        assert "missing from the image" in healthy.by_id("browser").detail
    else:
        assert failed == set(), show(healthy)
    assert [r.number for r in healthy.results] == [w.number for w in WALLS]
    assert healthy.seconds <= 10, f"took {healthy.seconds:.1f} s"


HEALTHY_EVIDENCE = {
    "user": ["uid 1000 (imd)"],
    "capabilities": ["all 0"],
    "no_new_privs": ["NoNewPrivs 1 (PID 1: 1)", "no setuid or setgid file in the image"],
    "seccomp": ["Seccomp 2", "refused"],
    "mounts": ["volume at /home/imd", "no Docker socket"],
    "firewall": ["set and read back: IPv4", "IPv6 11 rules", "Permission denied"],
    "mac": [
        "host.docker.internal 198.51.100.200:80 EHOSTUNREACH",
        "gateway 198.51.100.129:80 EHOSTUNREACH",
        "from a job's jail: host.docker.internal 198.51.100.200:80 ECONNREFUSED",
        "gateway 198.51.100.129:80 ECONNREFUSED (the firewall refused ",
        " and let none out)",
    ],
    "lan": ["192.168.77.10:80 EHOSTUNREACH", "10.77.0.10:80 EHOSTUNREACH"],
    "tailscale": ["100.100.100.100:80 EHOSTUNREACH"],
    "metadata": ["169.254.169.254:80 EHOSTUNREACH", "169.254.170.2:80 EHOSTUNREACH"],
    "multicast": [
        "udp 224.0.0.251:5353 EPERM",
        "udp 255.255.255.255:9 EPERM",
        "udp 198.51.100.255:9 EPERM",
        "from a job's jail: udp 224.0.0.251:5353 left the jail, no answer",
        " and let none out)",
    ],
    "ipv6": ["v6 addresses here", "[fd00:1d:1::200]:80 EACCES", "from a job's jail: no v6 address here"],
    "dns": [
        "imdt-listener-internet -> 198.51.100.10",
        "udp 198.51.100.53:53 EPERM",
        "tcp 198.51.100.53:53 EHOSTUNREACH",
        "from a job's jail: other servers: udp 198.51.100.53:53 left the jail, no answer",
        "tcp 198.51.100.53:53 ECONNREFUSED",
    ],
    "internet": ["GET http://198.51.100.10/ -> 200"],
    "read_jail": [
        "Claude's sandbox (srt, rules from /etc/claude-code/managed-settings.json)",
        "cannot read the Claude login (canary), the Codex login (canary), the device key (canary),"
        " tools.env (canary), another job's workspace or the rest of the home",
        "nor through /proc/<pid>/root",
        "in a job's jail (/usr/local/lib/imd-box/worker/jail)",
        "Claude's own tools and its browser read none of them but the login",
        "all three read the job's own workspace",
        "the worker can",
        "a preview server one command started is reached by the next command and by the browser, and not from"
        " another job's jail nor from the worker",
        "a command gets http://198.51.100.10/ (200)",
        "Codex is not installed (/home/imd/.npm-global/bin/codex): its sandbox is not proved",
        "Claude Code is not installed (/home/imd/.npm-global/bin/claude): a repository's settings are not proved",
    ],
    "jailed_root": [
        "unshare -U -r: list, list v6, add a chain, flush: refused",
        "bwrap --uid 0:",
        "169.254.169.254:80 from the jail: refused",
    ],
    "resources": ["memory 6.0 GiB", "pids 2048"],
    "secrets": ["~: owned by imd"],
    "image": ["node 24.", "forge 1.7.1", "git ", "bwrap ", "socat ", "rg ", "srt 0.0.83"],
    "read_only": ["/usr/local/bin: EROFS", "/etc: EROFS", "/ mounted ro"],
    "host_addrs": [
        "198.51.100.1:80 EHOSTUNREACH",
        "198.51.100.129:80 EHOSTUNREACH",
        "from a job's jail: 8 host address(es)",
        "198.51.100.129:80 ECONNREFUSED",
    ],
    # No agent CLI in this volume: the launchers, the jail and the hands' git and forge, each by
    # name or path and its realpath.
    "worker_view": [
        "9 ways to start an agent CLI, git or forge all call the door; no login;",
        "the door's /proc and signals out of reach; the worker's git ran in a job's jail",
        "a call in the box's own folders refused, and from a job's jail no signal reaches the door or the login broker",
        "box shell has a home of its own and read none of the worker's ~/.gitconfig, ~/.inputrc or ~/.claude.json",
    ],
    # No Claude login in this volume: line 16's or this line's canary of one.
    "login_broker": [
        "a job's jail holds a sentinel of its run's, not a Claude login (canary), which the login broker holds"
    ],
}


# One worker reads every line of the one healthy report (a check with every line).
@pytest.mark.xdist_group("check_healthy")
@pytest.mark.parametrize("wall", sorted(HEALTHY_EVIDENCE))
def test_healthy_line_shows_its_evidence(healthy, wall):
    r = healthy.by_id(wall)
    assert r.ok, show(healthy)
    for piece in HEALTHY_EVIDENCE[wall]:
        assert piece in r.detail, f"{wall}: {piece!r} not in {r.detail!r}"


# ---------------------------------------------------------------- one broken wall per box


def test_1_user_root_in_the_box(check, has_browser):
    # The real entrypoint, but it stays uid 0 (every capability still dropped).
    report = check(
        patch=drop_with("--reuid=imd --regid=imd --init-groups", "--reuid=0 --regid=0 --clear-groups"), browser=True
    )
    # Root without capabilities cannot enter imd's 700 home to set up the read jail's test (16),
    # the worker's hands' (23), its view's (24) or a job's workspace for the network lines' jail,
    # nor map uid 0 into a user namespace without CAP_SETFCAP (17); Chromium's sandbox fails too.
    failing = {"user", "read_jail", "jailed_root", "worker_hands", "worker_view", "login_broker", *FROM_A_JOBS_JAIL}
    expect_failed(report, failing, has_browser, browser_fails=True)
    assert "from a job's jail: cannot make the job's workspace in /home/imd (EACCES)" in report.by_id("lan").detail
    assert "cannot set up the test" in report.by_id("read_jail").detail
    assert "cannot set up the test" in report.by_id("worker_hands").detail
    assert "cannot set up the test" in report.by_id("worker_view").detail
    assert "could not become root in a user namespace" in report.by_id("jailed_root").detail
    assert "uid 0" in report.by_id("user").detail


def test_2_capabilities_bounding_set_kept(check, has_browser):
    report = check(patch=drop_with(DROP, "--inh-caps=-all --ambient-caps=-all --no-new-privs"))
    expect_failed(report, {"capabilities"}, has_browser)
    assert asked(report) == set(TWINS_LINES)  # a twin's check, as the others
    assert "CapBnd=" in report.by_id("capabilities").detail


def test_3_no_new_privs_off(check, has_browser):
    def no_nnp(kw):
        kw["security_opt"] = [o for o in kw["security_opt"] if not o.startswith("no-new-privileges")]

    report = check(mutate=no_nnp, patch=drop_with(DROP, "--inh-caps=-all --ambient-caps=-all --bounding-set=-all"))
    expect_failed(report, {"no_new_privs"}, has_browser)
    assert "NoNewPrivs 0 (PID 1: 0)" in report.by_id("no_new_privs").detail


def test_3_a_setuid_file_in_the_image(check, has_browser):
    # A copy of the image where one file keeps a setuid bit: no_new_privs would be all that stops it.
    report = check(patch={"/usr/local/bin/imdt-setuid": (b"#!/bin/sh\n", 0o4755)})
    expect_failed(report, {"no_new_privs"}, has_browser)
    assert "setuid/setgid files: /usr/local/bin/imdt-setuid" in report.by_id("no_new_privs").detail


def test_4_seccomp_unconfined(check, has_browser):
    def unconfined(kw):
        kw["security_opt"] = [o for o in kw["security_opt"] if not o.startswith("seccomp")] + ["seccomp=unconfined"]

    report = check(mutate=unconfined)
    expect_failed(report, {"seccomp"}, has_browser)
    assert "Seccomp 0" in report.by_id("seccomp").detail


def test_5_host_folder_and_docker_socket_mounted(check, has_browser, tmp_path):
    home = tmp_path / "Users-me"
    home.mkdir()
    (home / "notes.txt").write_text("the Mac's files\n")
    sock_path = tmp_path / "docker.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))  # a socket of our own standing in for Docker's: never the real one
    try:

        def mount_host(kw):
            kw["volumes"] = {
                **kw["volumes"],
                str(home): {"bind": "/Users/me", "mode": "ro"},
                str(sock_path): {"bind": "/var/run/docker.sock", "mode": "ro"},
            }

        report = check(mutate=mount_host)
    finally:
        sock.close()
    expect_failed(report, {"mounts"}, has_browser)
    detail = report.by_id("mounts").detail
    assert "at /Users/me" in detail and "Docker socket at /var/run/docker.sock" in detail


def test_6_worker_keeps_net_admin_and_reads_the_rules(check, has_browser):
    keep = "--inh-caps=-all,+net_admin --ambient-caps=-all,+net_admin --bounding-set=-all,+net_admin --no-new-privs"
    report = check(patch=drop_with(DROP, keep), read_jail=True)
    # bubblewrap refuses to run for a caller holding capabilities: no read jail (16), no
    # jailed root through bwrap (17) and no jail for the worker's hands (23) to prove anything with.
    expect_failed(
        report, {"capabilities", "firewall", "read_jail", "jailed_root", "worker_hands", "login_broker"}, has_browser
    )
    assert "ALLOWED: list, list v6, add a chain, flush" in report.by_id("firewall").detail
    assert "Unexpected capabilities" in report.by_id("read_jail").detail
    assert "Unexpected capabilities" in report.by_id("worker_hands").detail


def test_6_no_firewall_at_all(check, has_browser):
    report = check(patch=entrypoint_with('"$FIREWALL" ||', "true ||"), network=True)
    network = {"mac", "lan", "tailscale", "metadata", "multicast", "ipv6", "dns", "jailed_root", "host_addrs"}
    expect_failed(report, {"firewall"} | network, has_browser)
    assert "no verified firewall" in report.by_id("firewall").detail


def _deleted(*rules: str) -> str:
    return "".join(f"iptables -D OUTPUT {rule} {REJECT}\n" for rule in rules)


# One wall's rules taken out as root after the firewall is up: (the script, the lines that
# then FAIL, what their details must say, what they must not). Each case is one line's
# breaking twin, against the same listeners the healthy run shows refused.
OPENED = {
    # The gateway is also one of the host's own addresses: line 22 sees it open too.
    "7_the_mac": (
        _deleted("-d 198.51.100.200/32", "-d 198.51.100.129/32"),
        {"mac", "host_addrs"},
        {"mac": ["198.51.100.200:80: REACHED", "gateway 198.51.100.129:80: REACHED"]},
        (),
    ),
    "8_private_ranges": (
        _deleted("-d 10.0.0.0/8", "-d 192.168.0.0/16"),
        {"lan"},
        {"lan": ["192.168.77.10:80: REACHED", "10.77.0.10:80: REACHED"]},
        (),
    ),
    "9_tailscale": (_deleted("-d 100.64.0.0/10"), {"tailscale"}, {"tailscale": ["100.100.100.100:80: REACHED"]}, ()),
    # Root in a user namespace aims at the metadata service too: line 17 says so as well.
    "10_metadata": (
        _deleted("-d 169.254.0.0/16"),
        {"metadata", "jailed_root"},
        {
            "metadata": ["169.254.169.254:80: REACHED", "169.254.170.2:80: REACHED"],
            "jailed_root": ["from the jail: reached"],
        },
        (),
    ),
    "11_multicast_and_broadcast": (
        _deleted(
            "-d 224.0.0.0/4", "-d 240.0.0.0/4", "-m addrtype --dst-type BROADCAST", "-m addrtype --dst-type MULTICAST"
        ),
        {"multicast"},
        {"multicast": ["udp 224.0.0.251:5353: SENT", "udp 255.255.255.255:9: SENT"]},
        (),
    ),
    # Only the address-type rule goes: the ranges still cover 255.255.255.255 and the private
    # subnets' broadcasts (still refused: not listed), not a public subnet's the box is on.
    "11_directed_broadcast_by_address_type": (
        _deleted("-m addrtype --dst-type BROADCAST"),
        {"multicast"},
        {"multicast": ["udp 198.51.100.255:9: SENT", "udp 198.51.100.127:9: SENT"]},
        ("10.77.0.255", "255.255.255.255"),
    ),
    "12_ipv6": (
        "ip6tables -F\nip6tables -P INPUT ACCEPT\nip6tables -P OUTPUT ACCEPT",
        {"ipv6"},
        {"ipv6": ["[fd00:1d:1::200]:80: REACHED"]},
        (),
    ),
    "13_another_dns_server": (
        _deleted("-p udp -m udp --dport 53", "-p tcp -m tcp --dport 53"),
        {"dns"},
        {"dns": ["udp 198.51.100.53:53: ANSWERED", "tcp 198.51.100.53:53: REACHED"]},
        (),
    ),
    "14_internet_cut": (
        f"iptables -I OUTPUT 1 -d 198.51.100.10/32 {REJECT}",
        {"internet", "read_jail"},  # a job's commands reach the internet no longer
        {"internet": ["failed"], "read_jail": ["a sandboxed command cannot reach http://198.51.100.10/"]},
        (),
    ),
}


@pytest.mark.parametrize("case", OPENED)
def test_a_rule_changed_after_the_firewall_fails_its_line(check, has_browser, case):
    script, fails, says, never = OPENED[case]
    report = check(patch=after_firewall(script), read_jail="read_jail" in fails, network=True)
    expect_failed(report, fails, has_browser)
    for wall, texts in says.items():
        detail = report.by_id(wall).detail
        assert all(text in detail for text in texts), (wall, detail)
    for wall in says:
        box_side = report.by_id(wall).detail.split("; from a job's jail: ")[0]
        assert not any(text in box_side for text in never), report.by_id(wall).detail


def test_15_browser_check_missing_from_the_image(check, has_browser):
    # A tmpfs over the browser's folder: check.mjs is gone (a tmpfs is no host file, line 5 stays ok).
    def hide(kw):
        kw["tmpfs"] = {**kw["tmpfs"], BROWSER_DIR: "size=1m"}

    report = check(mutate=hide, browser=True)
    assert set(report.failed()) == {"browser"}, show(report)
    assert "check.mjs is missing from the image" in report.by_id("browser").detail


def test_15_browser_check_says_not_ok(check, has_browser):
    fake = b'console.log(JSON.stringify({ok: false, detail: "imdt: the page did not load"}));\n'
    report = check(patch={f"{BROWSER_DIR}/check.mjs": (fake, 0o644)}, browser=True)
    assert set(report.failed()) == {"browser"}, show(report)
    assert report.by_id("browser").detail == "imdt: the page did not load"


def test_16_device_key_and_login_kept_outside_the_denied_paths(check, has_browser, test_volume):
    # The worker's files moved where no rule of the managed settings names them, into a folder
    # the job's jail takes for the workspace (the work root is in it). The login's new place,
    # /var/tmp, is the jail's own.
    env = {"IDENTITYMD_HOME": "/var/tmp/identitymd", "CLAUDE_CONFIG_DIR": "/var/tmp/claude"}
    report = check(volume=test_volume, mutate=lambda kw: kw["environment"].update(env), read_jail=True)
    expect_failed(report, {"read_jail"}, has_browser)
    detail = report.by_id("read_jail").detail
    assert "the sandbox READ the device key (canary) at /var/tmp/identitymd/config.json" in detail
    assert "Claude login" not in detail


CLAUDE_SETTINGS = "/etc/claude-code/managed-settings.json"


def managed_with(change) -> dict:
    """A copy of the image with Claude Code's managed settings changed by `change(settings)`."""
    settings = json.loads(json.dumps(MANAGED))
    change(settings)
    return {CLAUDE_SETTINGS: (json.dumps(settings).encode(), 0o644)}


def test_16_a_sandbox_whose_rules_leave_the_login(check, has_browser):
    # The job's jail holds the Claude login for Claude Code: only the sandbox's rules keep it
    # from a job's commands. Rules that name the device key and tools.env, not the home.
    def two_files(settings):
        settings["sandbox"]["filesystem"]["denyRead"] = ["~/.identitymd/config.json", "~/.identitymd/tools.env"]

    report = check(patch=managed_with(two_files), read_jail=True)
    expect_failed(report, {"read_jail"}, has_browser)
    detail = report.by_id("read_jail").detail
    assert "the sandbox READ the Claude login (canary) at /home/imd/.claude/.credentials.json" in detail, detail
    # /proc/<pid>/root stays shut: the jail's own namespaces refuse it whatever the rules say.
    assert "through /proc/" not in detail
    # Nothing else of the home is in the jail to read.
    assert "device key" not in detail and "another job" not in detail and "rest of the home" not in detail


def test_16_without_the_jobs_jail_claudes_own_tools_read_the_home(check, has_browser):
    # A worker/jail that runs its program with no jail: Claude's sandbox alone still hides the
    # home from a job's commands, but Claude Code's own tools would read all of it.
    passthrough = b"""#!/bin/bash
case "$0" in */hands/git | */hands/forge) set -- "${0##*/}" "$@" ;; esac
case "$1" in
  git) shift && exec /usr/bin/git "$@" ;;
  forge) shift && exec /usr/local/bin/forge "$@" ;;
  *) shift 2 && exec "$@" ;;
esac
"""
    report = check(patch={layout.JAIL: (passthrough, 0o755)}, read_jail=True)
    # The worker's hands (line 23) go through the same jail: their git and forge read the home,
    # and tools.env's values reach a job's environment.
    expect_failed(report, {"read_jail", "worker_hands", "login_broker"}, has_browser)
    hands = report.by_id("worker_hands").detail
    assert "a job's fsmonitor under the worker's git READ the rest of the home" in hands, hands
    assert "a job's environment holds tools.env's IMD_BOX_CHECK_KEY" in hands, hands
    detail = report.by_id("read_jail").detail
    assert f"the job's jail ({layout.JAIL}) READ " in detail, detail
    assert "another job's workspace" in detail and "the rest of the home" in detail, detail
    # The browser Claude Code starts runs in the jail too: without it, Chromium reads the home.
    assert "the browser in the job's jail READ " in detail, detail
    assert "the Claude login" not in detail, detail  # the jail holds it for Claude Code


def test_16_a_sandbox_that_cuts_each_command_off_the_network(check, has_browser):
    # Debian's bwrap as the sandbox's bwrapPath (worker/bwrap keeps --unshare-net): each command
    # in a network of its own, as srt makes it. A preview server is out of reach of the next
    # command and of the browser, and a command reaches nothing, not even the internet.
    stock = b'#!/bin/bash\nexec /usr/bin/bwrap "$@"\n'
    report = check(patch={layout.SANDBOX_BWRAP: (stock, 0o755)}, read_jail=True)
    expect_failed(report, {"read_jail"}, has_browser)
    detail = report.by_id("read_jail").detail
    assert "is out of reach of the next command" in detail and "is out of reach of the browser" in detail, detail
    assert "a sandboxed command cannot reach http://198.51.100.10/" in detail, detail
    assert "READ" not in detail, detail


def test_16_the_managed_settings_allow_running_unsandboxed(check, has_browser):
    def loosen(settings):
        settings["sandbox"]["failIfUnavailable"] = False
        settings["sandbox"]["allowUnsandboxedCommands"] = True

    report = check(patch=managed_with(loosen), read_jail=True)
    expect_failed(report, {"read_jail"}, has_browser)
    detail = report.by_id("read_jail").detail
    assert "failIfUnavailable is not true" in detail and "allowUnsandboxedCommands is not false" in detail


def test_16_no_managed_settings_at_all(check, has_browser):
    # An empty tmpfs over /etc/claude-code (no host file: line 5 stays ok).
    report = check(mutate=lambda kw: kw["tmpfs"].update({"/etc/claude-code": "size=1m"}), read_jail=True)
    expect_failed(report, {"read_jail"}, has_browser)
    assert "ENOENT: Claude Code runs without managed settings" in report.by_id("read_jail").detail


def test_16_a_jail_that_hides_the_workspace_too(check, has_browser):
    # Hiding the whole home would pass a naive check: the job's own workspace must stay readable.
    def whole_home(settings):
        del settings["sandbox"]["filesystem"]["allowRead"]

    report = check(patch=managed_with(whole_home), read_jail=True)
    expect_failed(report, {"read_jail"}, has_browser)
    assert "cannot read the job's own workspace either" in report.by_id("read_jail").detail


def test_16_jobs_that_share_the_boxs_network(check, has_browser):
    # The jail's own text without the network of its own it gives each run: another job's
    # run and the worker reach a job's preview server.
    own = (
        ("--unshare-user --unshare-net ", "--unshare-user "),  # the network's namespace: the box's
        ('/usr/bin/pasta "${net[@]}" -P "$pidfile" "$pid"', "true"),  # and nothing to make it
    )
    report = check(patch=jail_with(*own), read_jail=True)
    expect_failed(report, {"read_jail"}, has_browser)
    detail = report.by_id("read_jail").detail
    assert "was REACHED from another job's jail (" in detail and " and from the worker" in detail, detail
    assert " READ " not in detail, detail  # the jail holds the same files


def test_7_22_a_jobs_network_that_takes_the_gateway_to_the_box(check, has_browser):
    # pasta as it comes: the gateways' addresses (v4 and v6), in the job's network, are the
    # box's own loopback, where the worker's servers listen; the probe listens there meanwhile.
    # (The v6 one only where the job's network has IPv6 at all.)
    report = check(patch=jail_with(("--no-map-gw ", ""), ("-4 ", "")), network=True)
    expect_failed(report, {"mac", "host_addrs", "ipv6"}, has_browser)
    for wall, gateway in (
        ("mac", "198.51.100.129:80"),
        ("host_addrs", "198.51.100.129:80"),
        ("ipv6", "[fd00:1d:1:0:0:0:0:1]:80"),
    ):
        box, jail = report.by_id(wall).detail.split("; from a job's jail: ")
        assert f"{gateway} E" in box, box  # refused in the box itself
        assert f"{gateway}: REACHED (connected)" in jail, jail


def test_7_13_22_what_a_jobs_jail_gets_out_unanswered_the_counters_see(check, has_browser):
    # One datagram more from the job's jail, to an address the firewall lets out and nothing
    # answers on (the internet listener's port 9): the jail sees no more than for a refused one.
    line = "const config = { ...cfg, in_jail: true,"

    def one_more(kw):
        assert line in kw["command"][3], "the probe no longer makes the jail's config so"
        extra = 'targets: { ...cfg.targets, multicast: [...cfg.targets.multicast, ["198.51.100.10", 9]] },'
        kw["command"][3] = kw["command"][3].replace(line, f"{line} {extra}")

    report = check(mutate=one_more, network=True)
    expect_failed(report, FROM_A_JOBS_JAIL, has_browser)
    assert "udp 198.51.100.10:9 left the jail, no answer" in report.by_id("multicast").detail, show(report)
    for wall in FROM_A_JOBS_JAIL:
        assert " and let 1 out: NOT REFUSED)" in report.by_id(wall).detail, show(report)


# An internet URL the box cannot reach: a name no resolver here knows (this world's
# networks are --internal: the lookup goes nowhere), and its twin, the internet listener
# by its name. The DNS line looks up the URL's own name (no dns_name in the targets).
URL_OUT_OF_REACH = {
    "a_name_that_does_not_resolve": ("http://imdt-nowhere.invalid/health", {"dns", "internet", "read_jail"}),
    "twin_the_listener_by_its_name": (f"http://{topology_mod.PREFIX}listener-internet/", set()),
}


def answers_at_once(kw):
    # This world's resolver answers no name it does not know (an --internal network has no
    # upstream), where a real one says NXDOMAIN at once: the box asks once and gives up in a
    # second, as it would on that answer. Else Claude's sandbox in line 16 holds its proxy's
    # lookup (glibc's 5 s, twice) past the sandboxed command's limit. A wall it is not.
    kw["dns_opt"] = ["timeout:1", "attempts:1"]


@pytest.mark.parametrize("case", URL_OUT_OF_REACH)
def test_13_14_16_an_internet_url_out_of_reach_leaves_them_not_proved(check, has_browser, case):
    url, not_proved = URL_OUT_OF_REACH[case]
    targets = dataclasses.replace(TEST_TARGETS, dns_name=None)
    report = check(internet_url=url, targets=targets, browser=True, mutate=answers_at_once)
    assert {r.id for r in report.not_proved()} == not_proved, show(report)
    expect_failed(report, not_proved, has_browser)  # nothing else: the refusals in them still ok
    if has_browser:
        assert report.exit_code == (3 if not_proved else 0), show(report)
    if not_proved:
        assert f"GET {url} failed" in report.by_id("internet").detail, show(report)
        assert "imdt-nowhere.invalid did NOT resolve" in report.by_id("dns").detail, show(report)
        assert "other servers: udp 198.51.100.53:53 EPERM" in report.by_id("dns").detail, show(report)
    else:
        assert f"GET {url} -> 200" in report.by_id("internet").detail, show(report)
        assert "imdt-listener-internet -> 198.51.100.10" in report.by_id("dns").detail, show(report)
        assert f"a command gets {url} (200)" in report.by_id("read_jail").detail, show(report)


def test_13_a_refusal_that_fails_while_the_url_is_out_of_reach_is_a_fail(check, has_browser):
    # The DNS line's refusals broken (another server answers) while the URL's name resolves
    # nowhere: the line is a FAIL, not "not proved"; the internet line alone is not proved.
    script, _, says, _ = OPENED["13_another_dns_server"]
    targets = dataclasses.replace(TEST_TARGETS, dns_name=None)
    url, _ = URL_OUT_OF_REACH["a_name_that_does_not_resolve"]
    report = check(
        patch=after_firewall(script), internet_url=url, targets=targets, network=True, mutate=answers_at_once
    )
    assert {r.id for r in report.not_proved()} == {"internet"}, show(report)
    expect_failed(report, {"dns", "internet"}, has_browser)
    assert all(text in report.by_id("dns").detail for text in says["dns"]), show(report)
    assert report.exit_code == 1


def test_16_17_no_user_namespaces(check, has_browser):
    # Docker's own seccomp profile, without the rule the box adds: no user namespace, so
    # no read jail (16), no jailed root to prove anything about (17), and no job's jail for
    # the worker's hands (23) or for lines 7–13 and 22 to run again in.
    upstream = (ROOT / "seccomp" / "docker-default.json").read_text()

    def docker_default(kw):
        kw["security_opt"] = [o for o in kw["security_opt"] if not o.startswith("seccomp")] + [f"seccomp={upstream}"]

    report = check(mutate=docker_default, read_jail=True, network=True)
    failed = set(report.failed()) & asked(report)  # not the browser (Chromium's sandbox needs user namespaces too)
    assert failed == {"read_jail", "jailed_root", "worker_hands", "login_broker", *FROM_A_JOBS_JAIL}, show(report)
    assert "No permissions to create a new namespace" in report.by_id("metadata").detail, show(report)
    detail = report.by_id("read_jail").detail
    assert "srt in the job's jail did not start" in detail and "No permissions to create a new namespace" in detail, (
        detail
    )
    assert "could not become root in a user namespace" in report.by_id("jailed_root").detail


def clearing_line_16s(shared: bool = False):
    """A check box's `mutate`: line 16 removes what it made (MADE) every millisecond from its
    start, as it does once when it ends, which is at once where its sandbox cannot start
    (test_16_17): while the network lines' jail starts. `shared`: their workspace in MADE too."""
    start = "async function readJail(go) {"
    sweep = " const sweep = setInterval(() => cleanup(MADE), 1); setTimeout(() => clearInterval(sweep), 5000);"

    def mutate(kw):
        assert start in kw["command"][3], "line 16 no longer starts so"
        kw["command"][3] = kw["command"][3].replace(start, start + sweep)
        if shared:
            kw["command"][3] = kw["command"][3].replace(
                "makeDirs(workspace, MADE_NETWORK)", "makeDirs(workspace, MADE)"
            )

    return mutate


def test_a_job_jails_workspace_is_its_own_while_line_16_clears_what_it_made(check):
    report = check(mutate=clearing_line_16s(), read_jail=True, network=True)
    assert not set(report.failed()) & set(FROM_A_JOBS_JAIL), show(report)


def test_twin_a_job_jails_workspace_in_line_16s_list_is_gone_before_the_jail_starts(check):
    report = check(mutate=clearing_line_16s(shared=True), read_jail=True, network=True)
    # Gone before the jail starts in it (the spawn's working directory), or before its place room.
    assert set(FROM_A_JOBS_JAIL) <= set(report.failed()), show(report)
    assert re.search(
        r"from a job's jail: the job's jail (is missing|gave no result .* is not a folder)", report.by_id("mac").detail
    )


def test_7_13_an_answer_waiting_when_the_bound_ends_still_counts(check, has_browser):
    # The probe's event loop busy past the lookups' 2 s bound right after the DNS query
    # goes out, as on a Mac whose cores the jobs take: both answers (the resolver's, line 13,
    # and the system lookup's of host.docker.internal, line 7) are waiting by then, and count.
    query = "const query = resolver.resolve4(cfg.dns_name).catch((e) => e);"

    def starve(kw):
        assert query in kw["command"][3], "the probe no longer starts its DNS query so"
        kw["command"][3] = kw["command"][3].replace(
            query, query + " for (const end = Date.now() + 3000; Date.now() < end; );"
        )

    report = check(mutate=starve, network=True)
    expect_failed(report, set(), has_browser)
    assert "imdt-listener-internet -> 198.51.100.10" in report.by_id("dns").detail, show(report)
    assert "host.docker.internal 198.51.100.200:80 EHOSTUNREACH" in report.by_id("mac").detail, show(report)


def test_18_no_resource_caps(check, has_browser):
    def uncapped(kw):
        for key in ("nano_cpus", "mem_limit", "memswap_limit", "pids_limit"):
            kw.pop(key)

    report = check(mutate=uncapped)
    expect_failed(report, {"resources"}, has_browser)
    detail = report.by_id("resources").detail
    assert "cpus unlimited" in detail and "memory" in detail and "pids max" in detail


def test_19_device_key_readable_by_others(check, has_browser, test_volume):
    # As imd (root in the box has no DAC override): a device key others may read.
    seed = (
        "setpriv --reuid=imd --regid=imd --init-groups -- sh -c "
        "'install -d -m 700 /home/imd/.identitymd && echo {} > /home/imd/.identitymd/config.json "
        "&& chmod 644 /home/imd/.identitymd/config.json'"
    )
    report = check(volume=test_volume, patch=after_firewall(seed))
    expect_failed(report, {"secrets"}, has_browser)
    assert "/home/imd/.identitymd/config.json mode 644" in report.by_id("secrets").detail


def test_16_a_fifo_planted_at_a_secrets_path_is_fail_not_a_hang(check, has_browser, test_volume):
    # As imd would: a FIFO where tools.env goes. Reading it waits for a writer that never
    # comes; the check must say so, not block on it.
    seed = (
        "setpriv --reuid=imd --regid=imd --init-groups -- sh -c "
        "'install -d -m 700 /home/imd/.identitymd && mkfifo -m 600 /home/imd/.identitymd/tools.env'"
    )
    started = time.monotonic()
    report = check(volume=test_volume, patch=after_firewall(seed), read_jail=True)
    assert time.monotonic() - started < 30, show(report)
    expect_failed(report, {"read_jail"}, has_browser)
    assert report.by_id("read_jail").detail == (
        "tools.env: /home/imd/.identitymd/tools.env is not a regular file (a fifo): nothing to prove"
    ), show(report)


def test_20_foundry_and_srt_not_the_pinned_versions(check, has_browser, docker_client, box_image):
    fake = b"#!/bin/sh\necho 'forge Version: 0.0.1-imdt'\n"
    # srt's version is its package.json's: the real one with another version (srt still runs).
    srt_package = os.path.dirname(os.path.dirname(layout.SANDBOX_RUNTIME))
    package = json.loads(
        volume_mod.image_files(boxes.engine_of(docker_client, image=box_image), box_image, srt_package)["package.json"]
    )
    package["version"] = "0.0.2-imdt"
    report = check(
        patch={"/usr/local/bin/forge": fake, f"{srt_package}/package.json": (json.dumps(package).encode(), 0o644)}
    )
    expect_failed(report, {"image"}, has_browser)
    detail = report.by_id("image").detail
    assert "forge 0.0.1-imdt (want 1.7.1)" in detail and "srt 0.0.2-imdt (want 0.0.83)" in detail, detail


def test_21_a_writable_root(check, has_browser):
    report = check(mutate=lambda kw: kw.update(read_only=False))
    expect_failed(report, {"read_only"}, has_browser)
    detail = report.by_id("read_only").detail
    assert "/usr/local/bin: EACCES" in detail and "/ mounted RW" in detail  # only permissions stopped imd


def test_23_the_workers_git_and_forge_outside_the_jail(check, has_browser):
    # worker/hands as the plain tools: the worker's git runs a job's nested fsmonitor with the
    # whole home, and its forge prints what a job's .sol link points at.
    plain = {
        f"{layout.HANDS_DIR}/{t}": (f'#!/bin/bash\nexec {path} "$@"\n'.encode(), 0o755)
        for t, path in [("git", "/usr/bin/git"), ("forge", "/usr/local/bin/forge")]
    }
    report = check(patch=plain, hands=True)
    expect_failed(report, {"worker_hands"}, has_browser)
    detail = report.by_id("worker_hands").detail
    assert "a job's fsmonitor under the worker's git READ the rest of the home" in detail, detail
    assert "the worker's forge showed the rest of the home through a .sol link" in detail, detail
    assert "a link a job's fsmonitor made under the worker's git STAYED" in detail, detail


def test_23_the_workers_hands_without_their_filter(check, has_browser):
    # The hands' jail as it is, less its seccomp filter: a job's fsmonitor makes its links,
    # and on a node found clear of links nothing searches after the call, in the workspace
    # nor beside the bundles.
    unfiltered = (
        ('exec /usr/bin/bwrap "${jail[@]}" --seccomp "$filter" ', 'exec /usr/bin/bwrap "${jail[@]}" '),
        ('/usr/bin/bwrap "${jail[@]}" --seccomp "$filter" --chdir "$cwd" -- "$program" "$@" <&0 &',
         '/usr/bin/bwrap "${jail[@]}" --chdir "$cwd" -- "$program" "$@" <&0 &'),
    )  # fmt: skip
    report = check(patch=jail_with(*unfiltered), hands=True)
    expect_failed(report, {"worker_hands"}, has_browser)
    detail = report.by_id("worker_hands").detail
    assert (
        "a link a job's fsmonitor made under the worker's git STAYED "
        "(node/imd-box-check-link.sol, imd-box-check-link.bundle)" in detail
    ), detail
    assert " READ " not in detail and " showed " not in detail, detail  # the jail holds the rest


def view_with(*changes: tuple[str, str]) -> dict:
    return script_with("worker/door/view", layout.WORKER_VIEW, *changes)


def test_24_a_view_with_the_images_git(check, has_browser):
    # The view without its git stand-in: /usr/bin/git there is the image's, which a worker may
    # run by its path on a job's tree, outside every jail.
    report = check(patch=view_with(('  --ro-bind "$standins/git" /usr/bin/git\n', "")), view=True)
    expect_failed(report, {"worker_view"}, has_browser)
    assert "/usr/bin/git is a real program there" in report.by_id("worker_view").detail


def test_24_a_view_without_landlock(check, has_browser):
    # The view as it is, but no Landlock domain: a worker can signal the door (and a jail).
    report = check(patch=view_with(('-- "$DOOR" landlock /usr/bin/env', "-- /usr/bin/env")), view=True)
    expect_failed(report, {"worker_view"}, has_browser)
    assert "the door can be signalled from there (no Landlock)" in report.by_id("worker_view").detail


def test_24_a_door_that_runs_the_program_unjailed(check, has_browser):
    # A door whose git is the image's, run outside every jail: the worker's git sees the home.
    plain = {f"{layout.JAIL}": (b'#!/bin/bash\n[ "$1" = git ] && shift && exec /usr/bin/git "$@"\nexit 70\n', 0o755)}
    report = check(patch=plain, view=True)
    expect_failed(report, {"worker_view"}, has_browser)
    assert "the worker's git ran outside a job's jail" in report.by_id("worker_view").detail


def test_24_a_broker_started_with_the_workers_environment(check, has_browser):
    # broker/start without its switch: the view starts it with the environment it passes on to
    # the worker, and the broker (beside the owner's login) runs with the worker's HOME.
    report = check(
        patch=script_with("worker/broker/start", layout.BROKER_START, ('own_or_again "$0" "$@"\n', "")), view=True
    )
    expect_failed(report, {"worker_view"}, has_browser)
    detail = report.by_id("worker_view").detail
    assert f"node {layout.BROKER}" in detail and "HOME=/home/imd" in detail, detail


def test_24_a_door_that_hands_the_launcher_the_callers_environment(check, has_browser, tmp_path):
    # The door before the fix, less its list of names to drop: the launcher starts with what the
    # caller set, and bash runs the caller's BASH_ENV in it, outside the view, before the
    # launcher's first line could start it again with the box's own environment. (Nor had it a
    # launcher ready before the call, which no call's environment reaches.)
    callers = (
        "    execve(rt->launcher, argv, own_env);\n",
        "    char *callers[4096];\n    size_t k = 0;\n"
        "    for (char *q = rq->env; q < rq->end && k < 4095; q += strlen(q) + 1) callers[k++] = q;\n"
        "    callers[k] = NULL;\n    execve(rt->launcher, argv, callers);\n",
    )
    report = check(patch=door_with(tmp_path, callers, NO_READY_LAUNCHER), view=True)
    expect_failed(report, {"worker_view"}, has_browser)
    detail = report.by_id("worker_view").detail
    assert "the worker's BASH_ENV RAN outside the view" in detail, detail


def test_24_an_ask_that_reads_the_homes_curlrc(check, has_browser):
    # broker/ask as it ran before the fix: curl with the caller's HOME, reading ~/.curlrc.
    patch = script_with("worker/broker/ask", layout.BROKER_ASK, ('own_or_again "$0" "$@"\n', ""), ("curl -q ", "curl "))
    report = check(patch=patch, view=True)
    expect_failed(report, {"worker_view"}, has_browser)
    detail = report.by_id("worker_view").detail
    assert "the worker's curlrc RAN outside the view" in detail, detail


def test_24_a_kernel_whose_landlock_cannot_scope_signals(check, has_browser, tmp_path):
    # A door on a kernel of Landlock ABI 3 (before Linux 6.12): the view's domain holds no
    # signal scope, and the door says so in the box's log.
    older = ("    return abi < 0 ? 0 : abi;\n", "    return abi < 0 ? 0 : 3;\n")
    report = check(patch=door_with(tmp_path, older), view=True)
    expect_failed(report, {"worker_view"}, has_browser)
    detail = report.by_id("worker_view").detail
    assert "this kernel's Landlock is ABI 3, and scoping signals needs ABI 6 (Linux 6.12)" in detail, detail


def test_24_a_place_room_that_takes_the_boxs_own_folders(check, has_browser):
    report = check(patch=jail_with(*PLACES_IN_THE_BOXS_FOLDERS), view=True)
    expect_failed(report, {"worker_view"}, has_browser)
    detail = report.by_id("worker_view").detail
    folders = ", ".join((layout.RUNS, layout.DOOR_DIR, layout.BROKER_DIR))
    assert f"the worker's git ran in {folders}, the box's own folders" in detail, detail


def test_24_a_jail_in_no_landlock_domain(check, has_browser):
    # It signals the door and the login broker.
    report = check(patch=jail_with(*JAIL_IN_NO_DOMAIN), view=True)
    expect_failed(report, {"worker_view"}, has_browser)
    detail = report.by_id("worker_view").detail
    assert (
        "from a job's jail, " in detail and "of the door's and the login broker's processes can be signalled" in detail
    )


def test_24_a_box_shell_in_the_workers_home(check, has_browser):
    # box shell as it ran before: the worker's home, where its ~/.gitconfig and ~/.inputrc are,
    # and Claude Code's config in the worker's ~/.claude.json.
    before = script_with("worker/owner/box-shell", layout.OWNER_SHELL, ("owner_env\n", "cd ~\n"))
    report = check(patch=before, view=True)
    expect_failed(report, {"worker_view"}, has_browser)
    detail = report.by_id("worker_view").detail
    assert f"box shell's home is the worker's ({names.HOME})" in detail, detail
    assert "box shell's Claude Code reads its config from the worker's" in detail, detail
    assert "box shell READ the worker's ~/.gitconfig, ~/.inputrc" in detail, detail


def test_25_the_login_in_the_jail_by_the_owners_choice(check, has_browser):
    # IMD_BOX_LOGIN=jail, as before the broker: the jail holds the login itself, and says whose choice.
    report = check(mutate=login.in_the_jail, read_jail=True)
    expect_failed(report, {"login_broker"}, has_browser)
    detail = report.by_id("login_broker").detail
    assert "a job's jail holds a Claude login (canary) (the box was started with IMD_BOX_LOGIN=jail" in detail, detail


def test_25_a_jail_that_binds_the_login(check, has_browser):
    # A login room that binds the owner's login into the jail, as the home room did before the broker.
    bound = jail_with(
        (
            '  [ "$runtime" = claude ] && [ -e "$LOGIN" ] || return 0\n',
            '  [ "$runtime" = claude ] && [ -e "$LOGIN" ] || return 0\n  jail+=(--bind "$LOGIN" "$LOGIN") && return 0\n',
        )
    )
    report = check(patch=bound, read_jail=True)
    expect_failed(report, {"login_broker"}, has_browser)
    detail = report.by_id("login_broker").detail
    # The broker was never started: nothing asked it for a sentinel.
    assert detail.startswith("a job's jail holds a Claude login (canary); the login broker does not answer"), detail


def owners_login(ca: str, address: str) -> dict:
    """The owner's Claude login in the volume (planted after the firewall, as imd), and the test
    world's Anthropic at `address` for the box (its names, and its CA in the image's bundle)."""
    text = base64.b64encode(login.owner_login().encode()).decode()
    seed = (
        "setpriv --reuid=imd --regid=imd --init-groups -- sh -c "
        f"'umask 077 && mkdir -p /home/imd/.claude && echo {text} | base64 -d > {login.LOGIN}'"
    )
    patch = {**after_firewall(seed), login.BUNDLE: (login.trusting(ca).encode(), 0o644)}
    return {"patch": patch, "mutate": login.named(address), "read_jail": True}


def test_25_with_the_owners_login_a_request_through_the_broker_gets_the_profile(
    check, has_browser, test_volume, docker_client, box_image, topology
):
    ca, tls = login.certificates()
    internet = topology.targets["internet"].network
    with login.elsewhere(docker_client, box_image, internet, login.anthropic(tls)) as address:
        report = check(volume=test_volume, **owners_login(ca, address))
    expect_failed(report, set(), has_browser)
    detail = report.by_id("login_broker").detail
    assert detail == (
        "a job's jail holds a sentinel of its run's, not the owner's Claude login, which the login broker holds; "
        "a request with it through the broker got the account's profile (200); a job's CONNECT through the broker "
        "to the box's loopback reached nothing, and the broker refuses it by name"
    ), detail


def test_25_a_login_anthropic_refuses(check, has_browser, test_volume, docker_client, box_image, topology):
    # Anthropic knows neither of the login's tokens: the broker's request gets 401, and the line
    # says so, with what to run. (A 401 from the profile, the line's request, makes no refresh:
    # the broker refreshes on the Messages API's alone, docs/broker.md.)
    ca, tls = login.certificates()
    internet = topology.targets["internet"].network
    someone_else = login.anthropic(tls, access="sk-ant-oat01-imdt-other", refresh="sk-ant-ort01-imdt-other")
    with login.elsewhere(docker_client, box_image, internet, someone_else) as address:
        report = check(volume=test_volume, **owners_login(ca, address))
    expect_failed(report, {"login_broker"}, has_browser)
    detail = report.by_id("login_broker").detail
    assert "Anthropic answered a job's request through the broker with 401 (the account's profile)" in detail, detail
    assert "run 'claude' in 'box shell' and log in again" in detail, detail


def test_22_the_host_addresses_not_given_to_the_firewall(check, has_browser):
    def forget(kw):
        kw["environment"].pop(HOST_ADDRS_ENV)

    report = check(mutate=forget, network=True)
    # Without them, the host's address on the internet network is open (the others are
    # still covered: the gateway and the private ranges).
    expect_failed(report, {"host_addrs"}, has_browser)
    assert "198.51.100.1:80: REACHED" in report.by_id("host_addrs").detail


# ---------------------------------------------------------------- planted files answer nothing


FORGED = (
    b"IMD-BOX-CHECK " + json.dumps({"results": [{"id": w.id, "ok": True, "detail": "forged"} for w in WALLS]}).encode()
)
PLANTS = {
    # Claims every rule change worked (line 6 would say ALLOWED if it were asked).
    "iptables": b"#!/bin/sh\necho '-P OUTPUT ACCEPT'\nexit 0\n",
    # Prints a forged all-ok result.
    "node": b"#!/bin/sh\necho '" + FORGED + b"'\n",
}


def plant(client, image: str, volume: str) -> None:
    """As imd would: executables in ~/.npm-global/bin (first on the worker's PATH)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("home/imd/.npm-global", "home/imd/.npm-global/bin"):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, 1000, 1000
            tar.addfile(info)
        for name, data in PLANTS.items():
            info = tarfile.TarInfo(f"home/imd/.npm-global/bin/{name}")
            info.size, info.mode, info.uid, info.gid = len(data), 0o755, 1000, 1000
            tar.addfile(info, io.BytesIO(data))
    staging = client.containers.create(image, command=["true"], volumes={volume: {"bind": "/home/imd"}})
    try:
        assert staging.put_archive("/", buf.getvalue())
    finally:
        staging.remove(force=True)


def test_planted_iptables_and_node_answer_nothing(check, has_browser, docker_client, box_image, test_volume):
    plant(docker_client, box_image, test_volume)
    report = check(volume=test_volume, browser=True)  # the browser's launcher runs node by its path too
    expect_failed(report, set(), has_browser)
    assert not any("forged" in r.detail for r in report.results), show(report)
    assert "Permission denied" in report.by_id("firewall").detail  # the image's iptables answered


def test_planted_node_breaking_twin_a_bare_name_is_fooled(check, docker_client, box_image, test_volume):
    """The same plant with the probe started by its bare name, as before: the volume's node
    answers and every line says what it was told."""
    plant(docker_client, box_image, test_volume)

    def bare_node(kw):
        kw["command"][0] = "node"

    report = check(volume=test_volume, mutate=bare_node)
    assert all(r.ok and r.detail.endswith("forged") for r in report.results), show(report)


# ---------------------------------------------------------------- probes that cannot run


def test_missing_tools_are_fail_not_crash(check, has_browser):
    # The probe is told image paths where nothing is (node and Foundry stay):
    # iptables, bwrap, unshare, setarch, git, socat, find, sh, rg and srt are all "missing".
    gone = ("iptables", "ip6tables", "bwrap", "unshare", "setarch", "git", "socat", "find", "sh", "rg", "srt")

    def missing(kw):
        config = json.loads(kw["command"][-1])
        config["tools"].update({t: f"/nonexistent/{t}" for t in gone})
        kw["command"][-1] = json.dumps(config)

    report = check(mutate=missing, read_jail=True)
    walls = {"no_new_privs", "seccomp", "firewall", "read_jail", "jailed_root", "image", "worker_hands", "login_broker"}
    expect_failed(report, walls, has_browser=False)
    for wall in walls:
        assert "missing from the box" in report.by_id(wall).detail, show(report)


HANG = b"#!/bin/sh\nexec sleep 60\n"


def test_a_hanging_tool_is_fail_not_a_hang(check, has_browser, docker_client, box_image, home_volume):
    started = time.monotonic()
    report = check(patch={"/usr/bin/bwrap": HANG}, read_jail=True)
    # Not a hang: each tool's limit (grown with the machine's load, at most MAX_SCALE times) ends
    # its line, long before the probe's.
    assert time.monotonic() - started < 2 * runner.MAX_SCALE * runner.TOOL_SECONDS
    expect_failed(report, {"read_jail", "jailed_root", "image", "worker_hands", "login_broker"}, has_browser)
    # Each line ends on a limit of its own and says which: a tool's (grown with the machine's
    # load), or, where that grew past 30 s on a busy machine, a job's jail's own wait for the hung
    # bwrap that makes its network. (A line out of time alone is not proved: the cut-off test and
    # line 16 under a CPU hog show that.)
    for wall in ("read_jail", "jailed_root", "image", "worker_hands", "login_broker"):
        line = report.by_id(wall)
        assert not line.ok and ("took longer than" in line.detail or "could not be made" in line.detail), show(report)
    # The tool's own limit ends the line, and names the tool: the hung sleep (the jail's
    # bwrap) holds the pipes, and a line that waited for them would end at the probe's limit.
    assert report.by_id("read_jail").detail.startswith("srt in the job's jail "), show(report)
    # The line's own clean-up ran: every later check on this volume would fail line 16 (EEXIST).
    assert canaries_in(docker_client, box_image, home_volume) == [], "canaries left in the volume"


def test_a_line_cut_off_at_the_probes_limit_leaves_no_canaries(check, docker_client, box_image, home_volume):
    """Tools given longer than the probe's line limit (the config's tool_ms): line 16 is cut
    off mid-way, its own clean-up never runs, and the probe's exit removes its canaries."""

    def patient_tools(kw):
        config = json.loads(kw["command"][-1])
        config["tool_ms"] = 30_000
        # The line limit is the browser's budget plus its slack; the browser line is not
        # asked, so a 1 s budget only brings the cut-off to 5 s instead of 14 s.
        config["browser"]["budget_ms"] = 1000
        kw["command"][-1] = json.dumps(config)

    report = check(patch={"/usr/bin/bwrap": HANG}, mutate=patient_tools, read_jail=True)
    line = report.by_id("read_jail")
    assert line.not_proved and line.detail.startswith("the line's probe took longer than "), show(report)
    assert canaries_in(docker_client, box_image, home_volume) == [], "canaries left in the volume"


# The probe's canary text (what it writes at each path the jail must not read).
CANARY_TEXT = json.loads(re.search(r"const CANARY_TEXT = (\"[^\n]*\");", (PROBE_DIR / "home.mjs").read_text()).group(1))


def canaries_in(client, image: str, volume: str) -> list:
    """The files of the volume that hold the read jail's canary text, found by a box with no network."""
    return boxes.over_volume(
        client, image, volume, '/usr/bin/grep -rlF -- "$0" /v || [ $? = 1 ]', CANARY_TEXT.strip()
    ).split()


def test_a_box_that_never_starts_fails_every_line(check):
    # The box refuses to start without NET_ADMIN (fail closed): every line FAIL, with the reason.
    report = check(mutate=lambda kw: kw["cap_add"].remove("NET_ADMIN"))
    assert set(report.failed()) == ALL
    assert "the probe gave no result" in report.results[0].detail
    assert "the firewall could not be set up" in report.results[0].detail


# --- line 16 on a busy machine --------------------------------------------------------------------

# A tool's limit shrunk (runner.TOOL_SECONDS is 10), so that under the hog the old fixed limit runs
# out for certain: a preview server started in Claude's sandbox in a job's jail takes longer than
# this on a busy machine (at 2 s, line 16 was still ok under the hog on the 2-core machine).
HOG_TOOL_SECONDS = 0.5


@contextlib.contextmanager
def cpu_hog():
    """Twice this machine's cores of busy loops: the box's engine shares them (a Mac busy with the
    worker's jobs)."""
    import sys

    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def old_fixed_limits(source: str) -> str:
    """The probe before its limits grew with the machine's load and a line out of time was not
    proved: every limit an idle machine's, and a run out of time a FAIL."""
    changes = (
        ("Math.min(cfg.scale.max, Math.max(1, bare / cfg.scale.bare_ms))", "1"),
        ("return r.ok !== true && onlyLate([r.detail]) ? { ...r, late: true } : r;", "return r;"),
        ('if (onlyLate(bad)) return { ok: false, detail: bad.join("; "), late: true };', ""),
    )
    for old, new in changes:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


def test_line_16_under_a_cpu_hog_is_ok_or_not_proved(check, monkeypatch):
    from imdbox.check import runner

    monkeypatch.setattr(runner, "TOOL_SECONDS", HOG_TOOL_SECONDS)
    with cpu_hog():
        report = check(read_jail=True)
    line = report.by_id("read_jail")
    print(f"\n[check] line 16 under a CPU hog: ok {line.ok}, not proved {line.not_proved}: {line.detail[:300]}")
    assert line.ok or (line.not_proved and line.late and "took longer than" in line.detail), line
    if not line.ok:
        assert report.exit_code == 3 or any(not r.ok and not r.not_proved for r in report.results), report.results


def test_twin_line_16_with_the_old_fixed_limits_fails_under_a_cpu_hog(check, monkeypatch):
    from imdbox.check import bundle, runner

    monkeypatch.setattr(runner, "TOOL_SECONDS", HOG_TOOL_SECONDS)
    monkeypatch.setattr(runner, "probe_source", lambda: old_fixed_limits(bundle.probe_source()))
    with cpu_hog():
        report = check(read_jail=True)
    line = report.by_id("read_jail")
    print(f"\n[check] twin: line 16 under a CPU hog: {line.detail[:300]}")
    assert not line.ok and not line.not_proved, line


# A machine found busy when a limit runs out (every limit is an idle machine's until then): each
# time the probe times the machine it finds it at its slowest (an idle bare start is 1 ms here:
# the scale is always MAX_SCALE). A job's jail that takes longer to start than a tool's idle
# limit (a wrapper that sleeps first) is then within the limit grown to the machine's load.
SLOW_JAIL = "/usr/local/bin/imdt-slow-jail"
SLOW_JAIL_SECONDS = 4
BUSIER_TOOL_SECONDS = 3  # under SLOW_JAIL_SECONDS: the idle limit runs out for certain


def found_busy(kw):
    config = json.loads(kw["command"][-1])
    config["scale"]["bare_ms"] = 1
    config["tool_ms"] = BUSIER_TOOL_SECONDS * 1000
    config["tools"]["jail"] = SLOW_JAIL
    kw["command"][-1] = json.dumps(config)


def slow_jail() -> dict:
    return {SLOW_JAIL: (f'#!/bin/sh\nsleep {SLOW_JAIL_SECONDS}\nexec {layout.JAIL} "$@"\n'.encode(), 0o755)}


def test_line_16_on_a_busy_machine_grows_its_limits(check):
    report = check(patch=slow_jail(), mutate=found_busy, read_jail=True)
    assert report.by_id("read_jail").ok, show(report)


def test_twin_line_16_with_limits_that_never_grow_is_late(check, monkeypatch):
    from imdbox.check import bundle

    grows = "if (grown > allowed) {"

    def never_grow() -> str:
        source = bundle.probe_source()
        assert source.count(grows) == 1
        return source.replace(grows, "if (false) {")

    monkeypatch.setattr(runner, "probe_source", never_grow)
    report = check(patch=slow_jail(), mutate=found_busy, read_jail=True)
    line = report.by_id("read_jail")
    assert line.not_proved and line.late, show(report)
    assert f"starting its preview server took longer than {BUSIER_TOOL_SECONDS} s" in line.detail, show(report)
