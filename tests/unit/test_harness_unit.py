"""The harness's engine watch (tests/harness/machine.py): a stuck engine ends the run in
minutes, with its reason; an engine that answers, or is only restarting, never does.
Also: the world handed to the workers, and how its teardown groups the listeners
(topology.apart). No Docker: the same against the real engine is tests/world/test_harness.py."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import types

import pytest
import requests.exceptions

from imdbox import names
from tests.harness import boxes
from tests.harness.machine import EngineWatch


def _watch(answers, misses=3):
    """A watch asking a scripted engine as fast as it can; returns the reasons it gave."""
    script = iter(answers)
    done = threading.Event()
    hung: list[str] = []

    def ask():
        try:
            outcome = next(script)
        except StopIteration:
            done.set()
            return None
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def on_hang(reason):
        hung.append(reason)
        done.set()

    watch = EngineWatch(ask, on_hang, every=0.001, misses=misses, timeout=60).start()
    assert done.wait(10), "the watch stopped asking"
    watch.stop()
    return hung


TIMEOUT = requests.exceptions.ReadTimeout("read timed out")


def test_an_engine_that_stops_answering_is_called_stuck_once():
    hung = _watch([{}, TIMEOUT, TIMEOUT, TIMEOUT, TIMEOUT, TIMEOUT])
    assert len(hung) == 1
    assert "has not answered a network lookup 3 times in a row (60 s each)" in hung[0]
    assert "restart dockerd" in hung[0]


def test_an_engine_that_answers_between_slow_lookups_or_restarts_is_not():
    restarting = requests.exceptions.ConnectionError("connection refused")
    assert _watch([TIMEOUT, TIMEOUT, {}, TIMEOUT, TIMEOUT, restarting, TIMEOUT, TIMEOUT, {}] * 3) == []


def test_the_run_is_woken_from_a_blocked_read_when_the_engine_is_stuck():
    """conftest's on_hang: the main thread, blocked in a socket read as a test in a docker call
    is, gets KeyboardInterrupt at once (pytest then ends the run) and the world is marked;
    also where SIGINT is ignored, as in a background job or under an xdist worker."""
    program = """
import socket, threading, time
from tests.conftest import _World
world = _World()
a, b = socket.socketpair()
threading.Timer(0.2, world._engine_hung, args=("stuck",)).start()
started = time.monotonic()
try:
    a.recv(1)  # never answered
except KeyboardInterrupt:
    print(f"woken after {time.monotonic() - started:.1f} s; hung={world.hung}")
"""
    r = subprocess.run(
        [sys.executable, "-c", program], cwd=names.REPO_ROOT, capture_output=True, text=True, timeout=30,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    assert "hung=stuck" in r.stdout, r.stdout + r.stderr
    assert float(r.stdout.split("woken after ")[1].split()[0]) < 5


# ---------------------------------------------------------------- the world, handed over


@pytest.fixture
def stub_world():
    """Worlds whose steps are stubs (a _World registers the engine watch's signal handler:
    this process's own world gets its handler back)."""
    from tests import conftest

    handler = signal.getsignal(conftest.HUNG_SIGNAL)

    def make(given_at=None, set_up_fails=False, release=None):
        world = conftest._World(given_at)
        world.client = lambda: None
        world.feed = lambda: "feed"
        world.image = lambda: "imdt-image"

        def set_up():
            if release is not None:
                release.wait(30)
            if set_up_fails:
                raise conftest._Unusable("the run's one `box setup` failed: no feed", True)
            return type("Env", (), {"image": "i", "container": "c", "volume": "v"})()

        if given_at is None:  # a controller's; a worker's asks the folder
            world.set_up = set_up
        return world

    yield make
    signal.signal(conftest.HUNG_SIGNAL, handler)


def test_a_worker_has_the_world_before_the_set_up_is_made(tmp_path, stub_world):
    """The point of two parts: the tests that need no `box setup` start while it is made."""
    release = threading.Event()
    maker = stub_world(release=release).hand_over(tmp_path)
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "world.json").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stub_world(str(tmp_path)).given == {"image": "imdt-image"}
        assert not (tmp_path / "set_up.json").exists()
    finally:
        release.set()
        maker.join(30)
    assert stub_world(str(tmp_path)).set_up().volume == "v"


