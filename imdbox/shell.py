"""`box shell`: a shell (or one command) in the box as `imd`, in the running box or in a
one-off box with the same walls."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from . import broker, engine, layout, ui, volume
from .config import Config
from .engine import Engine
from .errors import BoxError


def docker_cli(eng: Engine) -> list[str]:
    """The docker CLI, aimed at the engine this command's SDK client talks to."""
    path = shutil.which("docker")
    if not path:
        raise BoxError("the `docker` command is not on PATH (Docker Desktop installs it); the shell needs it")
    return eng.endpoint.cli(path)


# The owner's shell sits beside the owner's logins: worker/owner/box-shell (layout.OWNER_SHELL) runs
# it, or the command, in the owner's own home, which the worker's view does not show, with the box's
# own commands first on its PATH (the agent CLIs from their packages, `imd` in the worker's view),
# then the image's, never the volume's. In a running box it first makes sure the broker's proxy
# (broker.SHELL_ENV) is the broker's.
SHELL = [layout.OWNER_SHELL]


def shell(cfg: Config, command: Sequence[str], tty: bool) -> int:
    eng = engine.connect(cfg)
    engine.image(eng)
    container = engine.box_container(eng)
    running = engine.is_up(container)
    if not running:
        volume.require_volume(eng)
    cmd = [*SHELL, *command]
    if tty:
        if running:
            # Root starts in / (never chdir into the volume); the shell cds to the owner's home as imd.
            env = [a for k, v in {**engine.EXEC_ENV, **broker.SHELL_ENV}.items() for a in ("-e", f"{k}={v}")]
            args = [*docker_cli(eng), "exec", "-it", "-u", "root", *env, eng.cfg.container] + engine.AS_IMD + cmd
        else:
            flags = engine.flags(eng, "shell", cmd, interactive=True)
            args = [*docker_cli(eng), "run", "--rm"] + flags.cli_args()
        return subprocess.call(args)
    # No terminal: run the command and pass its output and exit code.
    if running:
        code, out = engine.exec_as_imd(container, cmd, broker.SHELL_ENV)
        if out:
            ui.say(out.rstrip("\n"))
        return code
    flags = engine.flags(eng, "shell", cmd)
    code, _ = engine.run_oneoff(eng, flags, on_line=print_shell_line)
    return code


def print_shell_line(line: str) -> None:
    if line.startswith("imd-box firewall:"):
        return
    ui.say(line)
