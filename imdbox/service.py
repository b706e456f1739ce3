"""What runs the box: start, stop, update, runtime and remove.

Every container made here takes its flags from RunFlags (through engine.flags).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import docker.errors

from . import diagnose, engine, names, startup, ui, volume, worker
from . import settings as settings_mod
from .config import Config
from .engine import Engine
from .errors import BoxError
from .install import GROK_SETTINGS, grok_key, hint_a_pairing_here, install_env, read_key_file, run_install, worker_help
from .runflags import STOP_TIMEOUT
from .settings import RUNTIMES, check_concurrency, parse_runtimes
from .shell import print_shell_line

FAILED_STOP_TIMEOUT = 10  # s: a box that did not start has no task to finish


# ------------------------------------------------------------------ start / stop
def start(cfg: Config) -> None:
    eng = engine.connect(cfg)
    container = engine.box_container(eng)
    engine.image(eng)
    if container is not None and startup.being_started(container):
        # Another `box start` (at the same moment) made it and is waiting for it: so do we.
        return _join(eng)
    if engine.is_up(container) and engine.worker_running(container):
        ui.ok(_already_running(eng.cfg))
        return
    volume.prefetch(eng, [engine.IMD_PATH, settings_mod.PATH])
    volume.require_setup(eng)
    settings_mod.read(eng)  # damaged settings: one line now, not a box that will not start
    hint_a_pairing_here(cfg)
    _refuse_if_seats_overfill(eng)
    _recreate(eng, container, graceful=False)  # its worker is not running: nothing to finish


def _recreate(eng: Engine, container, graceful: bool) -> None:
    """The box made again from the image and the seat's settings, the volume as it is: the
    old one (if any) removed first, `graceful`: stopped first (its worker finishes its task)."""
    if container is not None:
        if graceful and engine.is_running(container):
            engine.stop_box(container)
        engine.remove_box(container)
    _create_and_start(eng)


def _refuse_if_seats_overfill(eng: Engine) -> None:
    """Seats side by side each get the full memory cap; when together they would need
    more than the engine has, the kernel would kill a worker mid-task: refuse instead."""
    limits = engine.limits(eng)
    others = engine.other_boxes_memory(eng)
    if others and others + limits.box_memory > limits.memory:
        raise BoxError(
            f"this box needs {_gib(limits.box_memory)} and the other running seats {_gib(others)}, more than "
            f"Docker's {_gib(limits.memory)}: stop a seat (`box seats` lists them) or give Docker more memory; "
            "nothing was started"
        )


def _gib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB"


# What a message tells the user to run next, in the words several messages share.
def _status_then_start(cfg: Config) -> str:
    return f"`{cfg.command('status')}`, then `{cfg.command('start')}` again"


def setup_then_start(cfg: Config) -> str:
    return f"`{cfg.command('setup')}`, then `{cfg.command('start')}`"


def pull_or_build(cfg: Config) -> str:
    return f"`{cfg.command('pull')}` or `{cfg.command('build')}`"


def _already_running(cfg: Config) -> str:
    return f"the box is already running ({cfg.container}); `{cfg.command('logs')}` to watch it"


def _join(eng: Engine) -> None:
    """The box is being started by another `box start`: wait for its outcome, say it once."""
    container = engine.box_container(eng)
    try:
        started = container is not None and startup.wait_started(container, joining=True)[0]
    except docker.errors.NotFound:  # removed while we waited
        started = False
    if not started:
        raise BoxError(
            f"another `{eng.cfg.command('start')}` was starting the box at the same moment, and it did not start: "
            f"its own output says why; {_status_then_start(eng.cfg)}"
        )
    ui.ok(_already_running(eng.cfg))


def _create_and_start(eng: Engine) -> None:
    flags = engine.flags(eng, "worker", name=eng.cfg.container, restart=True)
    try:
        container = engine.create_box(eng, flags)
    except docker.errors.APIError as exc:
        if exc.status_code == 409 and engine.box_container_soon(eng) is not None:
            return _join(eng)  # the name is taken by a box another `box start` made a moment ago
        raise
    try:
        container.start()
        # Said once the engine has it: the first line loads rich (0.1 s), which then overlaps
        # the box's own start instead of delaying it.
        ui.step(f"starting the box {eng.cfg.container} (restarts with Docker: unless-stopped)")
        started, logs = startup.wait_started(container)
    except docker.errors.NotFound:
        raise BoxError(
            f"the box {eng.cfg.container} was removed while it was starting (by another command?): {_status_then_start(eng.cfg)}"
        ) from None
    if not started:
        tail = "\n".join(logs.splitlines()[-15:])
        try:
            # Stopped first, not killed: a worker Docker restarted may be writing its config
            # (the device key) just now, and a kill between its truncate and its write would
            # leave the file empty.
            engine.stop_box(container, timeout=FAILED_STOP_TIMEOUT)
            engine.remove_box(container)
        except docker.errors.APIError:
            pass
        if tail:
            ui.dim(tail)
        raise BoxError(f"the box did not start, and was removed (no restart loop): {diagnose.failure(logs)}")
    ui.ok(
        f"walls up and verified; the worker is running. `{eng.cfg.command('logs')}` to watch it, "
        f"`{eng.cfg.command('status')}` to check it"
    )


def stop(cfg: Config) -> None:
    """Stop gracefully (the worker finishes its task)."""
    eng = engine.connect(cfg)
    container = engine.box_container(eng)
    if not engine.is_running(container):
        ui.say("the box is not running")
        return
    ui.step(f"stopping the box (the worker gets up to {STOP_TIMEOUT}s to finish cleanly)")
    engine.stop_box(container)
    ui.ok("stopped")


# ------------------------------------------------------------------ update
# Written before `box update` (or `box runtime`) stops a running box, cleared once it runs
# again: one cut short (Ctrl-C, a full volume) after the stop leaves the box stopped or
# removed, and the next `box update` or `box runtime` then knows to start it. Only box reads it, from
# outside (never root inside the box).
RESUME_PATH = f"{names.HOME}/.imd-box/resume-after-update"


def _resume_pending(eng: Engine) -> bool:
    return volume.read_file(eng, RESUME_PATH) == b"1\n"


def _set_resume(eng: Engine, on: bool) -> None:
    try:
        volume.write_file(eng, RESUME_PATH, b"1\n" if on else b"0\n")
    except docker.errors.APIError as exc:  # e.g. a full volume: the update goes on without it
        ui.dim(f"(could not note in the volume that the box was running: {exc.explanation or exc})")


def update(cfg: Config, base_image: str, ca_file: Optional[Path], no_cache: bool) -> None:
    eng = engine.connect(cfg)
    container = engine.box_container(eng)
    img = engine.image(eng, required=False)
    volume.prefetch(eng, [engine.IMD_PATH, settings_mod.PATH, RESUME_PATH])
    # Damaged settings stop the update before anything changes (the box keeps running).
    current = settings_mod.read(eng) if volume.setup_done(eng) else None
    was_running = engine.is_running(container)
    resume = was_running or _resume_pending(eng)
    source = engine.pulled_from(eng, img)
    if source:
        ui.step(f"the box image came from `{eng.cfg.command('pull')}`: pulling {source} again")
        from .images import pull

        pull(eng, source)
    else:
        ui.step("rebuilding the box image from this checkout")
        from .images import build

        build(eng, base_image, ca_file, no_cache, refresh_apt=True)
    if container is not None:
        if was_running:
            _set_resume(eng, True)
            ui.step(f"stopping the box (up to {STOP_TIMEOUT}s for the worker to finish cleanly)")
            engine.stop_box(container)
        engine.remove_box(container)
        ui.ok("removed the old container (the volume stays as it is)")
    if current is not None:
        runtimes = list(current.runtimes)
        ui.step("refreshing the agent CLIs in the volume: " + ", ".join(runtimes))
        env = install_env(runtimes, current.concurrency, passed=cfg.env, compilers=True)
        run_install(eng, "agents", env, again="update")
    else:
        ui.say(f"setup was not done yet: nothing to refresh in the volume (run `{eng.cfg.command('setup')}`)")
    if resume:
        if not was_running:
            ui.say(
                f"the box was running when an earlier `{eng.cfg.command('update')}` was cut short: starting it again"
            )
        _create_and_start(eng)
        _set_resume(eng, False)
    ui.ok(
        "updated"
        + ("; the box is running again" if resume else f"; `{eng.cfg.command('start')}` when you want it running")
    )
    others = other_seats(eng)
    if others:
        ui.say(f"the other seats ({others}) keep their box as it is until each is updated: `box --seat NAME update`")


NO_NAME = "(no name)"  # how the seat without a name shows in a list (no seat's name has brackets)


def other_seats(eng: Engine) -> str:
    """The seats on this engine other than this command's, as a list to read ("" if none)."""
    return ", ".join(seat or NO_NAME for seat in engine.seats(eng) if seat != eng.cfg.seat)