def test_a_set_up_that_failed_fails_only_what_starts_from_it(tmp_path, stub_world):
    from tests import conftest

    stub_world(set_up_fails=True).hand_over(tmp_path).join(30)
    worker = stub_world(str(tmp_path))
    assert worker.given == {"image": "imdt-image"}
    with pytest.raises(conftest._Unusable, match="one `box setup` failed: no feed"):
        worker.set_up()


def test_a_controller_that_dies_still_hands_over_every_part(tmp_path, stub_world):
    controller = stub_world()

    def dies():
        raise KeyboardInterrupt("cut short")

    controller.feed = dies
    controller.hand_over(tmp_path).join(30)
    assert stub_world(str(tmp_path)).given["unusable"][0] == "could not make the test world: cut short"
    assert (tmp_path / "set_up.json").exists()  # no worker waits for it


# ---------------------------------------------------------------- the world's teardown groups


def test_containers_that_share_a_network_are_removed_one_by_one():
    """topology.apart: the world's listeners in groups that share no network (the mac
    listener is on two networks, so it joins the internet's group); unattached networks
    give no group."""
    from types import SimpleNamespace as Ns

    from tests.harness.topology import apart

    mac, internet, dns, router = (Ns(id=n) for n in ("mac", "internet", "dns", "router"))
    networks = [
        Ns(id="net-mac", containers=[mac]),
        Ns(id="net-lan", containers=[router]),
        Ns(id="net-internet", containers=[internet, dns, mac]),
        Ns(id="net-empty", containers=[]),
    ]
    groups = sorted(sorted(c.id for c in g) for g in apart(networks))
    assert groups == [["dns", "internet", "mac"], ["router"]]


class _LosesOutputOnce:
    """A container whose first exec comes back with its exit code but none of its output,
    as the engine sometimes returns a process that ended at once (moby/moby#27289)."""

    def __init__(self, output: bytes) -> None:
        self.output, self.calls = output, 0

    def exec_run(self, cmd, user, demux, environment=None):
        self.calls += 1
        return types.SimpleNamespace(exit_code=7, output=b"" if self.calls == 1 else self.output)


def test_a_probe_whose_output_the_engine_lost_is_asked_again():
    refused = b"*   Trying 198.51.100.129:80...\n* connect to 198.51.100.129 port 80 failed: No route to host\n"
    box = _LosesOutputOnce(refused)
    assert boxes.http_probe(box, "http://198.51.100.129/") == boxes.Probe("refused", "No route to host")
    assert box.calls == 2


def test_a_read_whose_output_the_engine_lost_is_asked_again_and_a_plain_run_is_not():
    answer = b"198.51.100.10   imdt-listener-internet\n"
    assert boxes.run(_LosesOutputOnce(answer), ["getent", "hosts", "imdt-listener-internet"])[1] == ""
    box = _LosesOutputOnce(answer)
    assert boxes.read(box, ["getent", "hosts", "imdt-listener-internet"])[1] == answer.decode()
    assert box.calls == 2


def _raises(exc: Exception):
    def callback():
        raise exc

    return callback


def test_an_engine_gone_at_the_end_fails_the_run_in_one_line_and_a_harness_bug_still_raises(stub_world):
    world = stub_world()
    world._stack.callback(_raises(requests.exceptions.ConnectionError("socket gone")))
    world.end()  # no traceback: the summary's FAILED line, and the run's exit status
    assert world.hung == "the Docker engine went away before the run could clean up: socket gone"
    twin = stub_world()
    twin._stack.callback(_raises(TypeError("a bug of the harness")))
    with pytest.raises(TypeError):
        twin.end()
