"""Run the probes in a throwaway box with the worker's own flags and read back one result per wall.

The box's command is the probe itself (`node -e <probe/*.mjs as one script> <config>`), so it runs
after the entrypoint has set the firewall and dropped to `imd`: the same
capability sets, no_new_privs and seccomp filter the worker has. A `docker exec`
would not have them.

`mutate` exists for the tests, which break one wall in a throwaway box (or run a
copy of the image with one file changed) and show that exactly its line turns
FAIL. The `box check` command never passes it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import urlsplit

from .. import browser, names, protocol
from ..layout import (
    BROKER,
    BROKER_ASK,
    BROKER_DIR,
    BROKER_PORT,
    BROKER_SENTINEL,
    BROKER_TLS_PORT,
    CLAUDE_JAIL,
    CLAUDE_LOGIN,
    CLAUDE_SETTINGS,
    CODEX_JAIL,
    DOOR,
    DOOR_DIR,
    HANDS_DIR,
    IP6TABLES,
    IPTABLES,
    JAIL,
    NODE,
    NODE_COMPILE_CACHE,
    OWN_ENV,
    OWNER_SHELL,
    RUNS,
    SANDBOX_RUNTIME,
    WORKER_VIEW,
)
from ..runflags import PIDS_LIMIT, SYSTEM_PATH, RunFlags
from . import counters
from .bundle import PROBE_DIR as PROBE_DIR
from .bundle import probe_source
from .report import Report, Result
from .walls import FROM_A_JOBS_JAIL, WALLS

RESULT_MARK = "IMD-BOX-CHECK "
BOX_PREFIX = "imd-box-check-"  # the name of each check's box begins so
# A tool's own limit in the probe. Lines 3 (find over the whole image) and 16 (srt, the
# browser) take about a second on an idle machine and several on one whose cores are busy:
# a Mac busy with the worker's jobs is such a machine, and a slow tool is no open wall. It
# stays under a line's limit (the browser's budget plus its slack: probe/base.mjs).
TOOL_SECONDS = 10
# The probe's limits are an idle machine's, grown when one runs out by how slow this one is then:
# a bare start of the image's node (probe/base.mjs limit) against BARE_START_MS, its median on
# an idle 2-core machine (32 ms measured; rounded up), at most MAX_SCALE times.
BARE_START_MS = 40
MAX_SCALE = 4
PACKAGE_JSON = names.REPO_ROOT / "image" / "package.json"
# The probe runs in the worker's own volume, where anything may be planted in
# ~/.npm-global/bin: it is started by path, runs every tool by its path in the
# image, and gives its children a PATH of image directories only.
TOOLS = {
    "iptables": IPTABLES,
    "ip6tables": IP6TABLES,
    "bwrap": "/usr/bin/bwrap",
    "unshare": "/usr/bin/unshare",
    "setarch": "/usr/bin/setarch",
    "git": "/usr/bin/git",
    "forge": "/usr/local/bin/forge",
    "socat": "/usr/bin/socat",
    "find": "/usr/bin/find",
    "sh": "/bin/sh",
    "sha256sum": "/usr/bin/sha256sum",
    "ln": "/usr/bin/ln",
    "rg": "/usr/bin/rg",
    # Claude Code's sandbox library, a node script run by the image's node; its own
    # tools (bwrap, socat, rg) come from the managed settings (line 16 uses their rules).
    "srt": SANDBOX_RUNTIME,
    # A job's jail (worker/jail): line 16 runs srt, a shell as Claude's own tools, and the browser in it.
    "jail": JAIL,
    # Claude Code as the worker starts it (worker/claude): line 16 plants a repository's settings for it.
    "claude": CLAUDE_JAIL,
    # The browser's engine, which line 16 starts in a job's jail.
    "chromium": browser.HEADLESS_SHELL,
    # The git and forge the worker runs on a job's tree (line 23), and what shows a jail's environment.
    "hands_git": f"{HANDS_DIR}/git",
    "hands_forge": f"{HANDS_DIR}/forge",
    "env": "/usr/bin/env",
    # The worker's view and its door (line 24), and Codex as the worker starts it.
    "view": WORKER_VIEW,
    "door": DOOR,
    "broker_ask": BROKER_ASK,
    "codex": CODEX_JAIL,
    # What `box shell` runs (line 24: it reads nothing of the worker's home).
    "owner_shell": OWNER_SHELL,
}


@dataclass(frozen=True)
class Targets:
    """What the network probes aim at. The defaults are for a real machine; the
    tests aim at their own listeners on --internal networks."""

    mac_names: tuple[str, ...] = ("host.docker.internal", "gateway.docker.internal")
    lan: tuple[str, ...] = ("10.0.0.1", "172.16.0.1", "192.168.0.1", "192.168.1.1")
    tailscale: tuple[str, ...] = ("100.100.100.100", "100.64.0.1")
    metadata: tuple[str, ...] = ("169.254.169.254", "169.254.170.2")
    multicast: tuple[tuple[str, int], ...] = (("224.0.0.251", 5353), ("239.255.255.250", 1900), ("255.255.255.255", 9))
    multicast6: tuple[tuple[str, int], ...] = (("ff02::fb", 5353),)
    ipv6: tuple[str, ...] = ("2606:4700:4700::1111",)  # a public v6 address; v6 gateways are added inside
    dns_servers: tuple[str, ...] = ("1.1.1.1", "8.8.8.8")
    jail_target: str = "169.254.169.254"  # what root in a user namespace tries to reach
    dns_name: Optional[str] = None  # resolved through the box's resolver; default: the internet URL's host


def pinned_versions(package_json: Path = PACKAGE_JSON) -> dict[str, str]:
    """Node's, Foundry's and the sandbox runtime's pins from image/package.json (a checkout);
    empty when not there."""
    try:
        pkg = json.loads(package_json.read_text())
    except (OSError, ValueError):
        return {}
    deps = {**pkg.get("dependencies", {}), **pkg.get("optionalDependencies", {})}
    pins = {}
    for name, version in deps.items():
        if name == "@anthropic-ai/sandbox-runtime":
            pins["srt"] = version
        elif name.startswith("node-linux-"):
            pins["node"] = version
        elif name.startswith("@foundry-rs/forge-linux-"):
            pins["forge"] = version
    return pins


def probe_config(flags: RunFlags, internet_url: str, targets: Targets, only: Sequence[str] = ()) -> dict:
    t = asdict(targets)
    named = t.pop("dns_name")
    dns_name = named or urlsplit(internet_url).hostname or ""
    return {
        "home": names.HOME,
        "path": SYSTEM_PATH,
        "tools": dict(TOOLS),
        "host_addresses": list(flags.host_addresses),
        "port": 80,
        "internet_url": internet_url,
        "dns_name": dns_name,
        "dns_name_is_the_urls": not named,
        "browser": {"script": browser.CHECK_SCRIPT, "budget_ms": browser.CHECK_SECONDS * 1000},
        "tool_ms": TOOL_SECONDS * 1000,
        "scale": {"bare_ms": BARE_START_MS, "max": MAX_SCALE},
        "claude_settings": CLAUDE_SETTINGS,
        "broker": {
            "login": CLAUDE_LOGIN,
            "program": BROKER,
            "port": BROKER_PORT,
            "tls_port": BROKER_TLS_PORT,
            "sentinel": BROKER_SENTINEL,
        },
        "own_env": OWN_ENV,
        "compile_cache": NODE_COMPILE_CACHE,
        "own_dirs": [RUNS, DOOR_DIR, BROKER_DIR],
        "targets": t,
        "only": list(only),
        "from_a_jobs_jail": list(FROM_A_JOBS_JAIL),
        "count": {"asked": counters.ASKED, "answered": counters.ANSWERED, "steps": counters.STEPS},
        "expect": {
            "uid": 1000,
            "user": "imd",
            "cpus": flags.cpus,
            "memory": flags.memory,
            "pids": PIDS_LIMIT,
            **pinned_versions(),
        },
    }


def probe_command(config: dict) -> list[str]:
    return [NODE, "--input-type=module", "-e", probe_source(), json.dumps(config)]


def _fail_all(reason: str) -> list[Result]:
    return [Result(w.number, w.title, w.id, False, reason) for w in WALLS]


def parse(
    stdout: str, stderr: str, exit_code: Optional[int], counted: Sequence[counters.Counted] = ()
) -> tuple[list[Result], dict[str, int]]:
    """One result per wall from the box's output; whatever is missing is a FAIL."""
    line = next((ln for ln in reversed(stdout.splitlines()) if ln.startswith(RESULT_MARK)), None)
    if line is None:
        tail = " | ".join(ln.strip() for ln in stderr.strip().splitlines()[-3:]) or "no output"
        code = "unknown" if exit_code is None else exit_code
        return _fail_all(f"the probe gave no result (exit {code}): {tail[:300]}"), {}
    try:
        found = json.loads(line[len(RESULT_MARK) :])
        raw = {r["id"]: r for r in found["results"]}
        jailed = [str(i) for i in found.get("jailed", [])]
    except (ValueError, KeyError, TypeError) as exc:
        return _fail_all(f"the probe's result could not be read: {exc}"), {}
    results = []
    for w in WALLS:
        r = raw.get(w.id)
        if r is None:
            results.append(Result(w.number, w.title, w.id, False, "the probe gave no result for this wall"))
        else:
            ok = r.get("ok") is True
            late = not ok and r.get("late") is True
            unreached = not ok and (late or r.get("unreached") is True)
            results.append(Result(w.number, w.title, w.id, ok, str(r.get("detail", "")), unreached, late))
    results = [_with_firewall_report(r, stderr) if r.id == "firewall" else r for r in results]
    results = counters.with_jail_counted(results, jailed, counted)
    return _not_proved_where_the_url_was(results), {k: int(v.get("ms", 0)) for k, v in raw.items()}


