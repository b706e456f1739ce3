"""`box check` (the options are in imdbox/cli.py): read what the options name, run the
check on the user's engine, show the report. Errors are BoxError, which the CLI's one
handler prints; nothing heavy is imported before the command runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from .runner import Targets


def load_targets(path: Optional[Path]) -> Targets:
    if path is None:
        return Targets()
    from ..errors import BoxError

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


def main(
    cfg, *, json_output: bool, svg: Optional[Path], url: str, targets_file: Optional[Path], verbose: bool = False
) -> int:
    """Run the check on the seat's volume; the exit code is the report's (report.py)."""
    from .. import engine, ui
    from .report import show
    from .runner import run_check

    targets = load_targets(targets_file)
    eng = engine.connect(cfg)
    engine.image(eng)
    engine.ensure_volume(eng)
    if not json_output:
        ui.note("» starting a throwaway box with the worker's flags and probing every wall…")
    report = run_check(
        eng,
        networks=[engine.network(eng)],
        internet_url=url,
        targets=targets,
    )
    show(report, json_output=json_output, svg=svg, verbose=verbose)
    return report.exit_code
