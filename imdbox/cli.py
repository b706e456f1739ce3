"""The `box` command. Kept light at import: docker and rich load inside commands."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import names
from .config import Config

app = typer.Typer(
    name="box",
    help="IMD Box: run the IMD worker in a walled Docker box that sees only the internet.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _run(ctx: typer.Context, fn, **kwargs):
    """Run a command with the Config made once for it; a BoxError becomes one clear line
    and its exit code, and so does anything else that goes wrong: no traceback, ever."""
    from . import ui
    from .errors import BoxError

    cfg = ctx.obj
    try:
        return fn(cfg, **kwargs)
    except BoxError as exc:
        ui.error(str(exc))
        raise typer.Exit(exc.code) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:
        ui.error(_unexpected(cfg, exc))
        raise typer.Exit(1) from None


def _unexpected(cfg: Config, exc: Exception) -> str:
    import docker.errors
    import requests.exceptions

    if isinstance(exc, docker.errors.APIError):
        return (
            f"Docker refused: {exc.explanation or exc}; try again, "
            f"and `{cfg.command('status')}` says where things stand"
        )
    if isinstance(exc, (requests.exceptions.ConnectionError, docker.errors.DockerException)):
        return "lost Docker half-way (did it stop or restart?): start Docker, then run the command again"
    return f"stopped on an unexpected {type(exc).__name__}: {exc} (please report it)"


def _room(name: str):
    """One of the commands' modules, imported when its command runs (they load docker)."""
    import importlib

    return importlib.import_module(f"{__package__}.{name}")


