"""Printing for the commands. rich is imported on first use, never at startup."""

from __future__ import annotations

import re
import sys
from typing import Optional

from . import names

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


# A `box X` (or `./box X`) the user is told to run, when not already aimed at a seat.
_BOX_COMMAND = re.compile(r"(?:`|\./)box (?!--seat |seats\b)")


def for_seat(text: str) -> str:
    """The commands a message tells the user to run, for the seat this command acts on:
    `box start` reads `box --seat alice start` under `box --seat alice`."""
    if names.SEAT is None:
        return text
    return _BOX_COMMAND.sub(lambda m: f"{m.group(0)}--seat {names.SEAT} ", text)


def say(text: str, style: Optional[str] = None) -> None:
    console().print(for_seat(text), style=style, markup=False, soft_wrap=True)


def step(text: str) -> None:
    console().print(f"» {for_seat(text)}", style="bold", markup=False, soft_wrap=True)


def ok(text: str) -> None:
    console().print(f"✓ {for_seat(text)}", style="green", markup=False, soft_wrap=True)


def dim(text: str) -> None:
    console().print(for_seat(text), style="dim", markup=False, soft_wrap=True)


def note(text: str) -> None:
    """Progress on stderr, for commands whose stdout is their result (`box check --json`)."""
    err_console().print(for_seat(text), style="dim", markup=False, soft_wrap=True)


def write(text: str) -> None:
    """A command's result as plain text on stdout, exactly as given."""
    sys.stdout.write(text)


def error(text: str) -> None:
    err_console().print(f"box: {for_seat(text)}", style="bold red", markup=False, soft_wrap=True)


def table(columns: list[str], rows: list[list[str]]) -> None:
    from rich.table import Table
    from rich.text import Text

    t = Table(*columns, box=None, pad_edge=False, header_style="bold")
    for row in rows:
        t.add_row(*(Text(cell) for cell in row))  # as given, never read as markup
    console().print(t, markup=False, soft_wrap=True)


def is_tty() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()
