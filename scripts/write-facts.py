#!/usr/bin/env python3
"""Write the box's facts where its other languages read them, from imdbox/layout.py, their one
source: worker/paths (bash, sourced by the box's scripts), worker/door/paths.h (C, the door's)
and worker/facts.json (the login broker's). Run it after changing layout.py:

    python3 scripts/write-facts.py

tests/unit/test_protocol_unit.py fails while a written file differs from what this writes now.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from imdbox import layout, names  # noqa: E402 (the checkout's, not an installed one)

HINT = "Written by scripts/write-facts.py from imdbox/layout.py: edit that and run it again."

# worker/paths: each variable in order (a value names the ones before it), with the comment above it.
SHELL = (
    ("HOME_DIR", names.HOME, ""),
    ("LIB", layout.LIB, ""),
    ("WORK_ROOT", layout.WORK_ROOT, ""),
    ("NPM_PREFIX", layout.NPM_PREFIX, ""),
    (
        "CLIS",
        " ".join(f"{scope}:{cli}" for scope, cli in layout.CLIS),
        "The agent CLIs' npm scopes in it, each with the runtime it holds.",
    ),
    ("WORKER_DIR", layout.WORKER_DIR, ""),
    ("AS_IMD", layout.AS_IMD, ""),
    ("FIREWALL", layout.FIREWALL, ""),
    (
        "COMPILE_CACHE",
        layout.NODE_COMPILE_CACHE,
        "V8's compiled code for the browser's MCP server, made when the image was built (the Dockerfile).",
    ),
    (
        "HANDS_DEV",
        layout.HANDS_DEV,
        "The /dev of the worker's hands' jails, made when the image was built (the Dockerfile).",
    ),
    ("JAIL", layout.JAIL, ""),
    ("ROOMS", layout.JAIL_ROOMS, ""),
    ("LOADABLES", layout.BASH_LOADABLES, ""),
    ("HANDS", layout.HANDS_DIR, ""),
    (
        "WORKER_PATH",
        layout.WORKER_PATH,
        "The worker's PATH: its hands first, then its own npm bin, then the image's (worker/as-imd).",
    ),
    ("FILTER", layout.HANDS_FILTER, ""),
    ("DOOR", layout.DOOR, ""),
    (
        "TAKE",
        layout.DOOR_TAKE,
        "Bash's `take`, with which the door's ready launcher takes its call (worker/door/ready.h).",
    ),
    ("VIEW", layout.WORKER_VIEW, ""),
    (
        "OWN_DIR",
        layout.OWN_DIR,
        "The box's own folders, in a tmpfs of their own (runflags.TMPFS) that is imd's and no one else's:\n"
        "outside the home, /tmp and /var/tmp, where the worker's places are (the place room takes a\n"
        "working directory or clone target there alone), so no place the worker names is one of them;\n"
        "and hidden in every jail and in the worker's view, but for the door's socket, read-only there.",
    ),
    ("RUNS", layout.RUNS, "The launchers' records of the nodes, a job's network's pid file, the views' stand-ins."),
    ("DOOR_DIR", layout.DOOR_DIR, ""),
    (
        "LOGIN",
        layout.CLAUDE_LOGIN,
        "The owner's Claude login, which only the login broker and `box shell` read; the broker, its\n"
        "folder (one of the box's own), its ports on the box's\n"
        "loopback (a CONNECT proxy for box shell; TLS for the box's own programs: each Claude run has\n"
        "a TLS port of its own, forwarded into its network as 443)\n"
        "and the hosts it serves: where Claude Code sends its login.",
    ),
    (
        "OWNER_HOME",
        layout.OWNER_HOME,
        "The owner's home in `box shell` and the setup shell (OWNER_SHELL starts them there), so the\n"
        "owner's tools read no dotfile of the worker's: hidden in the worker's view, as ~/.claude is, and\n"
        "in every jail (a jail's home is a tmpfs). The owner's Claude Code keeps its config there too,\n"
        "beside the login (CLAUDE_CONFIG_DIR: ~/.claude/.claude.json), never in the worker's ~/.claude.json.",
    ),
    ("OWNER_SHELL", layout.OWNER_SHELL, ""),
    ("BROKER", layout.BROKER, ""),
    ("BROKER_START", layout.BROKER_START, ""),
    ("BROKER_ASK", layout.BROKER_ASK, ""),
    ("BROKER_DIR", layout.BROKER_DIR, ""),
    ("BROKER_PORT", str(layout.BROKER_PORT), ""),
    ("BROKER_TLS_PORT", str(layout.BROKER_TLS_PORT), ""),
    ("BROKER_HOSTS", " ".join(layout.BROKER_HOSTS), ""),
    (
        "REFUSED_V4",
        " ".join(layout.REFUSED_V4),
        "The special-purpose and private IPv4 ranges the worker must never reach, in the order the\n"
        "firewall refuses them (firewall/init-firewall.sh), and the loopback's, which it refuses on\n"
        "every device but the loopback.",
    ),
    ("LOOPBACK_V4", layout.LOOPBACK_V4, ""),
)
# worker/door/paths.h: the door's socket, where it finds the launchers, and the environment it runs them with.
C = (("SOCKET_PATH", layout.DOOR_SOCKET), ("WORKER_DIR", layout.WORKER_DIR), ("OWN_ENV", layout.OWN_ENV))


def named(value: str, before: dict[str, str]) -> str:
    """`value` with its longest leading path that a variable before it holds written as that variable."""
    holders = [(v, k) for k, v in before.items() if value == v or value.startswith(f"{v}/")]
    if not holders:
        return value
    text, name = max(holders, key=lambda h: len(h[0]))
    return f"${name}{value[len(text) :]}"


def paths() -> str:
    lines = [
        "# shellcheck shell=bash disable=SC2034",
        "# The box's paths and facts as the launchers (worker/claude, worker/jail), the worker's view, its",
        "# door and the firewall name them, written once (sourced).",
        f"# {HINT}",
    ]
    before: dict[str, str] = {}
    for name, value, comment in SHELL:
        lines += [f"# {line}" for line in comment.splitlines()]
        text = ":".join(named(part, before) for part in value.split(":"))
        lines.append(f'readonly {name}="{text}"' if " " in text else f"readonly {name}={text}")
        before[name] = value
    return "\n".join(lines) + "\n"


def header() -> str:
    lines = [f"/* The door's paths (worker/door/door.c). {HINT} */"]
    lines += [f'#define {name} "{value}"' for name, value in C]
    return "\n".join(lines) + "\n"


def facts() -> str:
    """What the login broker (worker/broker/broker.mjs) reads of the box's facts."""
    broker = {
        "hosts": list(layout.BROKER_HOSTS),
        "port": layout.BROKER_PORT,
        "tls_port": layout.BROKER_TLS_PORT,
        "sentinel": layout.BROKER_SENTINEL,
        "private": {"ipv4": list(layout.BROKER_PRIVATE_V4), "ipv6": list(layout.BROKER_PRIVATE_V6)},
    }
    return json.dumps({"_": HINT, "broker": broker, "refused_v4": layout.REFUSED_V4}, indent=2) + "\n"


# Each written file, by its path in the repository, and what writes it.
FILES = {"worker/paths": paths, "worker/door/paths.h": header, "worker/facts.json": facts}


def main() -> int:
    for path, write in FILES.items():
        (ROOT / path).write_text(write())
    print(f"wrote {', '.join(FILES)} from imdbox/layout.py", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
