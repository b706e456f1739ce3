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
    # Failed only on the internet URL, which the box itself could not reach (runner.py decides),
    # or only on what ran out of time (`late`: its detail says what took longer than its limit):
    # neither ok nor a FAIL.
    not_proved: bool = False
    late: bool = False


# `box check`'s exit codes (docs/walls.md lists them): every line ok, a line FAILs, and no line
# FAILs but some are not proved (the internet URL out of reach, or a probe out of time on a busy
# machine). 2 is a usage error.
ALL_OK, A_FAIL, NOT_PROVED = 0, 1, 3


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
        """Every line that is not ok, the ones not proved too."""
        return [r.id for r in self.results if not r.ok]

    def not_proved(self) -> list[Result]:
        return [r for r in self.results if r.not_proved]

    @property
    def exit_code(self) -> int:
        if self.ok:
            return ALL_OK
        return NOT_PROVED if all(r.ok or r.not_proved for r in self.results) else A_FAIL

    def as_json(self) -> list[dict]:
        """Each line, and the milliseconds its probe took (where the check's time goes; a line the
        probe gave no result for has none)."""
        return [
            {"wall": r.wall, "ok": r.ok, "proved": not r.not_proved, "detail": r.detail, "ms": self.probe_ms.get(r.id)}
            for r in self.results
        ]


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
            ("ok  ", "bold green") if r.ok else ("----", "bold yellow") if r.not_proved else ("FAIL", "bold red"),
            " ",
            known.short if known else r.wall,
        )
        console.print(line, overflow="fold")
        if verbose or not r.ok:
            # The evidence quotes the box (paths, tools' errors): shown as safe text.
            said = f"not proved: {r.detail}" if r.not_proved else r.detail
            style = "" if r.ok else "yellow" if r.not_proved else "red"
            evidence = Text(safe(said), style=style, overflow="fold")
            console.print(Padding(evidence, (0, 0, 0, EVIDENCE_INDENT)))
    text, style = summary(report)
    console.print(text, style=style)


def _numbers(results: list[Result]) -> str:
    return ", ".join(str(r.number) for r in results)


def summary(report: Report) -> tuple[str, str]:
    """The report's last line and its style: how many walls, how long, which FAIL, and which
    are not proved, with why (the internet URL, out of the box's reach) and what to do."""
    failed = [r for r in report.results if not r.ok and not r.not_proved]
    head = f"{len(report.results)} walls checked in {report.seconds:.1f} s: "
    if report.ok:
        return head + "all ok", "bold green"
    said = [f"{len(failed)} FAIL ({_numbers(failed)})"] if failed else []
    unproved = [r for r in report.not_proved() if not r.late]
    if unproved:
        # The internet line's evidence names the URL and what stopped it.
        why = safe(report.by_id("internet").detail)
        said.append(
            f"{_numbers(unproved)} not proved: the box could not reach its internet URL ({why}); "
            "run it again with --url and a URL the box can reach"
        )
    late = [r for r in report.not_proved() if r.late]
    if late:
        # Each line's evidence says what took longer than its limit.
        said.append(
            f"{_numbers(late)} not proved: ran out of time, even with limits grown for a busy machine; "
            "run it again when the machine is less busy"
        )
    return head + "; ".join(said), "bold red" if failed else "bold yellow"


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
