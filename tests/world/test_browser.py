"""The box's browser against the real engine: Playwright MCP 0.0.86 driving Chrome
Headless Shell inside a walled box, with Chromium's own sandbox on.

Every box here is on the harness's --internal networks; the only targets are the
harness's listeners and pages served inside the box itself.
"""

from __future__ import annotations

import json
import re
import shlex
import time

import pytest

from imdbox import browser, names
from tests.harness.boxes import (
    create_walled,
    http_probe,
    proc_status,
    removed_on_error,
    run,
    start_control,
    start_walled,
    wait_exit,
)
from tests.harness.browser_check import parse_check_output

JS_DIR = names.REPO_ROOT / "tests" / "harness" / "browser"
PAGE_MARK = "imd-test-listener:box-page"


def js(script: str, *args: str) -> list[str]:
    """tests/harness/browser/SCRIPT.mjs as a command in the box; it is given the image's
    launcher and check.mjs (for its helpers), then `args`. check.mjs must not come first:
    it takes itself for the program run when it finds its own path in argv[1]."""
    text = (JS_DIR / f"{script}.mjs").read_text()
    return ["node", "--input-type=module", "-e", text, browser.LAUNCHER, browser.CHECK_SCRIPT, *args]


def node(container, script: str, *args: str, user: str = "imd", timeout: int = 60):
    return run(container, js(script, *args), user=user, timeout=timeout)


def last_json(out: str):
    for line in reversed(out.strip().splitlines()):
        if line.startswith(("{", "[")):
            return json.loads(line)
    raise AssertionError(f"no JSON line in:\n{out}")


def run_check(container) -> tuple:
    """check.mjs as box check runs it; returns (exit code, result, seconds measured inside)."""
    script = f'start=$(date +%s%N); {shlex.join(browser.check_command())}; rc=$?; echo "elapsed_ns=$(( $(date +%s%N) - start ))"; exit $rc'
    code, out = run(container, ["bash", "-c", script], timeout=30)
    elapsed = int(re.search(r"elapsed_ns=(\d+)", out).group(1)) / 1e9
    return code, parse_check_output(out.split("elapsed_ns=")[0], code), elapsed, out


def unwalled_twin(docker_client, box_image, topology, volume):
    """The walled box's exact flags (seccomp, caps, no_new_privs, networks) with one
    wall removed: the entrypoint, so no firewall. --internal networks only."""

    def no_firewall(kwargs):
        kwargs["entrypoint"] = ["sleep", "infinity"]
        kwargs["command"] = []

    container = create_walled(docker_client, box_image, topology, volume=volume, mutate=no_firewall)
    with removed_on_error(container):
        container.start()
        # Until its IPv6 addresses are past duplicate address detection: each that settles is a
        # network change to Chromium, which fails a navigation under way (ERR_NETWORK_CHANGED).
        # The walled box's entrypoint takes longer than that; this box starts at once.
        deadline = time.monotonic() + 20
        while run(container, ["ip", "-6", "addr", "show", "tentative"])[1].strip():
            assert time.monotonic() < deadline, "the twin's IPv6 addresses did not settle in 20 s"
            time.sleep(0.1)
    return container


@pytest.fixture
def walled(docker_client, box_image, topology, test_volume):
    box = start_walled(docker_client, box_image, topology, volume=test_volume)
    yield box
    box.remove(force=True)


# ------------------------------------------------------------------ the image


def test_image_has_the_headless_shell_and_pinned_mcp(walled):
    code, out = run(walled, ["dpkg", "-L", "chromium-headless-shell"])
    assert code == 0 and browser.HEADLESS_SHELL in out.split(), out
    code, out = run(walled, [browser.HEADLESS_SHELL, "--version"])
    assert code == 0 and "Chromium" in out, out
    code, out = run(
        walled, ["node", "-p", "require('/opt/playwright-mcp/node_modules/@playwright/mcp/package.json').version"]
    )
    assert out.strip() == browser.MCP_VERSION
    code, out = run(walled, ["test", "-x", browser.LAUNCHER])
    assert code == 0, f"{browser.LAUNCHER} is not executable"
    # Playwright's own browser download was never used.
    code, out = run(
        walled, ["bash", "-c", "ls -d ~/.cache/ms-playwright /root/.cache/ms-playwright 2>/dev/null"], user="root"
    )
    assert out.strip() == "", out


