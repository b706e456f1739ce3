"""What went wrong, read out of a box's log: its own refusal, or the worker's end."""

from __future__ import annotations

import re
from typing import Optional

from . import protocol

_WORKER_END = re.compile(f"{re.escape(protocol.WORKER_EXITED)}|{re.escape(protocol.WORKER_KILLED)}")
_WORKER_START = protocol.WORKER_STARTING
_TROUBLE = re.compile(r"error|fail|fatal|cannot|can't|refus|denied|invalid|not ", re.IGNORECASE)


def _worker_said(earlier: list[str]) -> Optional[str]:
    """The worker's latest line that says what went wrong, since run.sh started it. Not
    simply its last line: its stdout and stderr are two streams, and Docker's log does
    not keep their order (an error on stderr can land before an info line on stdout)."""
    for line in reversed(earlier):
        if "imd-box:" in line:  # run.sh's or the entrypoint's own
            if _WORKER_START in line or _WORKER_END.search(line):
                return None
        elif _TROUBLE.search(line):
            return line
    return None


def last_error(logs: str) -> str:
    """The latest of: the entrypoint's or run.sh's own refusal, or the worker's end
    (run.sh's line with its exit code or signal, and what the worker said went wrong,
    if it did); else the last error-like line, else the last line."""
    lines = [line.strip() for line in logs.splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if "imd-box:" in line and ("FAILED" in line or "not started" in line or "not installed" in line):
            return line
        if _WORKER_END.search(line):
            said = _worker_said(lines[:i])
            return f"{line} (the worker said: {said})" if said else line
    for line in reversed(lines):
        if "error" in line.lower() or "failed" in line.lower():
            return line
    return lines[-1] if lines else "(no output)"


def failure(logs: str) -> str:
    """last_error as a clause of box's own line: without the box's prefixes (`imd-box: FAILED: `),
    which would stand beside box's own."""
    line = last_error(logs)
    for prefix in (f"{protocol.FAILED}: ", "imd-box: "):
        if line.startswith(prefix):
            return line[len(prefix) :]
    return line
