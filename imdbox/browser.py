"""The box's browser (Chrome Headless Shell under Playwright MCP), as offered to the worker."""

from __future__ import annotations

from typing import List

# The stdio MCP command the worker registers with `imd tools add`.
LAUNCHER = "/usr/local/lib/imd-box/browser/playwright-mcp"


def mcp_command() -> List[str]:
    return [LAUNCHER]
