"""The box's scripts print, and look for, the lines and paths box's Python names once
(imdbox/protocol.py, imdbox/layout.py): each script is held to each one it uses here."""

from __future__ import annotations

import subprocess

import pytest

from imdbox import layout, names, protocol

ROOT = names.REPO_ROOT

# (what, its text, the files that print it or look for it)
SHARED = [
    ("the walls line", protocol.WALLS_UP, ["firewall/init-firewall.sh"]),
    ("the worker starting", protocol.WORKER_STARTING, ["worker/run.sh"]),
    ("the worker's process", protocol.WORKER_PROCESS, ["worker/run.sh", "worker/healthy"]),
    ("the worker's exit", protocol.WORKER_EXITED, ["worker/run.sh"]),
    ("the worker's signal", protocol.WORKER_KILLED, ["worker/run.sh"]),
    ("a failed install step", protocol.FAILED, ["worker/install.sh"]),
    ("a failed download", f'die "{protocol.DOWNLOAD_FAILED} ', ["worker/install.sh"]),
    ("the worker's help", protocol.HELP_LINE, ["worker/install.sh"]),
    ("its exit code", protocol.HELP_EXIT, ["worker/install.sh"]),
    ("the worker's view", layout.WORKER_VIEW, ["Dockerfile"]),
    ("the door", layout.DOOR, ["Dockerfile"]),
    ("bash's take for the door", layout.DOOR_TAKE, ["Dockerfile"]),
    ("the sandbox's bubblewrap", layout.SANDBOX_BWRAP, ["image/claude-code/managed-settings.json"]),
    ("the browser's compile cache", layout.NODE_COMPILE_CACHE, ["Dockerfile"]),
    ("Claude Code's managed settings", layout.CLAUDE_SETTINGS, ["Dockerfile"]),
    ("the extra CA certificates", layout.CA_DIR, ["Dockerfile"]),
    ("the firewall's iptables", layout.IPTABLES, ["firewall/init-firewall.sh"]),
    ("the firewall's ip6tables", layout.IP6TABLES, ["firewall/init-firewall.sh"]),
]


@pytest.mark.parametrize("what, text, files", SHARED, ids=[s[0] for s in SHARED])
def test_each_script_says_what_box_reads(what, text, files):
    for f in files:
        assert text in (ROOT / f).read_text(), f"{f} no longer has {what}: {text!r}"


def _writer():
    import importlib.util

    spec = importlib.util.spec_from_file_location("write_facts", ROOT / "scripts" / "write-facts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WRITER = _writer()


@pytest.mark.parametrize("path", sorted(WRITER.FILES))
def test_each_file_of_the_boxs_facts_is_written_from_layout(path):
    """worker/paths, worker/door/paths.h and worker/facts.json are what scripts/write-facts.py
    writes from imdbox/layout.py now, byte for byte."""
    assert (ROOT / path).read_text() == WRITER.FILES[path](), f"{path} is stale: run python3 scripts/write-facts.py"


def shared_paths() -> dict[str, str]:
    """worker/paths, each `readonly NAME=value` with the names before it expanded, as bash reads it."""
    out = subprocess.run(
        [
            "bash",
            "-c",
            '. "$1" && for n in $(compgen -v); do printf "%s=%s\\n" "$n" "${!n}"; done',
            "-",
            ROOT / "worker" / "paths",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_the_scripts_read_layouts_facts():
    paths = shared_paths()
    assert {
        "HOME_DIR": names.HOME,
        "AS_IMD": layout.AS_IMD,
        "WORKER_PATH": layout.WORKER_PATH,
        "LOGIN": layout.CLAUDE_LOGIN,
        "BROKER_HOSTS": " ".join(layout.BROKER_HOSTS),
        "REFUSED_V4": " ".join(layout.REFUSED_V4),
    }.items() <= paths.items(), paths
    # The browser's launcher finds the compile cache beside its own folder (the tests run it here).
    assert '"${here%/*}/node-compile-cache"' in (ROOT / "browser" / "playwright-mcp").read_text()
    assert f"{layout.BROWSER_DIR.rsplit('/', 1)[0]}/node-compile-cache" == layout.NODE_COMPILE_CACHE
    # The door, in C, reads its header; the broker its JSON, beside its own folder.
    assert '#include "paths.h"\n' in (ROOT / "worker" / "door" / "door.c").read_text()
    assert 'new URL("../facts.json", import.meta.url)' in (ROOT / "worker" / "broker" / "broker.mjs").read_text()
    # Each script that names them sources the file, by its one path.
    for script in (
        "worker/jail",
        "worker/claude",
        "worker/door/view",
        "worker/healthy",
        "worker/broker/start",
        "worker/broker/ask",
        "firewall/init-firewall.sh",
    ):
        assert f". {layout.PATHS}\n" in (ROOT / script).read_text(), script


# The box's shell scripts, sourced files among them (install.sh and run.sh, which the tests run on
# this machine too, take their places from their environment).
SCRIPTS = sorted(
    p
    for folder in ("worker", "browser", "firewall")
    for p in (ROOT / folder).rglob("*")
    if p.is_file()
    and not p.is_symlink()
    and (p.read_bytes().startswith(b"#!/bin/bash") or p.read_bytes().startswith(b"# shellcheck shell=bash"))
)
SOURCE_PATHS = f". {layout.PATHS}\n"


@pytest.mark.parametrize("script", [*SCRIPTS, ROOT / "entrypoint.sh"], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_script_names_the_boxs_paths_from_worker_paths(script):
    if script.name == "paths":
        return
    text = script.read_text().replace(SOURCE_PATHS, "").replace("# shellcheck source=worker/paths\n", "")
    for place in (layout.LIB, names.HOME):
        assert place not in text, f"{script.relative_to(ROOT)} spells {place} itself: name it from worker/paths"