def test_trimmed_files_are_gone_and_the_browser_needs_none_of_them(walled):
    code, out = run(
        walled,
        ["bash", "-c", "ls /usr/lib/*/libLLVM* /usr/lib/*/libgallium* /usr/lib/*/libz3.so* /usr/lib/chromium/libVk* "
         "/var/cache/apt/archives/*.deb 2>/dev/null | grep -v '^$' || true"],
    )  # fmt: skip
    assert out.strip() == "", f"trimmed files are back:\n{out}"
    code, out = run(walled, ["ls", "/usr/lib/chromium/locales"])
    assert out.split() == ["en-US.pak"], out
    code, out = run(walled, ["bash", "-c", f"ldd {browser.HEADLESS_SHELL} | grep 'not found' || true"])
    assert out.strip() == "", out


# ------------------------------------------------------------------ the launcher


def test_launcher_takes_no_other_options(walled):
    for args in (["--no-sandbox"], ["--http", "0", "--no-sandbox"], ["--http", "0.0.0.0:80"], ["--port", "1"]):
        code, out = run(walled, [browser.LAUNCHER, *args])
        assert code == 64 and "usage" in out, (args, code, out)


def test_stdio_mode_is_what_the_worker_gets(walled):
    code, out = node(walled, "stdio")
    assert code == 0, out
    result = last_json(out)
    # Every method box enables for the worker is one this MCP server has.
    assert set(browser.TOOLS) <= set(result["tools"]), set(browser.TOOLS) - set(result["tools"])
    assert "imd-test-listener:stdio-page" in result["snapshot"]


def test_each_run_gets_a_fresh_in_memory_profile(walled):
    code, out = node(walled, "isolation")
    assert code == 0, out
    first, second = last_json(out)
    assert "stored" in first
    assert "first run" not in second and "imd=1" not in second, second
    # No profile lands in the worker's home (the volume): no browser state, no
    # Playwright files (its cache may hold an empty registry folder and fontconfig
    # its font cache, neither of them a profile).
    code, out = run(
        walled,
        ["bash", "-c", "find ~ \\( -path '*playwright*' -type f \\) -o -name Cookies -o -name 'Local Storage' "
         "-o -name Preferences -o -iname '*chrom*' | head"],
    )  # fmt: skip
    assert out.strip() == "", out


# ------------------------------------------------------------------ the check


def test_check_reads_a_loopback_page_back_within_budget(walled):
    code, result, elapsed, out = run_check(walled)
    print(f"browser line: {elapsed:.2f} s: {result.detail}")
    assert code == 0 and result.ok, out
    assert "127.0.0.1" in result.detail and browser.MCP_VERSION in result.detail
    assert elapsed <= browser.CHECK_SECONDS, f"the browser line took {elapsed:.2f} s"
    # Nothing of the browser is left running.
    code, out = run(walled, ["pgrep", "-af", "[c]hromium|[p]laywright"])
    assert code == 1, f"left behind:\n{out}"


def test_check_as_the_box_command(docker_client, box_image, topology, test_volume):
    box = create_walled(docker_client, box_image, topology, volume=test_volume, command=browser.check_command())
    try:
        started = time.monotonic()
        box.start()
        code, _ = wait_exit(box, timeout=60)
        total = time.monotonic() - started
        stdout = box.logs(stdout=True, stderr=False).decode()
        result = parse_check_output(stdout, code)
        print(f"box with the check as its command: {total:.2f} s (walls included): {result.detail}")
        assert code == 0 and result.ok, box.logs().decode()
        assert len(stdout.strip().splitlines()) == 1, f"not ONE line on stdout:\n{stdout}"
    finally:
        box.remove(force=True)


def test_check_fails_when_the_snapshot_lacks_the_text(walled):
    code, out = node(walled, "wrong_page", browser.check_command()[-1])
    result = last_json(out)
    assert code != 0 and result["ok"] is False, out
    assert "does not hold the page's text" in result["detail"], result


def test_check_fails_when_the_browser_cannot_start(docker_client, box_image, topology, test_volume):
    # As root (the test, not the product) in a box whose root is writable: the launcher is broken.
    writable = start_walled(
        docker_client, box_image, topology, volume=test_volume, mutate=lambda kw: kw.update(read_only=False)
    )
    try:
        broken = f"printf '#!/bin/sh\\nexit 3\\n' > {browser.LAUNCHER}"
        code, out = run(writable, ["bash", "-c", broken], user="root")
        assert code == 0, out
        code, result, elapsed, out = run_check(writable)
        assert code != 0 and not result.ok, out
        assert "exited (code 3)" in result.detail, result
        assert elapsed <= browser.CHECK_SECONDS
    finally:
        writable.remove(force=True)


