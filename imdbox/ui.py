"""Printing for the commands. rich is imported on first use, never at startup.

Every line and cell goes through terminal.safe: much of what box prints came from the box."""

from __future__ import annotations

import sys
from typing import Optional

from .terminal import safe

_console = None
_err_console = None


def console():
    global _console
    if _console is None:
        from rich.console import Console

        _console = Console(highlight=False)
    return _console


def err_console():
    global _err_console
    if _err_console is None:
        from rich.console import Console

        _err_console = Console(stderr=True, highlight=False)
    return _err_console


def say(text: str, style: Optional[str] = None) -> None:
    console().print(safe(text), style=style, markup=False, soft_wrap=True)


def step(text: str) -> None:
    console().print(f"» {safe(text)}", style="bold", markup=False, soft_wrap=True)


def ok(text: str) -> None:
    console().print(f"✓ {safe(text)}", style="green", markup=False, soft_wrap=True)


def dim(text: str) -> None:
    console().print(safe(text), style="dim", markup=False, soft_wrap=True)


def note(text: str) -> None:
    """Progress on stderr, for commands whose stdout is their result (`box check --json`)."""
    err_console().print(safe(text), style="dim", markup=False, soft_wrap=True)


def write(text: str) -> None:
    """A command's result as plain text on stdout, exactly as given."""
    sys.stdout.write(text)


def error(text: str) -> None:
    err_console().print(f"box: {safe(text)}", style="bold red", markup=False, soft_wrap=True)


def table(columns: list[str], rows: list[list[str]]) -> None:
    from rich.table import Table
    from rich.text import Text

    t = Table(*columns, box=None, pad_edge=False, header_style="bold")
    for row in rows:
        t.add_row(*(Text(safe(cell)) for cell in row))  # as given, never read as markup
    console().print(t, markup=False, soft_wrap=True)


def is_tty() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()
