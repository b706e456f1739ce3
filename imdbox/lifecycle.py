"""What the commands do to the engine: setup, start, stop, status, update, runtime, remove.

Every container made here takes its flags from RunFlags (through engine.flags).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import docker.errors

from . import engine, layout, names, refused, terminal, ui, worker
from . import settings as settings_mod
from .errors import BoxError
from .runflags import STOP_TIMEOUT
from .settings import RUNTIMES, check_concurrency, parse_runtimes
from .throwaway import interruptible

DEFAULT_WORKER_URL = "https://github.com/Identity-md/worker/releases/latest/download"
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


def install_env(runtimes: Sequence[str], concurrency: int, worker_url: Optional[str] = None) -> dict[str, str]:
    env = {"IMD_BOX_RUNTIMES": ",".join(runtimes), "IMD_BOX_CONCURRENCY": str(concurrency)}
    if worker_url:
        env["IMD_WORKER_URL"] = worker_url.rstrip("/")
    for key in PASSTHROUGH_ENV:
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def _print_box_line(line: str) -> None:
    if worker.is_passed_on(line):
        return
    if line.startswith("imd-box firewall:") or line.startswith("imd-box: FAILED"):
        ui.dim(line) if "FAILED" not in line else ui.say(line, style="red")
    else:
        ui.say(line)


# How a full volume shows in the install box's output: install.sh's own line, or
# a tool's ENOSPC (npm, tar, the worker writing its files).
_VOLUME_FULL = ("the volume is full", "No space left on device", "ENOSPC")


def run_install(client, mode: str, env: dict[str, str], grok_key: Optional[str] = None, again: str = "setup") -> str:
    """The install box's output. `again`: the box command to run again once the volume has room."""
    files = None
    if grok_key:
        env = {**env, "IMD_BOX_GROK_KEY_FILE": GROK_KEY_STAGE}
        files = engine.file_tar(GROK_KEY_NAME, grok_key.encode() + b"\n", names.UID)
    flags = engine.flags(client, "setup", [layout.INSTALL_SH, mode], environment=env)
    code, out = engine.run_oneoff(client, flags, on_line=_print_box_line, files=files)
    if code != 0:
        if any(mark in out for mark in _VOLUME_FULL):
            raise BoxError(
                f"the volume {names.VOLUME} is full (no space left on device); what was installed is unchanged: "
                f"free disk space for Docker (`docker system prune`, or a larger disk in Docker Desktop's "
                f"Settings → Resources), then run `{names.box_command(again)}` again"
            )
        raise BoxError(f"install failed: {engine.last_error(out)}")
    return out