# ------------------------------------------------------------------ runtime
def runtime(
    cfg: Config, names_arg: Optional[str], concurrency: Optional[int], grok_key_file: Optional[Path] = None
) -> None:
    wanted = parse_runtimes(names_arg, cfg) if names_arg else None
    if concurrency is not None:
        check_concurrency(concurrency)
    key = read_key_file(grok_key_file) if grok_key_file else None
    eng = engine.connect(cfg)
    container = engine.box_container(eng)
    engine.image(eng)
    volume.prefetch(eng, [engine.IMD_PATH, settings_mod.PATH, GROK_SETTINGS, RESUME_PATH])
    volume.require_setup(eng)
    if wanted is None and concurrency is None:
        current = settings_mod.read(eng)
    else:  # this writes the file again: a damaged one is replaced
        current = settings_mod.read_or_defaults(eng)
    have = list(current.runtimes)
    help_ = worker_help(eng)
    if wanted is None and concurrency is None:
        ui.say(f"runtime(s): {', '.join(have)} (concurrency {current.concurrency})")
        ui.say(f"the installed worker {help_.version or '(version unknown)'} runs {help_.describe()}")
        ui.say(f"box can install: {', '.join(RUNTIMES)}")
        return
    wanted = wanted or have
    problem = worker.runtime_problem(wanted, help_)
    if problem:
        raise BoxError(f"{problem}; nothing was changed")
    key = grok_key(eng, wanted, key)
    new_concurrency = concurrency or current.concurrency
    # As `update` does: the worker writes the volume, and the CLIs staged and swapped in there run
    # beside the owner's logins (box shell, a Codex job's jail): it is stopped first (a CLI new to
    # the volume would be its to write until its view is made again).
    was_running = engine.is_running(container)
    resume = was_running or _resume_pending(eng)
    if was_running:
        _set_resume(eng, True)
        ui.step(f"stopping the box (up to {STOP_TIMEOUT}s for the worker to finish cleanly) while the CLIs change")
        engine.stop_box(container)
    ui.step(f"runtime(s) {', '.join(wanted)}, concurrency {new_concurrency}: updating the CLIs in the volume")
    run_install(eng, "agents", install_env(wanted, new_concurrency, passed=cfg.env), grok_key=key, again="runtime")
    if resume:
        ui.step("starting the worker again on " + " and ".join(wanted))
        _recreate(eng, container, graceful=False)
        _set_resume(eng, False)
    ui.ok(f"runtime(s): {', '.join(wanted)}")


