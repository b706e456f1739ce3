"""The split of tests/conftest.py: a parallel run's workers leave out the tests that need the
machine alone, a run with --alone runs only those, tests/unit's come after tests/world's, and
the engine's restart goes last."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import conftest


class _Item:
    """What the conftest's split reads of a pytest item: its nodeid, file and marks."""

    def __init__(self, nodeid: str, *marks):
        self.nodeid, self.marks = nodeid, [m.mark for m in marks]
        self.path = Path(conftest.__file__).parent.parent / nodeid.split("::")[0]

    def get_closest_marker(self, name):
        return next((m for m in self.marks if m.name == name), None)

    def __repr__(self):
        return self.nodeid


class _Config:
    def __init__(self, worker: bool, alone: bool = False):
        if worker:
            self.workerinput, self.workeroutput = {}, {}
        self.alone, self.deselected = alone, []
        self.hook = type("Hook", (), {"pytest_deselected": lambda _, items: self.deselected.extend(items)})()

    def getoption(self, name):
        assert name == "alone", name
        return self.alone


OTHERS = [
    _Item("tests/world/test_a.py::test_1"),
    _Item("tests/world/test_c.py::test_2", pytest.mark.xdist_group("check")),
]
TIMED = _Item("tests/world/test_check.py::test_timed", pytest.mark.xdist_group("check"), pytest.mark.alone)
RESTART = _Item("tests/world/test_faults.py::test_restart", pytest.mark.engine_restart)
UNIT = [_Item("tests/unit/test_u.py::test_1"), _Item("tests/unit/test_u.py::test_2")]


def _split(config, items):
    items = list(items)
    conftest.pytest_collection_modifyitems(config, items)
    return items


def test_a_parallel_runs_workers_leave_out_the_tests_that_need_the_machine_alone():
    config = _Config(worker=True)
    assert _split(config, [RESTART, *OTHERS, TIMED]) == OTHERS
    assert config.deselected == [RESTART, TIMED]
    assert config.workeroutput[conftest.WORKER_LEFT_OUT] == 2  # the controller's summary says so


def test_with_alone_only_they_run_and_the_engines_restart_last():
    config = _Config(worker=False, alone=True)
    assert _split(config, [RESTART, *OTHERS, TIMED]) == [TIMED, RESTART]
    assert config.deselected == OTHERS


def test_breaking_twin_a_run_without_workers_runs_everything_the_engines_restart_last():
    config = _Config(worker=False)
    assert _split(config, [RESTART, *OTHERS, TIMED]) == [*OTHERS, TIMED, RESTART]
    assert config.deselected == []


def test_a_workers_unit_tests_come_after_the_worlds_in_the_order_collected():
    config = _Config(worker=True)
    assert _split(config, [UNIT[0], OTHERS[0], UNIT[1], OTHERS[1]]) == [*OTHERS, *UNIT]


def test_without_workers_too_the_engines_restart_comes_after_the_unit_tests():
    config = _Config(worker=False)
    assert _split(config, [RESTART, UNIT[0], *OTHERS]) == [*OTHERS, UNIT[0], RESTART]
