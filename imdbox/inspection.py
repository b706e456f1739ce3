"""What box shows about a seat: `box status`, `box seats` and `box logs`."""

from __future__ import annotations

import json
import os
import re
from typing import Optional

from . import broker, diagnose, engine, install, refused, terminal, ui, volume, worker
from . import settings as settings_mod
from .config import Config
from .engine import Engine
from .errors import BoxError
from .install import print_box_line
from .service import NO_NAME, pull_or_build, setup_then_start
from .throwaway import interruptible

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


def logs(cfg: Config, since: Optional[str], follow: bool, tail: Optional[int], raw: bool = False) -> None:
    since_value = parse_since(since) if since else None
    eng = engine.connect(cfg)
    container = engine.box_container(eng)
    if container is None:
        raise BoxError(f"there is no box yet: run {setup_then_start(eng.cfg)}")
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
def status(cfg: Config, json_output: bool = False) -> int:
    eng = engine.connect(cfg)
    container = engine.box_container(eng)
    img = engine.image(eng, required=False)
    if img is not None and not json_output:  # with what the doctor's part reads, in one box
        volume.prefetch(eng, [engine.IMD_PATH, engine.WORKER_CONFIG_PATH, settings_mod.PATH, install.COMPILERS_PATH])
    if container is None:
        state = _no_container(eng) if img is not None else "not created"
    else:
        container.reload()
        state = _box_state(container)
    restarts = container.attrs.get("RestartCount", 0) if container is not None else 0
    if json_output:
        counts = refused.read(container) if engine.is_up(container) else None
        ui.write(json.dumps({"box": eng.cfg.container, "state": state, "restarts": restarts, "refused": counts}) + "\n")
        return 0
    ui.say(f"box:       {eng.cfg.container}: {state}", style="bold")
    ui.say(f"engine:    {eng.endpoint.describe()}")
    if container is not None:
        st = container.attrs["State"]
        ui.say(f"since:     {_when(st.get('StartedAt') if st.get('Running') else st.get('FinishedAt'))}")
        # Docker forgets the exit code of a run it restarted; FinishedAt is that exit.
        last = f", the last after an exit at {_when(st.get('FinishedAt'))}" if restarts else ""
        ui.say(f"restarts:  {restarts}{last}")
        if st.get("Running"):
            ui.say(f"health:    {engine.health(eng, container)}")
            if engine.is_up(container):  # a box Docker is restarting takes no exec
                ui.say(f"refused:   {_refused_line(container)}")
                said, wrong = broker.line(container)
                ui.say(f"login:     {said}", style="red" if wrong else None)
    if img is None:
        ui.say(f"image:     {eng.cfg.image}: missing (run {pull_or_build(eng.cfg)})")
    else:
        source = engine.pulled_from(eng, img)
        origin = f"pulled from {source}" if source else "built from a checkout"
        ui.say(
            f"image:     {eng.cfg.image} {img.short_id.split(':')[-1]}, {origin}, made {_when(img.attrs.get('Created'))}"
        )
    if container is not None and (container.attrs["State"].get("Restarting") or restarts > 0):
        ui.say(f"last error: {diagnose.failure(container.logs(tail=300).decode(errors='replace'))}", style="red")
    if img is None:
        raise BoxError(
            f"the box image {eng.cfg.image} is missing, and `imd doctor` needs it: run {pull_or_build(eng.cfg)}"
        )
    volume.require_volume(eng)
    current = settings_mod.read(eng)
    ui.say(
        f"runtime:   {', '.join(current.runtimes)} (concurrency {current.concurrency})"
        + ("" if current.saved else f"  [not saved yet: run `{eng.cfg.command('setup')}`]")
    )
    kept = install.kept_compilers(volume.read_file(eng, install.COMPILERS_PATH))
    listed = "solc " + ", ".join(kept) + ", for every job" if kept else "none kept"
    ui.say(f"compilers: {listed}" + ("" if kept else f" (`{eng.cfg.command('update')}` fetches them)"))
    doctor = [*worker.IMD, "doctor"] + _doctor_runtime(list(current.runtimes))
    if engine.is_up(container):
        ui.step("imd doctor (in the running box)")
        code, out = engine.exec_as_imd(container, doctor)
        for line in out.splitlines():
            ui.say(line)
        if code == 127 or "executable file not found" in out:
            raise BoxError(f"the worker is not installed in the volume: run `{eng.cfg.command('setup')}`")
        return code
    volume.require_setup(eng)
    ui.step("imd doctor (in a one-off box with the same walls)")
    flags = engine.flags(eng, "status", doctor)
    code, out = engine.run_oneoff(eng, flags, on_line=print_box_line)
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


def _no_container(eng: Engine) -> str:
    """What it means that there is no container, plainly, and what to do."""
    volume.prefetch(eng, [engine.IMD_PATH, engine.WORKER_CONFIG_PATH])
    if not volume.has(eng, engine.IMD_PATH):  # no volume: nothing in it
        return f"not created (run {setup_then_start(eng.cfg)})"
    if volume.has(eng, engine.WORKER_CONFIG_PATH):
        return (
            "GONE: there is no container (removed outside box, e.g. `docker rm -f` or Docker Desktop, "
            f"or never started); the volume is kept: `{eng.cfg.command('start')}` creates it again"
        )
    return f"not created (run `{eng.cfg.command('start')}`)"


def _doctor_runtime(runtimes: list[str]) -> list[str]:
    """Doctor checks the runtime the worker runs on (a worker that takes one
    runtime); without --runtime it would pick the first one installed."""
    return ["--runtime", runtimes[0]] if len(runtimes) == 1 else []


def _when(stamp: Optional[str]) -> str:
    if not stamp or stamp.startswith("0001-"):
        return "-"
    return stamp.split(".")[0].replace("T", " ") + " UTC"


# ------------------------------------------------------------------ seats
def seats(cfg: Config) -> None:
    """Every seat on this engine as a table: its box, runtime, restarts and pairing."""
    eng = engine.connect(cfg)
    found = engine.seats(eng)
    if not found:
        ui.say(f"no seats yet: `{eng.cfg.command('setup')}` makes the first (`box --seat NAME setup` one with a name)")
        return
    rows = [_seat_row(eng.for_seat(seat)) for seat in found]  # each seat's own container and volume
    ui.table(["SEAT", "BOX", "RUNTIME", "RESTARTS", "PAIRED"], rows)


def _seat_row(eng: Engine) -> list[str]:
    container = engine.box_container(eng)
    state = "not created" if container is None else _box_state(container)
    try:
        current = settings_mod.read(eng)
        runtime = f"{', '.join(current.runtimes)} ×{current.concurrency}" + ("" if current.saved else " (not set up)")
    except BoxError:
        runtime = "settings damaged"
    restarts = str(container.attrs.get("RestartCount", 0)) if container is not None else "-"
    paired = "-"
    if engine.is_up(container):
        paired = worker.pairing(engine.exec_as_imd(container, worker.STATUS_COMMAND)[1])
    return [eng.cfg.seat or NO_NAME, state, runtime, restarts, paired]
