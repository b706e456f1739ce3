"""What box learns about the installed worker (`imd`) from its own help text.

The worker has no --version and nothing machine-readable about what it runs;
`imd help` (its USAGE) says both:
- line 1: `imd — IdentityMD contributor daemon (v<daemonVersion>)`;
- the --runtime option: `--runtime <id>       which agent runs tasks here: claude or codex. Default: ...`.
  The placeholder names the form: `<id>` is one runtime. A placeholder with a
  comma (`<id,...>`) would take a list; no released worker has one (only the
  tests' stand-in). worker/run.sh applies the same rule before it passes a list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

HELP_COMMAND = ["imd", "help"]

_VERSION = re.compile(r"^imd\b.*\(v([^()\s]+)\)\s*$")
_RUNTIME_OPTION = re.compile(r"^\s*--runtime <([^>]*)>\s+[^:]*:\s*(.+?)\.(?:\s|$)")
_RUNTIME_ID = re.compile(r"[a-z][a-z0-9_-]*")


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
