"""pytest-xdist's `loadgroup`, with one group held back until the machine is quiet, the
longest tests first, and the tests that need no world first while the world is being made.

The tests that restart the Docker engine, or time what the product promises, need the
machine to themselves. They are one xdist group (ALONE). Every other unit goes first; the
ALONE unit waits until every other test is done and every other worker has ended (its
fixtures torn down, its process gone), then runs on the one worker left. So they run in the
same run, and the same world, as all the others: not in a second run that would make the
world again.

The other units go longest first (`durations`: seconds by nodeid, as a run on this machine
took them: DURATIONS, which `--store-durations` writes anew), so that the run ends on short
tests, not on a 30 s one that one worker starts while the others run out of work. A test
with no stored duration counts as UNKNOWN seconds.

Until `ready()` says the world is made (minutes on a fresh machine, where the box image is
built first), a worker is given a unit of tests that need none (`free()`, their nodeids)
before anything else: it would only wait.

Written against pytest-xdist 3.8's LoadScopeScheduling (its workqueue, assigned_work and
_assign_work_unit); tests/test_schedule_unit.py drives the real class.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Optional

from xdist.scheduler import LoadGroupScheduling

ALONE = "alone"  # the group's name, and its scope in the scheduler
DURATIONS = Path(__file__).with_name("durations.json")
STORED_FROM = 1.0  # s: DURATIONS holds the tests that took this long or longer
UNKNOWN = STORED_FROM / 2  # s: a test not in DURATIONS took less, or is new


def plain_id(nodeid: str) -> str:
    """A test's nodeid without the "@group" xdist adds to a grouped test's (after its
    parameters, which may hold an "@" of their own)."""
    head, at, group = nodeid.rpartition("@")
    return head if at and not any(c in group for c in "[]:") else nodeid


def read_durations(path: Path = DURATIONS) -> dict[str, float]:
    """The stored durations; none (every unit alike, xdist's order) when the file is missing
    or unreadable: the order is only a matter of speed."""
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


class AloneLast(LoadGroupScheduling):
    def __init__(
        self,
        config,
        log=None,
        *,
        ready: Callable[[], bool] = lambda: True,
        free: Callable[[], frozenset] = frozenset,
        durations: Optional[Mapping[str, float]] = None,
    ) -> None:
        super().__init__(config, log)
        self._ready, self._free, self._durations = ready, free, durations or {}
        self._ordered = False

    def _split_scope(self, nodeid: str) -> str:
        # A test in a module of another group is in both: xdist names it `@alone_check`
        # (the group names, sorted, joined by "_"). It is ALONE's all the same.
        # A test of no group has its own nodeid as its scope: never ALONE's.
        scope = super()._split_scope(nodeid)
        return ALONE if scope != nodeid and ALONE in scope.split("_") else scope

    def _seconds(self, scope: str) -> float:
        return sum(self._durations.get(plain_id(nodeid), UNKNOWN) for nodeid in self.workqueue[scope])

    def _assign_work_unit(self, node) -> None:
        if not self._ordered:  # the first call: the work queue is whole
            self._ordered = True
            longest_first = sorted(self.workqueue, key=self._seconds, reverse=True)  # stable: ties as before
            for scope in longest_first:
                self.workqueue.move_to_end(scope)
        if ALONE in self.workqueue:
            self.workqueue.move_to_end(ALONE)
        if not self._ready():
            free = self._free()
            unit = next(
                (scope for scope, tests in self.workqueue.items() if scope != ALONE and set(tests) <= free), None
            )
            if unit is not None:
                self.workqueue.move_to_end(unit, last=False)
        if next(iter(self.workqueue)) != ALONE:
            return super()._assign_work_unit(node)
        # Only the ALONE unit is left. A worker ends when another, not ending, still has tests
        # to run: that one decides later. Else this one stays for ALONE, and every other ends.
        if any(self._pending_of(self.assigned_work[n]) for n in self._others(node)):
            node.shutdown()
            return None
        for other in self._others(node):
            other.shutdown()
        self._run_alone()
        return None

    def _others(self, node) -> list:
        return [n for n in self.nodes if n is not node and not n.shutting_down]

    def remove_node(self, node):
        crashed = super().remove_node(node)
        self._run_alone()  # the last of the others may just have ended
        return crashed

    def _run_alone(self) -> None:
        """The ALONE unit, on the one worker left, once the others have ended. Its own last
        test may still be pending: a worker runs the last test it was sent only once it is sent
        more (or told to end), so that it knows what comes next; it runs it, then ALONE."""
        if list(self.workqueue) != [ALONE] or len(self.nodes) != 1:
            return
        (node,) = self.nodes
        if not node.shutting_down:
            super()._assign_work_unit(node)


class StoreDurations:
    """`--store-durations`: a plugin of the run's controller (or of a run without workers)
    that writes DURATIONS anew from this run's tests: the seconds each took (setup, call and
    teardown), for those of STORED_FROM seconds or more. Store a whole run's, on a machine
    like CI's: the order is only as good as they are."""

    def __init__(self, path: Path = DURATIONS) -> None:
        self.path, self.spent = path, {}

    def pytest_runtest_logreport(self, report) -> None:  # every worker's reports too
        test = plain_id(report.nodeid)
        self.spent[test] = self.spent.get(test, 0.0) + report.duration

    def pytest_sessionfinish(self) -> None:
        kept = {test: round(s, 1) for test, s in sorted(self.spent.items()) if s >= STORED_FROM}
        self.path.write_text(json.dumps(kept, indent=1) + "\n")
