"""What `box check` found, and how it is shown: a line a wall, JSON or an SVG picture."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..terminal import safe


@dataclass(frozen=True)
class Result:
    number: int
    wall: str
    id: str
    ok: bool
    detail: str


@dataclass
class Report:
    results: list[Result]
    seconds: float
    logs: str = ""
    probe_ms: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def by_id(self, wall_id: str) -> Result:
        return next(r for r in self.results if r.id == wall_id)

    def failed(self) -> list[str]:
        return [r.id for r in self.results if not r.ok]

    def as_json(self) -> list[dict]:
        return [{"wall": r.wall, "ok": r.ok, "detail": r.detail} for r in self.results]


# Where a line's evidence starts, under its wall's name: past "NN FAIL ".
EVIDENCE_INDENT = 8


def render(report: Report, console, *, verbose: bool = False) -> None:
    """One line a wall (its number, ok or FAIL, its short name), each FAIL's evidence in full
    under it (every wall's, `verbose`), wrapped to the console's width, and the summary line."""
    from rich.padding import Padding
    from rich.text import Text

    from .walls import BY_ID

    console.print("box check: every wall, proved from inside a box with the worker's own flags", style="bold")
    for r in report.results:
        known = BY_ID.get(r.id)
        line = Text.assemble(
            (f"{r.number:>2} ", "dim"),
            ("ok  ", "bold green") if r.ok else ("FAIL", "bold red"),
            " ",
            known.short if known else r.wall,
        )
        console.print(line, overflow="fold")
        if verbose or not r.ok:
            # The evidence quotes the box (paths, tools' errors): shown as safe text.
            evidence = Text(safe(r.detail), style="" if r.ok else "red", overflow="fold")
            console.print(Padding(evidence, (0, 0, 0, EVIDENCE_INDENT)))
    failed = [r for r in report.results if not r.ok]
    summary = f"{len(report.results)} walls checked in {report.seconds:.1f} s: "
    if failed:
        console.print(summary + f"{len(failed)} FAIL ({', '.join(str(r.number) for r in failed)})", style="bold red")
    else:
        console.print(summary + "all ok", style="bold green")


def as_json(report: Report) -> str:
    return json.dumps(report.as_json(), indent=2) + "\n"


def as_svg(report: Report) -> str:
    from rich.console import Console

    recorder = Console(record=True, width=100, file=io.StringIO(), highlight=False)
    render(report, recorder, verbose=True)
    return recorder.export_svg(title="box check")


def show(report: Report, *, json_output: bool, svg: Optional[Path], verbose: bool = False) -> None:
    """The report on stdout (its lines, or JSON), and the SVG picture if asked for."""
    from .. import ui

    if json_output:
        ui.write(as_json(report))
    else:
        render(report, ui.console(), verbose=verbose)
    if svg:
        svg.write_text(as_svg(report))
        if not json_output:
            ui.note(f"wrote {svg}")