# ------------------------------------------------------------------ the sandbox


def _ns(box, pid: int) -> dict:
    code, out = run(box, ["bash", "-c", f"for n in user pid net; do readlink /proc/{pid}/ns/$n; done"])
    assert code == 0, out
    user, pidns, net = out.split()
    return {"user": user, "pid": pidns, "net": net}


def _seccomp_filters(box, pid: int) -> int:
    code, out = run(box, ["grep", "^Seccomp_filters:", f"/proc/{pid}/status"])
    return int(out.split()[1])


def test_chromium_runs_its_own_sandbox(walled):
    walled.exec_run(js("hold", "40"), user="imd", detach=True)
    deadline = time.monotonic() + 25
    renderers = []
    while time.monotonic() < deadline and not renderers:
        code, out = run(walled, ["pgrep", "-f", f"^{browser.HEADLESS_SHELL} .*--type=renderer"])
        renderers = [int(p) for p in out.split()] if code == 0 else []
        time.sleep(0.3)
    assert renderers, "no renderer process appeared"
    code, out = run(walled, ["pgrep", "-o", "-f", f"^{browser.HEADLESS_SHELL} "])
    main_pid = int(out.split()[0])
    code, cmdlines = run(
        walled,
        [
            "bash",
            "-c",
            "for p in $(pgrep -f '[c]hromium-headless-shell'); do tr '\\0' ' ' </proc/$p/cmdline; echo; done",
        ],
    )
    assert "--no-sandbox" not in cmdlines, cmdlines

    main_ns, main_filters = _ns(walled, main_pid), _seccomp_filters(walled, main_pid)
    for pid in renderers:
        ns = _ns(walled, pid)
        # The namespace sandbox: its own user, pid and (empty) network namespace...
        assert ns["user"] != main_ns["user"] and ns["pid"] != main_ns["pid"] and ns["net"] != main_ns["net"], (
            ns,
            main_ns,
        )
        # ...and the seccomp-bpf sandbox stacked on top of the box's own profile.
        assert _seccomp_filters(walled, pid) > main_filters
    status = proc_status(walled, main_pid)
    assert status["Uid"].split()[0] == "1000" and status["CapEff"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"


NO_SANDBOX_LAUNCHER = """#!/bin/sh
exec node /opt/playwright-mcp/node_modules/@playwright/mcp/cli.js --config /usr/local/lib/imd-box/browser/config.json \
  --executable-path /usr/lib/chromium/chromium-headless-shell --headless --isolated --no-sandbox --port "$2" --host localhost
"""


def test_dockers_default_seccomp_profile_leaves_chromium_no_sandbox(docker_client, box_image, topology, test_volume):
    """Why seccomp.json adds clone/unshare/...: with Docker's plain default profile
    the same launch fails, and only --no-sandbox (never used by the box) helps."""

    def default_seccomp(kwargs):
        kwargs["security_opt"] = ["no-new-privileges:true"]  # no seccomp=: Docker's default

    box = start_walled(docker_client, box_image, topology, volume=test_volume, mutate=default_seccomp)
    try:
        code, result, _, out = run_check(box)
        assert code != 0 and not result.ok, out
        assert "sandbox" in result.detail.lower(), result
        # The same browser without its sandbox starts: the sandbox was the only thing missing.
        run(
            box,
            [
                "bash",
                "-c",
                f"cat > /tmp/no-sandbox-launcher <<'EOF'\n{NO_SANDBOX_LAUNCHER}EOF\nchmod +x /tmp/no-sandbox-launcher",
            ],
        )
        code, out = node(box, "no_sandbox_check")
        assert last_json(out)["ok"] is True, out
    finally:
        box.remove(force=True)


# ------------------------------------------------------------------ the walls


def _serve(box, port: int, host: str) -> None:
    js = f"require('http').createServer((q, s) => s.end('{PAGE_MARK}\\n')).listen({port}, '{host}')"
    box.exec_run(["node", "-e", js], user="imd", detach=True)
    for _ in range(50):
        if run(box, ["bash", "-c", f"ss -ltn | grep -q ':{port} '"])[0] == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {host}:{port} in the box")


def _ip(box, network: str) -> str:
    box.reload()
    return box.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]


