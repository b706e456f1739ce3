"""The box's scripts print, and look for, the lines and paths box's Python names once
(imdbox/protocol.py, imdbox/layout.py): each script is held to each one it uses here."""

from __future__ import annotations

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
    ("the worker's help", protocol.HELP_LINE, ["worker/install.sh"]),
    ("its exit code", protocol.HELP_EXIT, ["worker/install.sh"]),
    ("the privilege drop", layout.AS_IMD, ["entrypoint.sh"]),
    ("Claude Code's launcher", layout.CLAUDE_JAIL, ["worker/as-imd"]),
    ("Codex's launcher", layout.CODEX_JAIL, ["worker/as-imd"]),
    ("the jobs' jail", layout.JAIL, ["worker/claude", "worker/codex"]),
    ("the worker's view", layout.WORKER_VIEW, ["Dockerfile"]),
    ("the door", layout.DOOR, ["Dockerfile", "worker/healthy"]),
    ("the sandbox's bubblewrap", layout.SANDBOX_BWRAP, ["image/claude-code/managed-settings.json"]),
    ("the browser's compile cache", layout.NODE_COMPILE_CACHE, ["browser/playwright-mcp", "Dockerfile"]),
    ("Claude Code's managed settings", layout.CLAUDE_SETTINGS, ["Dockerfile"]),
    ("the extra CA certificates", layout.CA_DIR, ["Dockerfile"]),
    ("the firewall's iptables", layout.IPTABLES, ["firewall/init-firewall.sh"]),
    ("the firewall's ip6tables", layout.IP6TABLES, ["firewall/init-firewall.sh"]),
]


@pytest.mark.parametrize("what, text, files", SHARED, ids=[s[0] for s in SHARED])
def test_each_script_says_what_box_reads(what, text, files):
    for f in files:
        assert text in (ROOT / f).read_text(), f"{f} no longer has {what}: {text!r}"
