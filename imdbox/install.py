"""What installs into the volume: the worker and the agent CLIs (install.sh in a one-off box
with the walls up), the Grok CLI's key, and `box setup`.

Every container made here takes its flags from RunFlags (through engine.flags).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Optional

from . import diagnose, engine, layout, names, protocol, ui, volume, worker
from . import settings as settings_mod
from .config import Config
from .engine import Engine
from .errors import BoxError
from .settings import check_concurrency, parse_runtimes

DEFAULT_WORKER_URL = "https://github.com/Identity-md/worker/releases/latest/download"
# The compilers the box keeps for every job's forge (install.sh keep_compilers): the solc
# contract jobs pin, 0.8.26 (hook jobs), and the newest 0.8 release; from where forge's svm
# downloads them (IMD_BOX_SOLC_URL instead: a mirror, the tests' feed).
SOLC_VERSIONS = ("0.8.26", "0.8")
DEFAULT_SOLC_URL = "https://binaries.soliditylang.org"
# install.sh's record of the compilers it keeps, one version a line (`box status` lists them).
COMPILERS_PATH = f"{names.HOME}/.imd-box/compilers"
# Passed through to install.sh when set (mirrors, tests).
PASSTHROUGH_ENV = ("IMD_CLAUDE_PACKAGE", "IMD_CODEX_PACKAGE", "IMD_GROK_PACKAGE")
# The Grok CLI (@vibe-kit/grok-cli) reads its xAI API key from GROK_API_KEY or,
# when that is unset, from "apiKey" in ~/.grok/user-settings.json (its own file
# is written 0600). install.sh stores the key there; box hands it in as a file
# put into the volume for the install box (GROK_KEY_STAGE, imd's alone, removed by
# install.sh once stored), never as an argument or a variable.
GROK_SETTINGS = f"{names.HOME}/.grok/user-settings.json"
GROK_KEY_NAME = ".imd-box-grok-key"
GROK_KEY_STAGE = f"{names.HOME}/{GROK_KEY_NAME}"


def install_env(
    runtimes: Sequence[str],
    concurrency: int,
    worker_url: Optional[str] = None,
    passed: Mapping[str, str] = {},
    compilers: bool = False,
) -> dict[str, str]:
    """install.sh's environment; `passed`: the command's own, of which PASSTHROUGH_ENV goes on.
    `compilers`: the agents' install keeps the compilers too (setup and update)."""
    env = {
        "IMD_BOX_RUNTIMES": ",".join(runtimes),
        "IMD_BOX_CONCURRENCY": str(concurrency),
        # The worker's own commands run in its view, in this box too: never beside the logins.
        "IMD_BOX_VIEW": layout.WORKER_VIEW,
    }
    if worker_url:
        env["IMD_WORKER_URL"] = worker_url.rstrip("/")
    if compilers:
        env["IMD_BOX_SOLC_VERSIONS"] = " ".join(SOLC_VERSIONS)
        env["IMD_BOX_SOLC_URL"] = (passed.get("IMD_BOX_SOLC_URL") or DEFAULT_SOLC_URL).rstrip("/")
    for key in PASSTHROUGH_ENV:
        if passed.get(key):
            env[key] = passed[key]
    return env