def test_a_page_in_the_box_is_unreachable_from_outside(docker_client, box_image, topology, test_volume, walled):
    net = topology.network_names[0]
    _serve(walled, 8080, "127.0.0.1")  # how a job serves its site
    _serve(walled, 8081, "0.0.0.0")  # even a wide bind stays inside
    walled.reload()
    assert not walled.attrs["HostConfig"].get("PortBindings"), "the box publishes a port"
    assert not walled.attrs["NetworkSettings"].get("Ports"), walled.attrs["NetworkSettings"].get("Ports")

    inside = http_probe(walled, "http://127.0.0.1:8080/")
    assert inside.reached, inside

    peer = start_control(docker_client, box_image, topology)
    twin = None
    try:
        box_ip = _ip(walled, net)
        for port in (8080, 8081):
            probe = http_probe(peer, f"http://{box_ip}:{port}/", user="root")
            assert probe.outcome == "timeout", (port, probe)  # the walls drop it unanswered
        # The peer does reach things on the same network: a listener, and the
        # same wide-bound page in a box without walls.
        assert http_probe(peer, topology.url("internet"), user="root").reached
        twin = unwalled_twin(docker_client, box_image, topology, f"{test_volume}")
        _serve(twin, 8080, "127.0.0.1")
        _serve(twin, 8081, "0.0.0.0")
        twin_ip = _ip(twin, net)
        assert http_probe(peer, f"http://{twin_ip}:8081/", user="root").reached
        # Loopback alone already keeps it in (reset at once: nothing listens there
        # for the peer); the walls keep in even a wide bind.
        probe = http_probe(peer, f"http://{twin_ip}:8080/", user="root")
        assert probe.outcome == "refused" or (probe.outcome == "error" and "curl exit 7" in probe.detail), probe
    finally:
        peer.remove(force=True)
        if twin:
            twin.remove(force=True)


WALLED_TARGETS = ("mac", "router", "metadata")


def _visit(box, urls):
    code, out = node(box, "visit", json.dumps(urls), timeout=120)
    assert code == 0, out
    visits = last_json(out)
    assert not any("error" in v for v in visits), visits
    return {v["url"]: v for v in visits}


def test_the_browser_is_behind_the_same_walls(docker_client, box_image, topology, test_volume, walled):
    urls = {name: topology.url(name) for name in WALLED_TARGETS}
    urls["mac-ipv6"] = f"http://[{topology.targets['mac'].ip6}]/"
    urls["gateway"] = f"http://{topology.gateway_ip}/"

    visits = _visit(walled, list(urls.values()))
    for name, url in urls.items():
        v = visits[url]
        assert "imd-test-listener" not in v["nav"] + v["snap"], (name, v)
        assert v["navError"] and "net::ERR_" in v["nav"], (name, v["nav"][:300])

    twin = unwalled_twin(docker_client, box_image, topology, test_volume)
    try:
        visits = _visit(twin, list(urls.values()))
        for name, url in urls.items():
            expected = "gateway" if name == "gateway" else name.split("-")[0]
            assert f"imd-test-listener:{expected}" in visits[url]["snap"], (name, visits[url])
    finally:
        twin.remove(force=True)


def _output_counters(box) -> dict:
    """Packets per OUTPUT rule that does not go to loopback, and DNS DNATs to Docker's resolver."""
    code, out = run(box, ["iptables", "-w", "-L", "OUTPUT", "-v", "-n", "-x"], user="root")
    assert code == 0, out
    counts = {}
    lines = out.splitlines()
    out_col = lines[1].split().index("out")
    for i, line in enumerate(lines[2:]):
        cols = line.split()
        if cols and cols[out_col] != "lo":
            counts[f"filter {i}: {' '.join(cols[2:])}"] = int(cols[0])
    code, out = run(box, ["iptables", "-w", "-t", "nat", "-L", "-v", "-n", "-x"], user="root")
    for i, line in enumerate(out.splitlines()):
        if "127.0.0.11" in line and line.split()[0].isdigit():
            counts[f"nat {i}: {line.split(None, 2)[2]}"] = int(line.split()[0])
    return counts


def test_the_browser_stays_quiet(walled):
    """No background networking: a check run sends nothing but loopback (no DNS either)."""
    before = _output_counters(walled)
    code, result, _, out = run_check(walled)
    assert result.ok, out
    after = _output_counters(walled)
    grew = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert not grew, f"the browser sent packets off loopback: {grew}"
