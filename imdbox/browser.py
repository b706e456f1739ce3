"""The box's browser (Chrome Headless Shell under Playwright MCP), as offered to the worker.

Everything here names paths inside the image; `browser/playwright-mcp` decides how
the browser starts (headless shell, headless, isolated profile, Chromium's own
sandbox, loopback only) and takes no other options.
"""

from __future__ import annotations

from .layout import BROWSER_DIR, NODE

# The stdio MCP command the worker registers with `imd tools add`. The worker's
# readiness probe runs it with --version: it must exit 0 within 5 s.
LAUNCHER = f"{BROWSER_DIR}/playwright-mcp"
# `box check` line 15, "the browser": run as `imd`, behind the walls, by the image's node.
CHECK_SCRIPT = f"{BROWSER_DIR}/check.mjs"
# The line's time budget: check.mjs is given it and gives up (reports FAIL) after it. Far more
# than an idle machine needs, because the line shares its cores with the other checks, and a
# Mac whose worker is busy with jobs is slower still: a slow browser is no open wall. It is a
# ceiling only: a healthy box's whole check still ends in under 10 s (tests/world/test_check.py).
CHECK_SECONDS = 30
# Debian's chromium-headless-shell; the /usr/bin name is a wrapper script around it.
HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
MCP_VERSION = "0.0.86"  # @playwright/mcp, pinned in image/package.json
# The MCP methods website work uses, one `--enable` each: the names Playwright MCP
# 0.0.86 itself answers to `tools/list` (tests/world/test_browser.py asks the installed
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
    """The browser line of `box check` as a command to run in a box (its budget in ms last)."""
    return [NODE, CHECK_SCRIPT, str(CHECK_SECONDS * 1000)]
