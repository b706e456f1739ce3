"""startup.wait_started, against a scripted box: `box start` says ok only for a worker
that stayed up, and looks at the box's processes (a `ps` by the engine) only twice."""

from __future__ import annotations

import time

from imdbox import startup

SETTLE = 0.4


class ScriptedBox:
    """A box whose walls are up at once and whose worker runs from the start; after
    `ends_after` s its worker has died and run.sh ended the box (restarted: `restarts`)."""

    def __init__(self, ends_after: float = float("inf"), restarts: bool = False):
        self.began, self.ends_after, self.restarts = time.monotonic(), ends_after, restarts
        self.tops = 0
        self.attrs: dict = {}

    def _ended(self) -> bool:
        return time.monotonic() - self.began >= self.ends_after

    def reload(self) -> None:
        ended = self._ended()
        running = not ended or self.restarts
        self.attrs = {
            "State": {"Status": "running" if running else "exited", "Running": running, "Restarting": False},
            "RestartCount": 1 if ended and self.restarts else 0,
        }

    def logs(self, **_) -> bytes:
        return b"imd-box firewall: " + startup.WALLS_UP + b": IPv4 29 rules, IPv6 8 rules\n"

    def top(self, **_) -> dict:
        self.tops += 1
        return {"Processes": [] if self._ended() else [["7", "node /home/imd/.npm-global/bin/imd start"]]}


def test_a_worker_that_stays_up_is_started_after_two_looks():
    box = ScriptedBox()
    began = time.monotonic()
    ok, _ = startup.wait_started(box, timeout=10, settle=SETTLE)
    assert ok and time.monotonic() - began >= SETTLE
    # Polled every 0.3 s through the settle time, it asked for the processes 3 or more times.
    assert box.tops == 2


def test_a_worker_that_dies_while_settling_ends_its_box_and_is_not_started():
    box = ScriptedBox(ends_after=SETTLE / 2)
    ok, logs = startup.wait_started(box, timeout=10, settle=SETTLE)
    assert not ok and startup.WALLS_UP.decode() in logs


def test_a_box_restarted_while_settling_is_not_started():
    box = ScriptedBox(ends_after=SETTLE / 2, restarts=True)
    ok, _ = startup.wait_started(box, timeout=10, settle=SETTLE)
    assert not ok


def test_the_control_a_box_ending_after_the_settle_time_was_started():
    # The twin of the two above: the same box, ending only later, is started.
    box = ScriptedBox(ends_after=SETTLE * 25)
    ok, _ = startup.wait_started(box, timeout=10, settle=SETTLE)
    assert ok