# ------------------------------------------------------------------ remove
def remove(cfg: Config, keep_seat: bool, delete_volume: Optional[bool], keep_image: bool) -> None:
    eng = engine.connect(cfg)
    container = engine.box_container(eng)
    img = engine.image(eng, required=False)
    has_volume = engine.volume_exists(eng)
    if img is not None:  # a box to read the volume with
        volume.prefetch(eng, [engine.IMD_PATH, engine.WORKER_CONFIG_PATH])
    if engine.is_running(container):
        ui.step(f"stopping the box (up to {STOP_TIMEOUT}s)")
        engine.stop_box(container)
    if not keep_seat and has_volume:
        if img is None:
            raise BoxError(
                f"the box image {eng.cfg.image} is missing, and `imd unlink` needs it: run {pull_or_build(eng.cfg)}, "
                "or pass --keep-seat"
            )
        if not volume.has(eng, engine.IMD_PATH):
            ui.say("no worker installed in the volume: no seat to free")
        elif not volume.has(eng, engine.WORKER_CONFIG_PATH):
            ui.say("the worker was never set up here (no config): no seat to free")
        else:
            ui.step("imd unlink (frees this device's seat), in a one-off box with the same walls")
            code, out = engine.run_oneoff(eng, engine.flags(eng, "remove", worker.UNLINK_COMMAND), print_shell_line)
            if code != 0:
                raise BoxError(
                    f"`imd unlink` failed ({diagnose.last_error(out)}): nothing was removed; "
                    "try again, or pass --keep-seat to remove without freeing the seat"
                )
    if container is not None:
        engine.remove_box(container)
        ui.ok(f"removed the container {eng.cfg.container}")
    if has_volume:
        if delete_volume:
            engine.remove_volume(eng)
            ui.ok(f"removed the volume {eng.cfg.volume}")
        else:
            ui.say(
                f"kept the volume {eng.cfg.volume} (logins, worker, pairing); "
                f"`{eng.cfg.command('remove', '--yes')}` deletes it"
            )
    others = other_seats(eng)
    if img is not None and not keep_image and others:
        ui.say(f"kept the image {eng.cfg.image}: the other seats use it too ({others})")
    elif img is not None and not keep_image:
        source = engine.pulled_from(eng, img)
        for tag in [eng.cfg.image] + ([source] if source else []):
            try:
                engine.remove_image_tag(eng, tag)
            except docker.errors.APIError as exc:
                ui.dim(f"(kept the image tag {tag}: {exc.explanation})")
            else:
                ui.ok(f"removed the image {tag}")