def worker_help(client, install_output: str = "") -> worker.WorkerHelp:
    """The installed worker's own `imd help`: as the worker's install box passed it on, or
    read in a one-off box."""
    passed_on = worker.help_passed_on(install_output)
    code, text = passed_on or engine.run_oneoff(client, engine.flags(client, "status", worker.HELP_COMMAND))
    if code != 0:
        raise BoxError(
            f"the installed worker did not answer `imd help` ({engine.last_error(text)}): "
            f"run `{names.box_command('setup')}`"
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


def grok_key(client, wanted: Sequence[str], key: Optional[str]) -> Optional[str]:
    """The key to store for the Grok CLI: the one given, else typed (hidden), else
    None when grok is not wanted or is signed in already."""
    if "grok" not in wanted:
        return None
    if key:
        return key
    if _grok_signed_in(client):
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


def _grok_signed_in(client) -> bool:
    try:
        settings = json.loads(engine.read_volume_file(client, GROK_SETTINGS) or b"{}")
    except ValueError:
        return False
    return isinstance(settings, dict) and bool(settings.get("apiKey"))


def _connect():
    """The engine, with the network setting checked before anything is looked at."""
    client = engine.connect()
    engine.network(client)
    return client


# ------------------------------------------------------------------ setup
def setup(
    runtime: Optional[str],
    concurrency: Optional[int],
    worker_url: Optional[str],
    open_shell: bool,
    grok_key_file: Optional[Path] = None,
) -> None:
    client = _connect()
    engine.image(client)
    container = engine.box_container(client)
    runtimes = parse_runtimes(runtime) if runtime else None
    if concurrency is not None:
        check_concurrency(concurrency)
    key = read_key_file(grok_key_file) if grok_key_file else None
    if engine.is_running(container):
        raise BoxError(
            f"the box is running: stop it first (`{names.box_command('stop')}`), "
            f"then run `{names.box_command('setup')}` again"
        )
    _hint_a_pairing_here()
    if engine.ensure_volume(client):
        ui.ok(f"created the volume {names.VOLUME} (your logins, the worker and its pairing live here)")
    current = settings_mod.read_or_defaults(client)  # setup writes the file again
    runtimes = runtimes or list(current.runtimes)
    concurrency = concurrency or current.concurrency
    key = grok_key(client, runtimes, key)  # asked before anything is installed
    from . import browser

    env = {**install_env(runtimes, concurrency, worker_url or DEFAULT_WORKER_URL), **browser.offer_env()}
    ui.step("installing the worker into the volume, inside a box with the same walls")
    out = run_install(client, "worker", env)
    # Only now is the worker there to say what it runs.
    problem = worker.runtime_problem(runtimes, worker_help(client, out))
    if problem:
        raise BoxError(f"{problem}; the worker is installed, the runtime setting was not changed")
    ui.step("installing " + ", ".join(runtimes) + " into the volume, inside a box with the same walls")
    run_install(client, "agents", env, grok_key=key)
    ui.ok("setup done")
    steps = (
        "Next steps, in the box's shell:\n"
        "  1. claude        then type /login and follow it (signs Claude Code in; the login stays in the volume)\n"
        "  2. imd pair      pair this worker with your wallet\n"
        "  3. imd doctor    every line should be ✓\n"
        f"Then `exit`, and run `./{names.box_command('start')}`."
    )
    if open_shell and ui.is_tty():
        ui.say(steps)
        code = shell([], tty=True)
        if code not in (0, 130):
            ui.dim(f"(the shell exited with {code})")
        ui.say(f"When all three steps are done: ./{names.box_command('start')}")
    else:
        ui.say(steps.replace("in the box's shell", f"in the box's shell (`./{names.box_command('shell')}`)"))


# ------------------------------------------------------------------ start / stop
def start() -> None:
    client = _connect()
    container = engine.box_container(client)
    engine.image(client)
    if container is not None and engine.being_started(container):
        # Another `box start` (at the same moment) made it and is waiting for it: so do we.
        return _join(client)
    if engine.is_up(container) and engine.worker_running(container):
        ui.ok(_already_running())
        return
    engine.require_setup(client)
    settings_mod.read(client)  # damaged settings: one line now, not a box that will not start
    _hint_a_pairing_here()
    _refuse_if_seats_overfill(client)
    if container is not None:
        engine.remove_box(container)
    _create_and_start(client)


def _hint_a_pairing_here() -> None:
    hint = worker.pairing_hint()
    if hint:
        ui.say(hint, style="yellow")


def _refuse_if_seats_overfill(client) -> None:
    """Seats side by side each get the full memory cap; when together they would need
    more than the engine has, the kernel would kill a worker mid-task: refuse instead."""
    limits = engine.limits(client)
    others = engine.other_boxes_memory(client)
    if others and others + limits.box_memory > limits.memory:
        raise BoxError(
            f"this box needs {_gib(limits.box_memory)} and the other running seats {_gib(others)}, more than "
            f"Docker's {_gib(limits.memory)}: stop a seat (`box seats` lists them) or give Docker more memory; "
            "nothing was started"
        )


def _gib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB"


# What a message tells the user to run next, in the words several messages share.
def _status_then_start() -> str:
    return f"`{names.box_command('status')}`, then `{names.box_command('start')}` again"


def _setup_then_start() -> str:
    return f"`{names.box_command('setup')}`, then `{names.box_command('start')}`"


def _pull_or_build() -> str:
    return f"`{names.box_command('pull')}` or `{names.box_command('build')}`"


def _already_running() -> str:
    return f"the box is already running ({names.CONTAINER}); `{names.box_command('logs')}` to watch it"


def _join(client) -> None:
    """The box is being started by another `box start`: wait for its outcome, say it once."""
    container = engine.box_container(client)
    try:
        started = container is not None and engine.wait_started(container, joining=True)[0]
    except docker.errors.NotFound:  # removed while we waited
        started = False
    if not started:
        raise BoxError(
            f"another `{names.box_command('start')}` was starting the box at the same moment, and it did not start: "
            f"its own output says why; {_status_then_start()}"
        )
    ui.ok(_already_running())


def _create_and_start(client) -> None:
    flags = engine.flags(client, "worker", name=names.CONTAINER, restart=True)
    try:
        container = engine.create_box(client, flags)
    except docker.errors.APIError as exc:
        if exc.status_code == 409 and engine.box_container_soon(client) is not None:
            return _join(client)  # the name is taken by a box another `box start` made a moment ago
        raise
    ui.step(f"starting the box {names.CONTAINER} (restarts with Docker: unless-stopped)")
    try:
        container.start()
        started, logs = engine.wait_started(container)
    except docker.errors.NotFound:
        raise BoxError(
            f"the box {names.CONTAINER} was removed while it was starting (by another command?): {_status_then_start()}"
        ) from None
    if not started:
        tail = "\n".join(logs.splitlines()[-15:])
        try:
            engine.remove_box(container)
        except docker.errors.APIError:
            pass
        if tail:
            ui.dim(tail)
        raise BoxError(f"the box did not start, and was removed (no restart loop): {engine.last_error(logs)}")
    ui.ok(
        f"walls up and verified; the worker is running. `{names.box_command('logs')}` to watch it, "
        f"`{names.box_command('status')}` to check it"
    )


def stop() -> None:
    """Stop gracefully (the worker finishes its task)."""
    client = _connect()
    container = engine.box_container(client)
    if not engine.is_running(container):
        ui.say("the box is not running")
        return
    ui.step(f"stopping the box (the worker gets up to {STOP_TIMEOUT}s to finish cleanly)")
    engine.stop_box(container)
    ui.ok("stopped")


# ------------------------------------------------------------------ logs
_DURATION = re.compile(r"^(\d+)([smhd])$")


def parse_since(text: str):
    import datetime as dt

    m = _DURATION.match(text.strip())
    if m:
        seconds = int(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
        return dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=seconds)
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BoxError(
            f"--since {text!r}: give a duration (30s, 10m, 2h, 1d) or a date (2026-01-31T12:00)", 2
        ) from None
    return value if value.tzinfo else value.astimezone()


def logs(since: Optional[str], follow: bool, tail: Optional[int], raw: bool = False) -> None:
    since_value = parse_since(since) if since else None
    client = _connect()
    container = engine.box_container(client)
    if container is None:
        raise BoxError(f"there is no box yet: run {_setup_then_start()}")
    kwargs = dict(stream=True, follow=follow, stdout=True, stderr=True)
    if since_value is not None:
        kwargs["since"] = since_value
    if tail is not None:
        kwargs["tail"] = tail
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    stream = interruptible(container.logs(**kwargs))
    try:
        for chunk in stream if raw else terminal.safe_stream(stream):
            out.write(chunk)
    except KeyboardInterrupt:
        pass
    finally:
        out.close()


# ------------------------------------------------------------------ status
def status(json_output: bool = False) -> int:
    client = _connect()
    container = engine.box_container(client)
    img = engine.image(client, required=False)
    if container is None:
        state = _no_container(client) if img is not None else "not created"
    else:
        container.reload()
        state = _box_state(container)
    restarts = container.attrs.get("RestartCount", 0) if container is not None else 0
    if json_output:
        counts = refused.read(container) if engine.is_up(container) else None
        ui.write(json.dumps({"box": names.CONTAINER, "state": state, "restarts": restarts, "refused": counts}) + "\n")
        return 0
    ui.say(f"box:       {names.CONTAINER}: {state}", style="bold")
    ui.say(f"engine:    {engine.endpoint_of(client).describe()}")
    if container is not None:
        st = container.attrs["State"]
        ui.say(f"since:     {_when(st.get('StartedAt') if st.get('Running') else st.get('FinishedAt'))}")
        # Docker forgets the exit code of a run it restarted; FinishedAt is that exit.
        last = f", the last after an exit at {_when(st.get('FinishedAt'))}" if restarts else ""
        ui.say(f"restarts:  {restarts}{last}")
        if st.get("Running"):
            ui.say(f"health:    {engine.health(container)}")
            if engine.is_up(container):  # a box Docker is restarting takes no exec
                ui.say(f"refused:   {_refused_line(container)}")
    if img is None:
        ui.say(f"image:     {names.IMAGE}: missing (run {_pull_or_build()})")
    else:
        source = engine.pulled_from(img)
        origin = f"pulled from {source}" if source else "built from a checkout"
        ui.say(
            f"image:     {names.IMAGE} {img.short_id.split(':')[-1]}, {origin}, made {_when(img.attrs.get('Created'))}"
        )
    if container is not None and (container.attrs["State"].get("Restarting") or restarts > 0):
        ui.say(f"last error: {engine.last_error(container.logs(tail=300).decode(errors='replace'))}", style="red")
    if img is None:
        raise BoxError(f"the box image {names.IMAGE} is missing, and `imd doctor` needs it: run {_pull_or_build()}")
    engine.require_volume(client)
    current = settings_mod.read(client)
    ui.say(
        f"runtime:   {', '.join(current.runtimes)} (concurrency {current.concurrency})"
        + ("" if current.saved else f"  [not saved yet: run `{names.box_command('setup')}`]")
    )
    doctor = ["imd", "doctor"] + _doctor_runtime(list(current.runtimes))
    if engine.is_up(container):
        ui.step("imd doctor (in the running box)")
        code, out = engine.exec_as_imd(container, doctor)
        for line in out.splitlines():
            ui.say(line)
        if code == 127 or "executable file not found" in out:
            raise BoxError(f"the worker is not installed in the volume: run `{names.box_command('setup')}`")
        return code
    engine.require_setup(client)
    ui.step("imd doctor (in a one-off box with the same walls)")
    flags = engine.flags(client, "status", doctor)
    code, out = engine.run_oneoff(client, flags, on_line=_print_box_line)
    return code


def _refused_line(container) -> str:
    """What each wall refused since the box started, from the firewall's own counters."""
    try:
        counts = refused.read(container)
    except BoxError as exc:
        return str(exc)
    return ", ".join(f"{wall} {n}" for wall, n in counts.items()) + " (attempts since the box started)"


def _box_state(container) -> str:
    """The box's state in a word or two, as `box status` and `box seats` both say it."""
    st = container.attrs["State"]
    if st.get("Restarting"):
        return "RESTARTING"
    if st.get("Running"):
        return "running"
    return f"stopped (exit code {st.get('ExitCode')})"


def _no_container(client) -> str:
    """What it means that there is no container, plainly, and what to do."""
    if not engine.volume_exists(client) or not engine.volume_has(client, engine.IMD_PATH):
        return f"not created (run {_setup_then_start()})"
    if engine.volume_has(client, engine.WORKER_CONFIG_PATH):
        return (
            "GONE: there is no container (removed outside box, e.g. `docker rm -f` or Docker Desktop, "
            f"or never started); the volume is kept: `{names.box_command('start')}` creates it again"
        )
    return f"not created (run `{names.box_command('start')}`)"


def _doctor_runtime(runtimes: list[str]) -> list[str]:
    """Doctor checks the runtime the worker runs on (a worker that takes one
    runtime); without --runtime it would pick the first one installed."""
    return ["--runtime", runtimes[0]] if len(runtimes) == 1 else []


def _when(stamp: Optional[str]) -> str:
    if not stamp or stamp.startswith("0001-"):
        return "-"
    return stamp.split(".")[0].replace("T", " ") + " UTC"


# ------------------------------------------------------------------ shell
def docker_cli(client) -> list[str]:
    """The docker CLI, aimed at the engine this command's SDK client talks to."""
    path = shutil.which("docker")
    if not path:
        raise BoxError("the `docker` command is not on PATH (Docker Desktop installs it); the shell needs it")
    return engine.endpoint_of(client).cli(path)


def shell(command: Sequence[str], tty: bool) -> int:
    client = _connect()
    engine.image(client)
    container = engine.box_container(client)
    running = engine.is_up(container)
    if not running:
        engine.require_volume(client)
    # Not a login shell: /etc/profile would reset PATH and lose the volume's npm bin.
    cmd = list(command) or ["bash", "-c", "cd ~ && exec bash"]
    if tty:
        if running:
            # Root starts in / (never chdir into the volume); the shell cds home as imd.
            env = [a for k, v in engine.EXEC_ENV.items() for a in ("-e", f"{k}={v}")]
            args = [*docker_cli(client), "exec", "-it", "-u", "root", *env, names.CONTAINER] + engine.AS_IMD + cmd
        else:
            flags = engine.flags(client, "shell", cmd, interactive=True)
            args = [*docker_cli(client), "run", "--rm"] + flags.cli_args()
        return subprocess.call(args)
    # No terminal: run the command and pass its output and exit code.
    if running:
        code, out = engine.exec_as_imd(container, cmd)
        if out:
            ui.say(out.rstrip("\n"))
        return code
    flags = engine.flags(client, "shell", cmd)
    code, _ = engine.run_oneoff(client, flags, on_line=_print_shell_line)
    return code


def _print_shell_line(line: str) -> None:
    if line.startswith("imd-box firewall:"):
        return
    ui.say(line)


# ------------------------------------------------------------------ update
# Written before `box update` stops a running box, cleared once it runs again: an
# update cut short (Ctrl-C, a full volume) after the stop leaves the box stopped or
# removed, and the next `box update` then knows to start it. Only box reads it, from
# outside (never root inside the box).
RESUME_PATH = f"{names.HOME}/.imd-box/resume-after-update"


def _resume_pending(client) -> bool:
    return engine.volume_exists(client) and engine.read_volume_file(client, RESUME_PATH) == b"1\n"


def _set_resume(client, on: bool) -> None:
    try:
        engine.write_volume_file(client, RESUME_PATH, b"1\n" if on else b"0\n")
    except docker.errors.APIError as exc:  # e.g. a full volume: the update goes on without it
        ui.dim(f"(could not note in the volume that the box was running: {exc.explanation or exc})")


def update(base_image: str, ca_file: Optional[Path], no_cache: bool) -> None:
    client = _connect()
    container = engine.box_container(client)
    img = engine.image(client, required=False)
    # Damaged settings stop the update before anything changes (the box keeps running).
    current = settings_mod.read(client) if engine.setup_done(client) else None
    was_running = engine.is_running(container)
    resume = was_running or _resume_pending(client)
    source = engine.pulled_from(img)
    if source:
        ui.step(f"the box image came from `{names.box_command('pull')}`: pulling {source} again")
        from .images import pull

        pull(client, source)
    else:
        ui.step("rebuilding the box image from this checkout")
        from .images import build

        build(client, base_image, ca_file, no_cache, refresh_apt=True)
    if container is not None:
        if was_running:
            _set_resume(client, True)
            ui.step(f"stopping the box (up to {STOP_TIMEOUT}s for the worker to finish cleanly)")
            engine.stop_box(container)
        engine.remove_box(container)
        ui.ok("removed the old container (the volume stays as it is)")
    if current is not None:
        runtimes = list(current.runtimes)
        ui.step("refreshing the agent CLIs in the volume: " + ", ".join(runtimes))
        run_install(client, "agents", install_env(runtimes, current.concurrency), again="update")
    else:
        ui.say(f"setup was not done yet: nothing to refresh in the volume (run `{names.box_command('setup')}`)")
    if resume:
        if not was_running:
            ui.say(
                f"the box was running when an earlier `{names.box_command('update')}` was cut short: starting it again"
            )
        _create_and_start(client)
        _set_resume(client, False)
    ui.ok(
        "updated"
        + ("; the box is running again" if resume else f"; `{names.box_command('start')}` when you want it running")
    )
    others = _other_seats(client)
    if others:
        ui.say(f"the other seats ({others}) keep their box as it is until each is updated: `box --seat NAME update`")


NO_NAME = "(no name)"  # how the seat without a name shows in a list (no seat's name has brackets)


def _other_seats(client) -> str:
    """The seats on this engine other than this command's, as a list to read ("" if none)."""
    return ", ".join(seat or NO_NAME for seat in engine.seats(client) if seat != names.SEAT)


# ------------------------------------------------------------------ runtime
def runtime(names_arg: Optional[str], concurrency: Optional[int], grok_key_file: Optional[Path] = None) -> None:
    wanted = parse_runtimes(names_arg) if names_arg else None
    if concurrency is not None:
        check_concurrency(concurrency)
    key = read_key_file(grok_key_file) if grok_key_file else None
    client = _connect()
    container = engine.box_container(client)
    engine.image(client)
    engine.require_setup(client)
    if wanted is None and concurrency is None:
        current = settings_mod.read(client)
    else:  # this writes the file again: a damaged one is replaced
        current = settings_mod.read_or_defaults(client)
    have = list(current.runtimes)
    help_ = worker_help(client)
    if wanted is None and concurrency is None:
        ui.say(f"runtime(s): {', '.join(have)} (concurrency {current.concurrency})")
        ui.say(f"the installed worker {help_.version or '(version unknown)'} runs {help_.describe()}")
        ui.say(f"box can install: {', '.join(RUNTIMES)}")
        return
    wanted = wanted or have
    problem = worker.runtime_problem(wanted, help_)
    if problem:
        raise BoxError(f"{problem}; nothing was changed")
    key = grok_key(client, wanted, key)
    new_concurrency = concurrency or current.concurrency
    ui.step(f"runtime(s) {', '.join(wanted)}, concurrency {new_concurrency}: updating the CLIs in the volume")
    run_install(client, "agents", install_env(wanted, new_concurrency), grok_key=key, again="runtime")
    if engine.is_running(container):
        ui.step("restarting the worker on " + " and ".join(wanted))
        engine.stop_box(container)
        engine.remove_box(container)
        _create_and_start(client)
    ui.ok(f"runtime(s): {', '.join(wanted)}")


# ------------------------------------------------------------------ remove
def remove(keep_seat: bool, delete_volume: Optional[bool], keep_image: bool) -> None:
    client = _connect()
    container = engine.box_container(client)
    img = engine.image(client, required=False)
    has_volume = engine.volume_exists(client)
    if engine.is_running(container):
        ui.step(f"stopping the box (up to {STOP_TIMEOUT}s)")
        engine.stop_box(container)
    if not keep_seat and has_volume:
        if img is None:
            raise BoxError(
                f"the box image {names.IMAGE} is missing, and `imd unlink` needs it: run {_pull_or_build()}, "
                "or pass --keep-seat"
            )
        if not engine.volume_has(client, engine.IMD_PATH):
            ui.say("no worker installed in the volume: no seat to free")
        elif not engine.volume_has(client, engine.WORKER_CONFIG_PATH):
            ui.say("the worker was never set up here (no config): no seat to free")
        else:
            ui.step("imd unlink (frees this device's seat), in a one-off box with the same walls")
            code, out = engine.run_oneoff(client, engine.flags(client, "remove", ["imd", "unlink"]), _print_shell_line)
            if code != 0:
                raise BoxError(
                    f"`imd unlink` failed ({engine.last_error(out)}): nothing was removed; "
                    "try again, or pass --keep-seat to remove without freeing the seat"
                )
    if container is not None:
        engine.remove_box(container)
        ui.ok(f"removed the container {names.CONTAINER}")
    if has_volume:
        if delete_volume:
            engine.remove_volume(client)
            ui.ok(f"removed the volume {names.VOLUME}")
        else:
            ui.say(
                f"kept the volume {names.VOLUME} (logins, worker, pairing); "
                f"`{names.box_command('remove', '--yes')}` deletes it"
            )
    others = _other_seats(client)
    if img is not None and not keep_image and others:
        ui.say(f"kept the image {names.IMAGE}: the other seats use it too ({others})")
    elif img is not None and not keep_image:
        source = engine.pulled_from(img)
        for tag in [names.IMAGE] + ([source] if source else []):
            try:
                engine.remove_image_tag(client, tag)
            except docker.errors.APIError as exc:
                ui.dim(f"(kept the image tag {tag}: {exc.explanation})")
            else:
                ui.ok(f"removed the image {tag}")


# ------------------------------------------------------------------ seats
def seats() -> None:
    """Every seat on this engine as a table: its box, runtime, restarts and pairing."""
    client = _connect()
    found = engine.seats(client)
    if not found:
        ui.say(
            f"no seats yet: `{names.box_command('setup')}` makes the first (`box --seat NAME setup` one with a name)"
        )
        return
    chosen = names.SEAT
    rows = []
    try:
        for seat in found:
            names.use_seat(seat)  # each seat's own container and volume
            rows.append(_seat_row(client, seat))
    finally:
        names.use_seat(chosen)
    ui.table(["SEAT", "BOX", "RUNTIME", "RESTARTS", "PAIRED"], rows)


def _seat_row(client, seat: Optional[str]) -> list[str]:
    container = engine.box_container(client)
    state = "not created" if container is None else _box_state(container)
    try:
        current = settings_mod.read(client)
        runtime = f"{', '.join(current.runtimes)} ×{current.concurrency}" + ("" if current.saved else " (not set up)")
    except BoxError:
        runtime = "settings damaged"
    restarts = str(container.attrs.get("RestartCount", 0)) if container is not None else "-"
    paired = "-"
    if engine.is_up(container):
        paired = worker.pairing(engine.exec_as_imd(container, worker.STATUS_COMMAND)[1])
    return [seat or NO_NAME, state, runtime, restarts, paired]