# The options, each once; the commands below name them.
BaseImage = Annotated[
    Optional[str],
    typer.Option(
        "--base-image",
        help=f"The Debian trixie base image (default: the current image's, else {names.DEFAULT_BASE_IMAGE}).",
    ),
]
CaCert = Annotated[
    Optional[Path],
    typer.Option(
        "--ca-cert",
        help="A PEM file of extra CA certificates (a TLS-inspecting network or proxy); "
        "default: the ones the current image was built with.",
    ),
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Rebuild every layer.")]
Concurrency = Annotated[Optional[int], typer.Option("--concurrency", help="Tasks at once, 1 to 4 (default 2).")]
GrokKeyFile = Annotated[
    Optional[Path],
    typer.Option(
        "--grok-key-file",
        help="A file holding the Grok CLI's xAI API key (else it is asked for, hidden), when grok is a runtime.",
    ),
]


@app.callback()
def _options(
    ctx: typer.Context,
    seat: Annotated[
        Optional[str],
        typer.Option(
            "--seat",
            metavar="NAME",
            help="Act on this seat: one more worker identity with its own box and volume "
            f"({names.DEFAULT_CONTAINER}-NAME, {names.DEFAULT_VOLUME}-NAME). Default: the seat without a name.",
        ),
    ] = None,
) -> None:
    if seat is not None and not names.SEAT_NAME.fullmatch(seat):
        from . import ui

        ui.error(f"--seat {seat!r}: a seat's name is 1 to 24 of a-z, 0-9, - and _, starting with a letter or digit")
        raise typer.Exit(2)
    ctx.obj = Config.from_env(os.environ, seat)


@app.command(short_help="Download the published image (per-layer progress).")
def pull(
    ctx: typer.Context,
    image: Annotated[
        str, typer.Option("--image", help="The image to pull (a registry reference).")
    ] = names.PUBLISHED_IMAGE,
) -> None:
    """Download the published box image, with per-layer progress, and make it the box image."""

    def go(cfg):
        from . import engine, images

        images.pull(engine.connect(cfg), image)

    _run(ctx, go)


@app.command(short_help="Build the image from this checkout (live progress).")
def build(ctx: typer.Context, base_image: BaseImage = None, ca_cert: CaCert = None, no_cache: NoCache = False) -> None:
    """Build the box image from this checkout, with live progress."""

    def go(cfg):
        from . import engine, images

        images.build(engine.connect(cfg), base_image=base_image, ca_file=ca_cert, no_cache=no_cache)

    _run(ctx, go)


@app.command(short_help="Install the worker and Claude Code into the volume.")
def setup(
    ctx: typer.Context,
    runtime: Annotated[
        Optional[str],
        typer.Option("--runtime", help="The runtime: claude or codex (a list only if the worker takes one)."),
    ] = None,
    concurrency: Concurrency = None,
    worker_url: Annotated[
        Optional[str],
        typer.Option("--worker-url", envvar="IMD_WORKER_URL", help="Where the worker release is (a mirror)."),
    ] = None,
    no_shell: Annotated[bool, typer.Option("--no-shell", help="Do not open the box's shell at the end.")] = False,
    grok_key_file: GrokKeyFile = None,
) -> None:
    """Create the volume, install Claude Code and the worker into it (same walls), then open a shell."""
    _run(
        ctx,
        _room("install").setup,
        runtime=runtime,
        concurrency=concurrency,
        worker_url=worker_url,
        open_shell=not no_shell,
        grok_key_file=grok_key_file,
    )


@app.command(short_help="Prove every wall from inside a box with the same flags.")
def check(
    ctx: typer.Context,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the results as JSON: a list of {wall, ok, proved, detail}.")
    ] = False,
    svg: Annotated[
        Optional[Path],
        typer.Option("--svg", help="Also write the report, with every line's evidence, as an SVG picture to FILE."),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show every line's evidence, not only a FAIL's.")
    ] = False,
    url: Annotated[
        str,
        typer.Option(
            "--url", envvar="IMD_BOX_CHECK_URL", help="The internet target: a public HTTPS URL the box must reach."
        ),
    ] = names.DEFAULT_INTERNET_URL,
    targets: Annotated[
        Optional[Path],
        typer.Option(
            "--targets", help="A JSON file changing where the network probes aim (keys of check.runner.Targets)."
        ),
    ] = None,
) -> None:
    """Prove every wall from inside a throwaway box started with the worker's own flags.

    One line per wall, ok or FAIL; a FAIL's evidence under it (every line's with --verbose).
    Exit 0 when every line is ok, 1 when one FAILs, 3 when none FAILs but the internet URL was
    out of the box's reach, so the lines that need it are not proved.
    """
    from .check.command import main

    raise typer.Exit(_run(ctx, main, json_output=json_output, svg=svg, url=url, targets_file=targets, verbose=verbose))


@app.command(short_help="Run the box in the background (restarts with Docker).")
def start(ctx: typer.Context) -> None:
    """Run the box in the background; it restarts with Docker until `box stop`."""
    _run(ctx, _room("service").start)


@app.command(short_help="Stop the box gracefully (45 s for the worker).")
def stop(ctx: typer.Context) -> None:
    """Stop the box gracefully (the worker gets 45 s to finish cleanly)."""
    _run(ctx, _room("service").stop)


@app.command(short_help="Follow the worker's log.")
def logs(
    ctx: typer.Context,
    since: Annotated[
        Optional[str], typer.Option("--since", help="Only newer lines: 30s, 10m, 2h, 1d or a date.")
    ] = None,
    no_follow: Annotated[bool, typer.Option("--no-follow", help="Print what is there and stop.")] = False,
    tail: Annotated[Optional[int], typer.Option("--tail", help="Only the last N lines.")] = None,
    raw: Annotated[
        bool,
        typer.Option(
            "--raw",
            help="The log's bytes as the box wrote them, for a pipe: terminal control sequences are "
            "not shown as escapes, so never send this to a terminal.",
        ),
    ] = False,
) -> None:
    """Follow the worker's log (Ctrl-C stops watching, not the worker). Control sequences in it
    are shown as escapes (\\x1b...), never acted on by your terminal; --raw keeps the bytes."""
    _run(ctx, _room("inspection").logs, since=since, follow=not no_follow, tail=tail, raw=raw)


