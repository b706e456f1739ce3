"""`box check` end to end: run the check on the user's engine and print the table, JSON or SVG."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Optional

from .runner import Report, Targets, run_check


def load_targets(path: Optional[Path]) -> Targets:
    if path is None:
        return Targets()
    from ..engine import BoxError

    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BoxError(f"--targets {path}: {exc}", code=2) from None
    known = set(Targets.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise BoxError(
            f"--targets {path}: unknown keys {', '.join(unknown)} (known: {', '.join(sorted(known))})", code=2
        )
    fixed = {}
    for key, value in data.items():
        if isinstance(value, list):
            value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        fixed[key] = value
    return Targets(**fixed)


def render(report: Report, console) -> None:
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
        table.add_row(str(r.number), r.wall, mark, Text(r.detail, style="" if r.ok else "red"))
    console.print(table)
    failed = [r for r in report.results if not r.ok]
    summary = f"{len(report.results)} walls checked in {report.seconds:.1f} s: "
    if failed:
        console.print(summary + f"{len(failed)} FAIL ({', '.join(str(r.number) for r in failed)})", style="bold red")
    else:
        console.print(summary + "all ok", style="bold green")


def main(*, json_output: bool, svg: Optional[Path], url: str, targets_file: Optional[Path]) -> int:
    import docker.errors
    from rich.console import Console

    from .. import engine, names

    try:
        targets = load_targets(targets_file)
        client = engine.connect()
        engine.image(client)
        network = engine.network(client)
        engine.ensure_volume(client)
        err = Console(stderr=True, highlight=False)
        if not json_output:
            err.print("» starting a throwaway box with the worker's flags and probing every wall…", style="dim")
        report = run_check(
            client,
            image=names.IMAGE,
            volume=names.VOLUME,
            networks=[network],
            internet_url=url,
            targets=targets,
            limits=engine.limits(client),
        )
    except engine.BoxError as exc:
        Console(stderr=True, highlight=False).print(f"box: {exc}", style="bold red", markup=False)
        return exc.code
    except docker.errors.DockerException as exc:
        Console(stderr=True, highlight=False).print(
            f"box: the check box could not run: {exc}", style="bold red", markup=False
        )
        return 1
    except KeyboardInterrupt:
        return 130

    if json_output:
        sys.stdout.write(json.dumps(report.as_json(), indent=2) + "\n")
    else:
        render(report, Console(highlight=False))
    if svg:
        recorder = Console(record=True, width=150, file=io.StringIO(), highlight=False)
        render(report, recorder)
        svg.write_text(recorder.export_svg(title="box check"))
        if not json_output:
            Console(stderr=True, highlight=False).print(f"wrote {svg}", style="dim")
    return 0 if report.ok else 1
