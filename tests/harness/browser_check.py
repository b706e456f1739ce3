"""Reading check.mjs's result line, for the tests that run it on their own (box check
itself reads it in imdbox/check/probe/network.mjs)."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    detail: str


def parse_check_output(output: str, exit_code: int) -> CheckResult:
    """check.mjs's one JSON line (the last such line: the entrypoint may log before it).
    ok needs both the line's verdict and exit code 0."""
    for line in reversed(output.strip().splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and "ok" in data:
            detail = str(data.get("detail", ""))
            ok = data["ok"] is True and exit_code == 0
            if data["ok"] is True and exit_code != 0:
                detail += f" (but the check exited {exit_code})"
            return CheckResult(ok, detail)
    last = output.strip().splitlines()[-1:] or ["no output"]
    return CheckResult(False, f"the browser check gave no result (exit {exit_code}): {last[0][:300]}")
