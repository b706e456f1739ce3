"""The box's browser (Chrome Headless Shell under Playwright MCP), as offered to the worker.

Everything here names paths inside the image; `browser/playwright-mcp` decides how
the browser starts (headless shell, headless, isolated profile, Chromium's own
sandbox, loopback only) and takes no other options.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

BROWSER_DIR = "/usr/local/lib/imd-box/browser"
# The stdio MCP command the worker registers with `imd tools add`. The worker's
# readiness probe runs it with --version: it must exit 0 within 5 s.
LAUNCHER = f"{BROWSER_DIR}/playwright-mcp"
# `box check` line 15, "the browser": run as `imd`, behind the walls.
CHECK_SCRIPT = f"{BROWSER_DIR}/check.mjs"
CHECK_SECONDS = 5  # the script gives up (and reports FAIL) after this
# Debian's chromium-headless-shell; the /usr/bin name is a wrapper script around it.
HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
MCP_VERSION = "0.0.82"  # @playwright/mcp, pinned in image/package.json
TOOL_NAME = "browser"  # the tool's id in the worker (`imd tools add browser`)
# The MCP methods website work uses, one `--enable` each: the names Playwright MCP
# 0.0.82 itself answers to `tools/list` (tests/test_browser.py asks the installed
# server). Left out: file upload, drag and drop, dialogs, resizing, media
# emulation, going back, single-request detail, find, and run_code_unsafe.
TOOLS = (
    "browser_navigate",
    "browser_snapshot",
    "browser_click",
    "browser_type",
    "browser_fill_form",
    "browser_select_option",
    "browser_hover",
    "browser_press_key",
    "browser_wait_for",
    "browser_take_screenshot",
    "browser_evaluate",
    "browser_tabs",
    "browser_console_messages",
    "browser_network_requests",
    "browser_close",
)


def offer_env() -> dict[str, str]:
    """What worker/install.sh needs to register the browser with the worker:
    `imd tools add browser --command LAUNCHER --enable <each of TOOLS>`."""
    return {"IMD_BOX_BROWSER_MCP": LAUNCHER, "IMD_BOX_BROWSER_TOOLS": " ".join(TOOLS)}


def check_command() -> list[str]:
    """The browser line of `box check`, as a command to run inside the box."""
    return ["node", CHECK_SCRIPT]


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    detail: str


def parse_check_output(output: str, exit_code: int) -> CheckResult:
    """Read check.mjs's one JSON line (the last such line: the entrypoint may log
    before it). ok needs both the line's verdict and exit code 0."""
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