def _not_proved_where_the_url_was(results: list[Result]) -> list[Result]:
    """A line that failed only on the internet URL is not proved when the box itself could not
    reach the URL (the internet line's own failure was no refusal of the box's): the URL is out
    of reach, which says nothing about the walls. Otherwise it is the FAIL it reads."""
    internet = next((r for r in results if r.id == "internet"), None)
    if internet is not None and internet.not_proved:
        return results
    return [dataclasses.replace(r, not_proved=False) if r.not_proved and not r.late else r for r in results]


def _with_firewall_report(result: Result, stderr: str) -> Result:
    """The firewall is there only if the entrypoint set and read back every rule before the probe ran."""
    found = re.search(rf"{protocol.WALLS_UP}: (IPv4 \d+ rules).*?, (IPv6 [^)\n]*?)\s*$", stderr, re.M)
    if not found:
        return Result(
            result.number,
            result.wall,
            result.id,
            False,
            f"no verified firewall reported by the entrypoint; {result.detail}",
        )
    return Result(
        result.number,
        result.wall,
        result.id,
        result.ok,
        f"set and read back: {found.group(1)}, {found.group(2)}; {result.detail}",
    )


def run_check(
    eng,
    *,
    networks: Sequence[str] = ("bridge",),
    extra_hosts: Optional[dict[str, str]] = None,
    internet_url: str = names.DEFAULT_INTERNET_URL,
    targets: Targets = Targets(),
    only: Sequence[str] = (),
    mutate: Optional[Callable[[dict], None]] = None,
    timeout: float = 60.0,
    name_prefix: str = BOX_PREFIX,
) -> Report:
    """Start the throwaway box on the engine's image and volume (eng.cfg), let the probes run,
    and let it go once they have printed their result (the engine removes it); always returns a
    report. `timeout` is an idle machine's: the probe's limits grow
    with the machine's load, up to MAX_SCALE times."""
    from .. import engine

    started = time.monotonic()
    name = f"{name_prefix}{uuid.uuid4().hex[:8]}"
    flags = engine.flags(eng, "check", name=name, network_name=networks[0])
    config = probe_config(flags, internet_url, targets, only)
    flags = dataclasses.replace(flags, command=probe_command(config))
    kwargs = flags.sdk_kwargs()
    if extra_hosts:
        kwargs["extra_hosts"] = dict(extra_hosts)
    if mutate:
        mutate(kwargs)
    from ..throwaway import attached, throwaway, until_line

    # The probe's result is the box's last word: box check reads it as it is printed, and lets
    # the box go then (throwaway), which the engine removes on its own: its end and its network
    # taken down, some 0.15 s, are no part of the check.
    kwargs["auto_remove"] = True
    with throwaway(eng.client, kwargs, eng.cfg.container) as container:
        for extra in networks[1:]:
            eng.client.networks.get(extra).connect(container)
        output = attached(container)
        container.start()
        counter = counters.Counter(container)
        if set(only or FROM_A_JOBS_JAIL) & set(FROM_A_JOBS_JAIL):
            counter.start()
        stdout, stderr, in_time, exit_code = until_line(
            container, output, RESULT_MARK.encode(), timeout * MAX_SCALE, protocol.WALLS_UP.encode()
        )
        if counter.is_alive():  # its exec ends after its last step, or with the box
            counter.join(timeout=10)
        if not in_time:
            engine.remove_box(container)  # a probe out of time may not end when asked
            late = f"the check box took longer than {timeout * MAX_SCALE:.0f} s"
            results = [Result(w.number, w.title, w.id, False, late, True, True) for w in WALLS]
            ms: dict[str, int] = {}
        else:
            results, ms = parse(stdout, stderr, exit_code, list(counter.counted))
    return Report(results=results, seconds=time.monotonic() - started, logs=stderr, probe_ms=ms)
