"""What box learns about the installed worker (`imd`) from its own help text.

The worker has no --version and nothing machine-readable about what it runs;
`imd help` (its USAGE) says both:
- line 1: `imd — IdentityMD contributor daemon (v<daemonVersion>)`;
- the --runtime option: `--runtime <id>       which agent runs tasks here: claude or codex. Default: ...`.
  The placeholder names the form: `<id>` is one runtime. A placeholder with a
  comma (`<id,...>`) would take a list; no released worker has one (only the
  tests' stand-in). worker/run.sh applies the same rule before it passes a list.

Whether it is paired, `imd status` says (the doctor's header says the same, but the
doctor runs a prompt on each runtime first):
- configured: `  token     <tokenId>`, or `  token     not paired yet` (exit 0);
- no config yet: `  state     not configured — run: imd pair --server <url>` (exit 1);
- it asks the network about the device (8 s at most) and runs each runtime's --version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import layout, protocol

# The worker's own commands that box runs, each in the worker's view: the worker's code never
# runs outside it, where the owner's logins are (install.sh runs `imd help` so too).
IMD = [layout.WORKER_VIEW, "imd"]
HELP_COMMAND = [*IMD, "help"]
STATUS_COMMAND = [*IMD, "status"]
UNLINK_COMMAND = [*IMD, "unlink"]
# `install.sh worker` reads the help it installed, and passes it on: each of its lines after
# HELP_LINE, then `imd help`'s exit code after HELP_EXIT. `box setup` reads the runtimes from
# that, with no box of its own to ask the worker again.
HELP_LINE = protocol.HELP_LINE
HELP_EXIT = protocol.HELP_EXIT

_VERSION = re.compile(r"^imd\b.*\(v([^()\s]+)\)\s*$")
_RUNTIME_OPTION = re.compile(r"^\s*--runtime <([^>]*)>\s+[^:]*:\s*(.+?)\.(?:\s|$)")
_RUNTIME_ID = re.compile(r"[a-z][a-z0-9_-]*")
_TOKEN = re.compile(r"^  token +(\S.*?)\s*$")
_NOT_CONFIGURED = re.compile(r"^  state +not configured\b")
NOT_PAIRED = "not paired yet"


@dataclass(frozen=True)
class WorkerHelp:
    version: Optional[str]
    runtimes: tuple[str, ...]  # what --runtime accepts, in the help's order
    takes_list: bool  # --runtime takes several, comma separated

    def describe(self) -> str:
        if not self.runtimes:
            return "no runtime its help names"
        if self.takes_list:
            return f"any of {', '.join(self.runtimes)}, several at once"
        return f"one of {', '.join(self.runtimes)}, one at a time"


def is_passed_on(line: str) -> bool:
    """A line of the help install.sh passed on: for box to read, not for the user."""
    return line.startswith((HELP_LINE, HELP_EXIT))


def help_passed_on(output: str) -> Optional[tuple[int, str]]:
    """(`imd help`'s exit code, its text) as `install.sh worker` passed them on; None when
    the output has no such help (an image whose install.sh does not pass it on)."""
    lines = output.splitlines()
    codes = [line[len(HELP_EXIT) :] for line in lines if line.startswith(HELP_EXIT)]
    if len(codes) != 1 or not codes[0].isdigit():
        return None
    return int(codes[0]), "\n".join(line[len(HELP_LINE) :] for line in lines if line.startswith(HELP_LINE))


def parse_help(text: str) -> WorkerHelp:
    """Read `imd help` (other lines around it, e.g. the box's own, are skipped)."""
    version = None
    for line in text.splitlines():
        m = _VERSION.match(line.strip())
        if m:
            version = m.group(1)
            break
    for line in text.splitlines():
        m = _RUNTIME_OPTION.match(line)
        if m:
            names = [n.strip() for n in re.split(r",|\bor\b", m.group(2))]
            runtimes = tuple(n for n in names if _RUNTIME_ID.fullmatch(n))
            return WorkerHelp(version, runtimes, "," in m.group(1))
    return WorkerHelp(version, (), False)


def runtime_problem(wanted: list[str], help_: WorkerHelp) -> Optional[str]:
    """Why this worker cannot run `wanted`, or None if it can."""
    if not help_.runtimes:
        return "the installed worker's help (`imd help`) names no --runtime it takes"
    if len(wanted) > 1 and not help_.takes_list:
        return f"this worker runs one runtime at a time; name one of: {', '.join(help_.runtimes)}"
    unknown = [r for r in wanted if r not in help_.runtimes]
    if unknown:
        return f"the installed worker cannot run {', '.join(unknown)} (it runs {help_.describe()})"
    return None


def pairing(status_text: str) -> str:
    """What `imd status` says of the pairing, in a word or two: `token N`, `no`,
    `no (not configured)`, or `?` when it says neither (a worker that changed its words)."""
    for line in status_text.splitlines():
        m = _TOKEN.match(line)
        if m:
            return "no" if m.group(1) == NOT_PAIRED else f"token {m.group(1)}"
        if _NOT_CONFIGURED.match(line):
            return "no (not configured)"
    return "?"


def config_on_this_machine(env: Mapping[str, str], home: Path) -> Optional[Path]:
    """The config of a worker set up outside the box, on the machine box runs on
    (`$IDENTITYMD_HOME/config.json`, else `~/.identitymd/config.json`), if one is there.
    Only whether it exists is looked at, never its content."""
    root = Path(env["IDENTITYMD_HOME"]) if env.get("IDENTITYMD_HOME") else home / ".identitymd"
    config = root / "config.json"
    try:
        return config if config.is_file() else None
    except OSError:
        return None


def pairing_hint(env: Mapping[str, str], home: Optional[Path] = None) -> Optional[str]:
    """One line when a worker on this machine may hold the seat the box's worker uses."""
    config = config_on_this_machine(env, home or Path.home())
    if config is None:
        return None
    return (
        f"a worker is set up on this machine too ({config}): if the seat is paired to it, "
        "run `imd unlink` there first, so that one device does not hold the seat twice"
    )
