"""Waiting for a box that was started: its walls up and verified, then its worker."""

from __future__ import annotations

import time
from typing import Optional

from . import engine, protocol

WALLS_UP = protocol.WALLS_UP.encode()

START_TIMEOUT = 90.0  # seconds `box start` waits for the walls and the worker


def wait_started(
    container, timeout: float = START_TIMEOUT, settle: float = 2.0, joining: bool = False
) -> tuple[bool, str]:
    """Wait for the walls line and the worker process, then for the worker to stay up
    `settle` s; (ok, logs). Fails fast on an exit or a restart.
    `joining`: the box is another command's, which may not have started it yet."""
    deadline = time.monotonic() + timeout
    seen = False
    while time.monotonic() < deadline:
        container.reload()
        state = container.attrs["State"]
        if joining and state.get("Status") == "created":
            time.sleep(0.3)
            continue
        if state.get("Restarting") or container.attrs.get("RestartCount", 0) > 0 or not state.get("Running"):
            return False, container.logs().decode(errors="replace")
        if WALLS_UP in container.logs(stderr=True, stdout=False) and engine.worker_running(container):
            if seen:  # still up, and the box neither ended nor restarted meanwhile
                return True, container.logs().decode(errors="replace")
            # Looked at once more after `settle`, not polled through it: a worker that dies
            # in its first moments ends its box (run.sh exits with it), which the restart
            # count then shows. Each look asks the engine for the box's processes (`ps`).
            seen = True
            time.sleep(min(settle, max(0.0, deadline - time.monotonic())))
            continue
        seen = False
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
