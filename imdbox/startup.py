"""Waiting for a box that was started: its walls up and verified, then its worker."""

from __future__ import annotations

import time
from typing import Optional

from . import engine, protocol

WALLS_UP = protocol.WALLS_UP.encode()

START_TIMEOUT = 90.0  # seconds `box start` waits for the walls and the worker
# Seconds a worker may keep a process of its own running and still be started: a start-up
# probe takes under a second on an idle machine; a job may come at once and run for minutes.
BUSY_CAP = 20.0


def wait_started(
    container,
    timeout: float = START_TIMEOUT,
    settle: float = 2.0,
    busy_cap: float = BUSY_CAP,
    joining: bool = False,
) -> tuple[bool, str]:
    """Wait for the walls line and the worker, then for the worker to have finished its
    start: seen for `settle` s as the same processes with none of its own beside them, or
    seen busy for `busy_cap` s. (ok, logs). Fails fast on an exit or a restart.
    `joining`: the box is another command's, which may not have started it yet."""
    deadline = time.monotonic() + timeout
    quiet: Optional[tuple[frozenset, float]] = None  # the worker's pids, seen quiet since
    first: Optional[tuple[frozenset, float]] = None  # the worker's pids, seen since
    while time.monotonic() < deadline:
        container.reload()
        state = container.attrs["State"]
        if joining and state.get("Status") == "created":
            time.sleep(0.3)
            continue
        if state.get("Restarting") or container.attrs.get("RestartCount", 0) > 0 or not state.get("Running"):
            return False, container.logs().decode(errors="replace")
        seen = engine.worker(container) if WALLS_UP in container.logs(stderr=True, stdout=False) else None
        now = time.monotonic()
        if seen is None:
            quiet = first = None
        else:
            if first is None or first[0] != seen.pids:
                first = (seen.pids, now)
            # Quiet: no start-up probe of its own runs, and no process of it came or went since
            # the last look (its supervisor starts the worker it runs a moment after its own
            # start). The clock starts then, however long a busy machine makes the probes: a
            # worker that fails after them fails in moments, and ends its box (run.sh exits
            # with it), which the restart count shows. One that keeps a process beside it (a
            # job taken at once) is up all the same after `busy_cap`.
            if seen.busy or quiet is None or quiet[0] != seen.pids:
                quiet = None if seen.busy else (seen.pids, now)
            elif now - quiet[1] >= settle:
                return True, container.logs().decode(errors="replace")
            if seen.busy and now - first[1] >= busy_cap:
                return True, container.logs().decode(errors="replace")
        time.sleep(0.3)
    return False, container.logs().decode(errors="replace") + f"\n(timed out after {timeout:.0f}s)"


def age(stamp: Optional[str]) -> float:
    """Seconds since a Docker timestamp (RFC 3339, nanoseconds); a large number if unknown."""
    import datetime as dt

    if not stamp or stamp.startswith("0001-"):
        return float("inf")
    whole = stamp.split(".")[0].rstrip("Z")
    then = dt.datetime.fromisoformat(whole).replace(tzinfo=dt.timezone.utc)
    return (dt.datetime.now(dt.timezone.utc) - then).total_seconds()


def being_started(container) -> bool:
    """A box made moments ago whose walls or worker are not up yet, never restarted:
    another `box start` is waiting for it, and removing it would break that one."""
    state = container.attrs.get("State") or {}
    if container.attrs.get("RestartCount", 0) > 0 or state.get("Restarting"):
        return False
    if state.get("Status") not in ("created", "running"):
        return False
    if age(container.attrs.get("Created")) > START_TIMEOUT + 10:
        return False
    return not (state.get("Running") and engine.worker_running(container))
