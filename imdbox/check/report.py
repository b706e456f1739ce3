"""What `box check` found, and how it is shown: a table, JSON or an SVG picture."""

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


def render(report: Report, console) -> None:
    """The table and its summary line, on a rich console."""
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title="box check: every wall, proved from inside a box with the worker's own flags", title_justify="left"
    )
    table.add_column("#", justify="right", style="dim")
    table.add_column("wall", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("evidence", overflow="fold")
    for r in report.results:
        mark = Text("ok", style="bold green") if r.ok else Text("FAIL", style="bold red")
        # The evidence quotes the box (paths, tools' errors): shown as safe text.
        table.add_row(str(r.number), r.wall, mark, Text(safe(r.detail), style="" if r.ok else "red"))
    console.print(table)
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

    recorder = Console(record=True, width=150, file=io.StringIO(), highlight=False)
    render(report, recorder)
    return recorder.export_svg(title="box check")


def show(report: Report, *, json_output: bool, svg: Optional[Path]) -> None:
    """The report on stdout (the table, or JSON), and the SVG picture if asked for."""
    from .. import ui

    if json_output:
        ui.write(as_json(report))
    else:
        render(report, ui.console())
    if svg:
        svg.write_text(as_svg(report))
        if not json_output:
            ui.note(f"wrote {svg}")
