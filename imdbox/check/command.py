"""The `box check` command's entry point (registered by imdbox/cli.py).

Kept free of heavy imports at module level: `box --help` must stay fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

DEFAULT_URL = "https://api.imd.fun/health"  # the IMD control plane; runner.DEFAULT_INTERNET_URL


def check_command(
    json_output: bool = typer.Option(False, "--json", help="Print the results as JSON: a list of {wall, ok, detail}."),
    svg: Optional[Path] = typer.Option(None, "--svg", help="Also write the table as an SVG picture to FILE."),
    url: str = typer.Option(
        DEFAULT_URL,
        "--url",
        envvar="IMD_BOX_CHECK_URL",
        help="The internet target: a public HTTPS URL the box must reach.",
    ),
    targets: Optional[Path] = typer.Option(
        None, "--targets", help="A JSON file changing where the network probes aim (keys of check.runner.Targets)."
    ),
) -> None:
    """Prove every wall from inside a throwaway box started with the worker's own flags.

    One line per wall, ok or FAIL, with its evidence. Exit 0 only when every line is ok.
    """
    from .report import main

    raise typer.Exit(main(json_output=json_output, svg=svg, url=url, targets_file=targets))
