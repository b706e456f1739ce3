"""tests/harness/schedule.py: the `alone` group runs last, on the one worker left once every
other has ended (xdist's own loadgroup, its breaking twin, hands it out with the others); the
longest units go first by their stored durations (without them, the largest group does, as
xdist orders them); until the world is made, the tests that need none go first."""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadGroupScheduling

from imdbox import names
from tests.harness.schedule import AloneLast, StoreDurations, plain_id, read_durations

ALONE_TESTS = ["tests/test_check.py::test_timed@alone_check", "tests/test_faults.py::test_restart@alone"]
OTHERS = [
    "tests/test_a.py::test_1",
    "tests/test_b.py::test_2",
    "tests/test_c.py::test_3@check",
    "tests/test_c.py::test_4@check",
    "tests/test_seats.py::test_one_goes_alone",  # "alone" in a name, in no group: not held back
]


class _Config:
    def __init__(self, workers: int):
        self.option = type("Option", (), {"loadscopereorder": True})()
        self._values = {"tx": [f"{workers}*popen"]}

    def getvalue(self, name):
        return self._values[name]


class _Worker:
    def __init__(self, name: str):
        self.name, self.shutting_down, self.sent = name, False, []
        self.gateway = type("Gateway", (), {"id": name})()

    def shutdown(self):
        self.shutting_down = True

    def send_runtest_some(self, indices):
        self.sent.extend(indices)

    def __repr__(self):
        return self.name


def _start(scheduling, workers: int, collection, **kw):
    sched = scheduling(_Config(workers), **kw)
    nodes = [_Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    return sched, nodes


def _run_all(sched, nodes, collection) -> list[tuple[str, str, list[str]]]:
    """The workers run what they were sent, one test at a time, as xdist's do: the last test
    sent runs only once more is sent or the worker is told to shut down (it must know what
    comes next); a worker told to, once it has run all it was sent, ends (xdist then removes
    it). Returns (worker, test, the other workers not yet ended) for each test run, until
    nothing more happens."""
    ran = []
    while True:
        live = [n for n in nodes if n in sched.nodes]
        busy = [n for n in live if len(n.sent) > 1 or (n.sent and n.shutting_down)]
        if busy:
            node = busy[0]
            index = node.sent.pop(0)
            ran.append((node.name, collection[index], [n.name for n in live if n is not node]))
            sched.mark_test_complete(node, index)
        elif any(n.shutting_down and not n.sent for n in live):
            sched.remove_node(next(n for n in live if n.shutting_down and not n.sent))
        else:
            return ran


def test_the_alone_group_runs_last_on_the_one_worker_left():
    collection = OTHERS[:2] + ALONE_TESTS + OTHERS[2:]
    sched, nodes = _start(AloneLast, 3, collection)
    ran = _run_all(sched, nodes, collection)
    assert sorted(test for _, test, _ in ran) == sorted(collection)  # everything ran, once
    alone = [(worker, others) for worker, test, others in ran if test in ALONE_TESTS]
    assert [test for _, test, _ in ran][-2:] == ALONE_TESTS  # last, in their order
    assert all(others == [] for _, others in alone), alone  # every other worker had ended
    assert len({worker for worker, _ in alone}) == 1
    assert sched.tests_finished


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_only_alone_tests_selected_still_run(workers):
    sched, nodes = _start(AloneLast, workers, ALONE_TESTS)
    ran = _run_all(sched, nodes, ALONE_TESTS)
    assert [test for _, test, _ in ran] == ALONE_TESTS
    assert sched.tests_finished


def test_breaking_twin_plain_loadgroup_runs_them_beside_others():
    collection = OTHERS[:2] + ALONE_TESTS + OTHERS[2:]
    sched, nodes = _start(LoadGroupScheduling, 3, collection)
    ran = _run_all(sched, nodes, collection)
    beside = [others for _, test, others in ran if test in ALONE_TESTS]
    assert any(beside), ran


def test_while_the_world_is_made_the_tests_that_need_none_go_first():
    free = frozenset(OTHERS[:2])
    world = {"made": False}
    collection = ALONE_TESTS + OTHERS
    sched, nodes = _start(AloneLast, 2, collection, ready=lambda: world["made"], free=lambda: free)
    first = {collection[node.sent[0]] for node in nodes}  # what each worker runs first
    assert first == free, first  # xdist would give the larger group first
    world["made"] = True
    ran = _run_all(sched, nodes, collection)
    assert sorted(test for _, test, _ in ran) == sorted(collection)
    assert [test for _, test, _ in ran][-2:] == ALONE_TESTS


def test_breaking_twin_once_the_world_is_made_the_group_goes_first():
    free = frozenset(OTHERS[:2])
    collection = ALONE_TESTS + OTHERS
    sched, nodes = _start(AloneLast, 2, collection, ready=lambda: True, free=lambda: free)
    first = {collection[node.sent[0]] for node in nodes}
    assert OTHERS[2] in first, first


def test_the_longest_units_go_first_by_their_durations():
    # test_b alone outlasts the check group (8 s); test_a and the seats test have no duration.
    durations = {"tests/test_b.py::test_2": 30.0, "tests/test_c.py::test_3": 4.0, "tests/test_c.py::test_4": 4.0}
    collection = ALONE_TESTS + OTHERS
    sched, nodes = _start(AloneLast, 1, collection, durations=durations)
    ran = [test for _, test, _ in _run_all(sched, nodes, collection)]
    assert ran[:3] == [OTHERS[1], OTHERS[2], OTHERS[3]], ran  # 30 s, then the group's 8 s
    assert ran[-2:] == ALONE_TESTS  # still last, however long


def test_a_test_is_known_by_its_id_without_the_group():
    assert plain_id("tests/test_c.py::test_3@check") == "tests/test_c.py::test_3"
    assert plain_id("tests/test_c.py::test_3[a@b]@check") == "tests/test_c.py::test_3[a@b]"
    assert plain_id("tests/test_c.py::test_3[a@b]") == "tests/test_c.py::test_3[a@b]"
    assert plain_id("tests/test_c.py::test_3") == "tests/test_c.py::test_3"


def test_stored_durations_read_back_and_a_bad_file_reads_as_none(tmp_path):
    path = tmp_path / "durations.json"
    store = StoreDurations(path)
    for nodeid, phase_seconds in [
        ("tests/test_c.py::test_3@check", (0.5, 2.0, 0.25)),  # setup, call, teardown: 2.75 s
        ("tests/test_a.py::test_1", (0.1, 0.2, 0.1)),  # under a second: not kept
    ]:
        for seconds in phase_seconds:
            store.pytest_runtest_logreport(type("Report", (), {"nodeid": nodeid, "duration": seconds})())
    store.pytest_sessionfinish()
    assert read_durations(path) == {"tests/test_c.py::test_3": 2.8}
    path.write_text("[1, 2]")
    assert read_durations(path) == {}
    assert read_durations(tmp_path / "missing.json") == {}


def test_the_stored_durations_name_tests_that_exist():
    """A renamed or removed test's entry would only order nothing: `--store-durations` anew."""
    stored = read_durations()
    assert len(stored) > 50, "tests/harness/durations.json is missing or nearly empty"
    for nodeid in stored:
        path, _, name = nodeid.partition("::")
        assert f"def {name.split('[')[0]}(" in (names.REPO_ROOT / path).read_text(), nodeid