def kept_compilers(record: Optional[bytes]) -> list[str]:
    """The compilers install.sh's record (COMPILERS_PATH) names: its lines that are versions."""
    lines = (record or b"").decode(errors="replace").splitlines()
    return [line for line in lines if re.fullmatch(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}", line)]


def print_box_line(line: str) -> None:
    # A failed step is said once, as box's own last line (run_install).
    if worker.is_passed_on(line) or line.startswith(protocol.FAILED):
        return
    if line.startswith("imd-box firewall:"):
        ui.dim(line)
    else:
        ui.say(line)


# How a full volume shows in the install box's output: install.sh's own line, or
# a tool's ENOSPC (npm, tar, the worker writing its files).
_VOLUME_FULL = ("the volume is full", "No space left on device", "ENOSPC")


def run_install(
    eng: Engine, mode: str, env: dict[str, str], grok_key: Optional[str] = None, again: str = "setup"
) -> str:
    """The install box's output. `again`: the box command to run again once the volume has room."""
    files = None
    if grok_key:
        env = {**env, "IMD_BOX_GROK_KEY_FILE": GROK_KEY_STAGE}
        files = volume.file_tar(GROK_KEY_NAME, grok_key.encode() + b"\n", names.UID)
    flags = engine.flags(eng, "setup", [layout.INSTALL_SH, mode], environment=env)
    code, out = engine.run_oneoff(eng, flags, on_line=print_box_line, files=files)
    if code != 0:
        if any(mark in out for mark in _VOLUME_FULL):
            raise BoxError(
                f"the volume {eng.cfg.volume} is full (no space left on device); what was installed is unchanged: "
                f"free disk space for Docker (`docker system prune`, or a larger disk in Docker Desktop's "
                f"Settings → Resources), then run `{eng.cfg.command(again)}` again"
            )
        raise BoxError(failed_install(eng.cfg, diagnose.failure(out), again))
    return out


def failed_install(cfg: Config, what: str, again: str) -> str:
    """The one line an install that failed ends with: what install.sh said, then what to do."""
    if what.startswith(protocol.DOWNLOAD_FAILED):
        return (
            f"{what}: check that this machine reaches it (or name a mirror: "
            f"`{cfg.command('setup')} --worker-url URL`), then run `{cfg.command(again)}` again"
        )
    return f"{what}: run `{cfg.command(again)}` again"


def worker_help(eng: Engine, install_output: str = "") -> worker.WorkerHelp:
    """The installed worker's own `imd help`: as the worker's install box passed it on, or
    read in a one-off box."""
    passed_on = worker.help_passed_on(install_output)
    code, text = passed_on or engine.run_oneoff(eng, engine.flags(eng, "status", worker.HELP_COMMAND))
    if code != 0:
        raise BoxError(
            f"the installed worker did not answer `imd help` ({diagnose.last_error(text)}): "
            f"run `{eng.cfg.command('setup')}`"
        )
    return worker.parse_help(text)


# ------------------------------------------------------------------ the Grok CLI's key
def read_key_file(path: Path) -> str:
    try:
        text = path.read_text()
    except OSError as exc:
        raise BoxError(f"cannot read the key file {path}: {exc.strerror}", code=2) from None
    return _check_key(text, f"the key file {path}")


def _check_key(text: str, where: str) -> str:
    key = text.strip()
    if not key or any(c.isspace() for c in key):
        raise BoxError(f"{where} must hold the xAI API key alone, on one line", code=2)
    return key


def grok_key(eng: Engine, wanted: Sequence[str], key: Optional[str]) -> Optional[str]:
    """The key to store for the Grok CLI: the one given, else typed (hidden), else
    None when grok is not wanted or is signed in already."""
    if "grok" not in wanted:
        return None
    if key:
        return key
    if _grok_signed_in(eng):
        ui.dim("grok: signed in already (its API key is in the volume)")
        return None
    if not ui.is_tty():
        raise BoxError(
            "the Grok CLI needs an xAI API key: pass --grok-key-file FILE (the key alone), "
            "or run this in a terminal to type it; nothing was changed"
        )
    import typer

    typed = typer.prompt("xAI API key for the Grok CLI (not shown)", hide_input=True, default="", show_default=False)
    return _check_key(typed, "the key")


def _grok_signed_in(eng: Engine) -> bool:
    try:
        settings = json.loads(volume.read_file(eng, GROK_SETTINGS) or b"{}")
    except ValueError:
        return False
    return isinstance(settings, dict) and bool(settings.get("apiKey"))


# ------------------------------------------------------------------ setup
def setup(
    cfg: Config,
    runtime: Optional[str],
    concurrency: Optional[int],
    worker_url: Optional[str],
    open_shell: bool,
    grok_key_file: Optional[Path] = None,
) -> None:
    eng = engine.connect(cfg)
    engine.image(eng)
    container = engine.box_container(eng)
    runtimes = parse_runtimes(runtime, cfg) if runtime else None
    if concurrency is not None:
        check_concurrency(concurrency)
    key = read_key_file(grok_key_file) if grok_key_file else None
    if engine.is_running(container):
        raise BoxError(
            f"the box is running: stop it first (`{eng.cfg.command('stop')}`), "
            f"then run `{eng.cfg.command('setup')}` again"
        )
    hint_a_pairing_here(cfg)
    if engine.ensure_volume(eng):
        ui.ok(f"created the volume {eng.cfg.volume} (your logins, the worker and its pairing live here)")
    volume.prefetch(eng, [settings_mod.PATH, GROK_SETTINGS])
    current = settings_mod.read_or_defaults(eng)  # setup writes the file again
    runtimes = runtimes or list(current.runtimes)
    concurrency = concurrency or current.concurrency
    key = grok_key(eng, runtimes, key)  # asked before anything is installed
    from . import browser

    env = {
        **install_env(runtimes, concurrency, worker_url or DEFAULT_WORKER_URL, cfg.env, compilers=True),
        **browser.offer_env(),
    }
    ui.step("installing the worker into the volume, inside a box with the same walls")
    out = run_install(eng, "worker", env)
    # Only now is the worker there to say what it runs.
    problem = worker.runtime_problem(runtimes, worker_help(eng, out))
    if problem:
        raise BoxError(f"{problem}; the worker is installed, the runtime setting was not changed")
    ui.step("installing " + ", ".join(runtimes) + " into the volume, inside a box with the same walls")
    run_install(eng, "agents", env, grok_key=key)
    ui.ok("setup done")
    steps = (
        "Next steps, in the box's shell:\n"
        "  1. claude        then type /login and follow it (signs Claude Code in; the login stays in the volume)\n"
        "  2. imd pair      pair this worker with your wallet\n"
        "  3. imd doctor    every line should be ✓\n"
        f"Then `exit`, and run `./{eng.cfg.command('start')}`."
    )
    if open_shell and ui.is_tty():
        from .shell import shell

        ui.say(steps)
        code = shell(cfg, [], tty=True)
        if code not in (0, 130):
            ui.dim(f"(the shell exited with {code})")
        ui.say(f"When all three steps are done: ./{eng.cfg.command('start')}")
    else:
        ui.say(steps.replace("in the box's shell", f"in the box's shell (`./{eng.cfg.command('shell')}`)"))


def hint_a_pairing_here(cfg: Config) -> None:
    hint = worker.pairing_hint(cfg.env)
    if hint:
        ui.say(hint, style="yellow")