@app.command(short_help="The box's state, then `imd doctor` inside it.")
def status(
    ctx: typer.Context,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Only the box's state, its restarts and the attempts each wall refused since it started, as JSON "
            "(no doctor).",
        ),
    ] = False,
) -> None:
    """The box's state, the attempts each wall refused since it started, then `imd doctor`
    inside it (its exit code is box's)."""
    code = _run(ctx, _room("inspection").status, json_output=json_output)
    raise typer.Exit(code or 0)


@app.command(short_help="Rebuild or re-pull; recreate the box, keep the volume.")
def update(ctx: typer.Context, base_image: BaseImage = None, ca_cert: CaCert = None, no_cache: NoCache = False) -> None:
    """Rebuild (or re-pull) the image, recreate the box keeping the volume, refresh the agent CLIs.
    --base-image, --ca-cert and --no-cache are for a rebuild."""
    _run(ctx, _room("service").update, base_image=base_image, ca_file=ca_cert, no_cache=no_cache)


@app.command(context_settings={"allow_interspersed_args": False}, short_help="A shell in the box as `imd`.")
def shell(
    ctx: typer.Context,
    command: Annotated[Optional[list[str]], typer.Argument(help="A command to run instead of a login shell.")] = None,
) -> None:
    """A shell in the box as `imd` (the running box, or a one-off with the same walls)."""
    code = _run(ctx, _room("shell").shell, command=command or [], tty=sys.stdin.isatty() and sys.stdout.isatty())
    raise typer.Exit(code or 0)


@app.command(short_help="Show or change the runtime: claude or codex.")
def runtime(
    ctx: typer.Context,
    runtimes: Annotated[
        Optional[str],
        typer.Argument(help="e.g. codex (a list such as claude,grok only if the worker takes one); none shows it."),
    ] = None,
    concurrency: Concurrency = None,
    grok_key_file: GrokKeyFile = None,
) -> None:
    """Show or change the runtime: installs/removes agent CLIs in the volume, restarts the worker.
    The installed worker's own help decides what it can run."""
    _run(ctx, _room("service").runtime, names_arg=runtimes, concurrency=concurrency, grok_key_file=grok_key_file)


@app.command(short_help="Unlink, then remove the box, volume (asks), image.")
def remove(
    ctx: typer.Context,
    keep_seat: Annotated[bool, typer.Option("--keep-seat", help="Skip `imd unlink` (the seat stays taken).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Also delete the volume without asking.")] = False,
    keep_image: Annotated[bool, typer.Option("--keep-image", help="Keep the box image.")] = False,
) -> None:
    """Stop, `imd unlink` (frees the seat), remove the container, the volume (asks) and the image."""

    def go(cfg):
        delete_volume = yes
        if not yes and sys.stdin.isatty():
            delete_volume = typer.confirm(
                f"Also delete the volume {cfg.volume}? It holds your logins, the worker and its pairing",
                default=False,
            )
        _room("service").remove(cfg, keep_seat=keep_seat, delete_volume=delete_volume, keep_image=keep_image)

    _run(ctx, go)


@app.command(short_help="Every seat on this engine: its box, runtime, restarts, pairing.")
def seats(ctx: typer.Context) -> None:
    """Every seat on this engine (`box --seat NAME ...` acts on one): its box, runtime,
    restarts and pairing (`imd status` in a running box)."""
    _run(ctx, _room("inspection").seats)


@app.command(short_help="Print box's version.")
def version() -> None:
    """Print box's version."""
    from . import __version__

    typer.echo(f"box {__version__}")


def main() -> None:
    # Ctrl-C always stops box. A shell that starts a command in the background
    # without job control (a CI job, `cmd &` in a script) leaves SIGINT ignored,
    # and Python keeps an inherited "ignore": `box logs` would then follow forever.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    app()


if __name__ == "__main__":
    main()
