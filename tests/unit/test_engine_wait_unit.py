"""startup.wait_started, against a scripted box: `box start` says ok only for a worker
that stayed up once its start-up probes ended."""

from __future__ import annotations

import time

from imdbox import startup

SETTLE = 0.4


class ScriptedBox:
    """A box whose walls are up at once and whose worker runs from the start; for its first
    `probes_for` s a probe of its runs beside it (`claude --version` through the door); after
    `ends_after` s its worker has died and run.sh ended the box (restarted: `restarts`)."""

    def __init__(
        self,
        ends_after: float = float("inf"),
        restarts: bool = False,
        probes_for: float = 0.0,
        supervisor_alone_for: float = 0.0,
    ):
        self.began, self.ends_after, self.restarts = time.monotonic(), ends_after, restarts
        self.probes_for, self.supervisor_alone_for = probes_for, supervisor_alone_for
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
        if self._ended():
            return {"Processes": []}
        # As the engine's ps lists them: run.sh, the worker's supervisor and the worker it runs.
        procs = [
            ["5", "1", "/bin/bash /usr/local/lib/imd-box/worker/run.sh"],
            ["7", "5", "node /home/imd/.npm-global/bin/imd start --auto-update"],
        ]
        if time.monotonic() - self.began >= self.supervisor_alone_for:
            procs.append(["8", "7", "/usr/local/bin/node /home/imd/.npm-global/bin/imd start --auto-update"])
        if time.monotonic() - self.began < self.probes_for:
            procs.append(["9", "8", "/usr/local/lib/imd-box/worker/door/door stand-in:claude"])
        return {"Processes": procs}


def test_a_worker_that_stays_up_is_started_after_the_settle_time():
    box = ScriptedBox()
    began = time.monotonic()
    ok, _ = startup.wait_started(box, timeout=10, settle=SETTLE)
    # Started at the first look a settle time after the first: looks each 0.3 s, and a busy
    # machine's sleeps may run long (the side-by-side run shares its cores with boxes).
    assert ok and SETTLE <= time.monotonic() - began < SETTLE + 0.3 + 0.7
    assert box.tops in (2, 3)  # a `ps` by the engine each 0.3 s: at 0 and 0.3 (late: 0.4+), or 0.6 s


def test_a_worker_whose_supervisor_starts_it_later_is_timed_from_then():
    # The supervisor alone at the first look, the worker it runs beside it from the second.
    box = ScriptedBox(supervisor_alone_for=0.2)
    began = time.monotonic()
    ok, _ = startup.wait_started(box, timeout=10, settle=SETTLE)
    assert ok and time.monotonic() - began >= 0.3 + SETTLE


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


def test_a_worker_that_fails_after_a_slow_probe_is_not_started():
    # A busy machine: its runtime probe outlasts the settle time, and it fails moments after.
    box = ScriptedBox(probes_for=SETTLE * 3, ends_after=SETTLE * 3 + 0.05)
    ok, _ = startup.wait_started(box, timeout=10, settle=SETTLE)
    assert not ok


def test_twin_counting_the_settle_time_through_the_probe_says_it_started():
    # The rule of before: a busy worker counts as settled, and the same box is started.
    box = ScriptedBox(probes_for=SETTLE * 3, ends_after=SETTLE * 3 + 0.05)
    ok, _ = startup.wait_started(box, timeout=10, settle=SETTLE, busy_cap=0.0)
    assert ok


def test_a_worker_that_keeps_a_process_beside_it_is_started_after_the_cap():
    box = ScriptedBox(probes_for=float("inf"))
    began = time.monotonic()
    ok, _ = startup.wait_started(box, timeout=10, settle=SETTLE, busy_cap=SETTLE * 2)
    assert ok and time.monotonic() - began >= SETTLE * 2


def test_a_worker_that_probes_then_stays_up_is_started_a_settle_time_after_its_probe():
    box = ScriptedBox(probes_for=SETTLE)
    began = time.monotonic()
    ok, _ = startup.wait_started(box, timeout=10, settle=SETTLE)
    assert ok and time.monotonic() - began >= SETTLE * 2
