"""Shared fixtures: the engine, the box image, the test topology, test volumes.

Under CI=true a missing Docker engine fails the run; elsewhere the tests that
need it skip with the reason. Those are tests/world's; tests/unit asks for none of these
fixtures (tests/unit/test_tests_unit.py), so it runs where there is no engine.

A run's engine, image, topology and feed are its world (`_World`): made on first use,
ended with the run. With `-n N` (pytest-xdist) the controller makes the whole world while
its workers start and collect, and each worker attaches to it when a test first needs it:
the workers' tests run side by side in one world, and the one leak sweep comes after all
of them.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import pytest
import xdist

from tests.harness import topology as topo_mod
from tests.harness.image import build_test_image
from tests.harness.machine import Machine, free_worker_slots

IN_CI = os.environ.get("CI", "").lower() == "true"
ENGINE_RESTART = "engine_restart"
ALONE = "alone"
NOT_SIDE_BY_SIDE = (ENGINE_RESTART, ALONE)  # what a parallel run leaves out, for a run with --alone
MARKS = " or ".join(NOT_SIDE_BY_SIDE)
WORLD = pytest.StashKey["_World"]()
MAKER = pytest.StashKey[threading.Thread]()  # the controller's thread that makes the world
GIVEN = pytest.StashKey[str]()  # the folder where a parallel run's controller hands its workers the world
CONTROLLER = pytest.StashKey[bool]()  # this process is a parallel run's controller
LEFT_OUT = pytest.StashKey[int]()  # the controller's: how many tests its workers left out (NOT_SIDE_BY_SIDE)
WORKER_LEFT_OUT = "imdt_left_out"  # the same, in each worker's `workeroutput`
# How long a worker waits for the world: the controller may be building the image on a
# fresh machine (minutes), and making the one real `box setup` after it.
WORLD_WAIT = 3600.0
HANDED = ("world", "set_up")  # the parts a parallel run's controller hands its workers, in order
# How the engine watch stops the run: a signal of the harness's own, not SIGINT, which a run
# started in the background (and an xdist worker's children) inherit ignored.
HUNG_SIGNAL = signal.SIGUSR2
UNIT = Path(__file__).parent / "unit"  # tests that need no world


APART = (
    "a parallel run (-n) leaves it out, and a run with --alone runs it alone (scripts/test does, after the "
    "parallel run)"
)


def pytest_addoption(parser):
    parser.addoption(
        "--alone",
        action="store_true",
        help=f"run only the tests marked {MARKS}, one at a time (a parallel run leaves them out)",
    )


def pytest_configure(config):
    if config.getoption("alone") and config.getoption("numprocesses", None) and not _is_worker(config):
        raise pytest.UsageError("--alone runs its tests one at a time, on a quiet machine: drop -n")
    config.addinivalue_line(
        "markers",
        f"{ENGINE_RESTART}: restarts the Docker engine (as a Mac reboot would), so no other test may run "
        f"beside it; it runs last: {APART}",
    )
    config.addinivalue_line(
        "markers", f"{ALONE}: measures a time the product promises, so it needs the machine to itself: {APART}"
    )


@pytest.hookimpl(trylast=True)  # after -k and -m have chosen
def pytest_collection_modifyitems(config, items):
    """A parallel run's workers leave out the tests that must not share the machine; a run
    with --alone runs only those. tests/unit's come after tests/world's, and the tests that
    restart the engine last (each in the order collected): only the session's teardown and
    its leak sweep come after them.

    A parallel run gives its workers the tests without a group one by one, in this order, as
    each is free. Hundreds of unit tests of about a second or less, given out last, end the
    workers within seconds of each other; given out before, a box's test of 25-30 s started
    last on one worker while the others had nothing left (five workers' ends 25 s apart)."""
    apart = [item for item in items if any(item.get_closest_marker(m) for m in NOT_SIDE_BY_SIDE)]
    if _is_worker(config):
        config.workeroutput[WORKER_LEFT_OUT] = len(apart)  # pytest-xdist hands it to the controller
        _leave_out(config, items, apart)
    elif config.getoption("alone"):
        _leave_out(config, items, [item for item in items if item not in apart])
    items.sort(key=lambda item: (bool(item.get_closest_marker(ENGINE_RESTART)), UNIT in item.path.parents))


def _leave_out(config, items: list, left_out: list) -> None:
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]


def _part(folder, part: str) -> Path:
    """Where a part the controller hands over (HANDED) is."""
    return Path(folder) / f"{part}.json"


def _write_whole(path: Path, data) -> None:
    """JSON that a reader sees only whole: written beside it, then renamed over it."""
    partial = path.with_name(f"{path.stem}.{os.getpid()}.partial")
    partial.write_text(json.dumps(data))
    os.replace(partial, path)


class _Unusable(Exception):
    """The world cannot be made: the tests that need it skip (or, under CI, fail) with this."""

    def __init__(self, message: str, fail: bool):
        super().__init__(message)
        self.fail = fail

    def act(self):
        if self.fail:
            pytest.fail(str(self), pytrace=False)
        pytest.skip(str(self))


class _World:
    """What a run's tests share. A worker's world only attaches to what the parallel run's
    controller made: `given_at` is the folder the controller writes it to, in two parts
    (HANDED), each when it is made."""

    def __init__(self, given_at: Optional[str] = None):
        self._given_at = given_at
        self._given: Optional[dict] = None
        self.machine: Optional[Machine] = None  # the engine, held: not in a worker
        self.leaked: list[str] = []
        self.hung: Optional[str] = None  # why the engine stopped answering (Machine's watch)
        if threading.current_thread() is threading.main_thread():
            signal.signal(HUNG_SIGNAL, self._interrupt)
        self._stack = contextlib.ExitStack()
        self._made: dict[str, object] = {}
        self._failed: dict[str, _Unusable] = {}  # a step that failed, by name

    @property
    def given(self) -> Optional[dict]:
        """A worker's: the world the controller made, waited for the first time a test needs
        it. None in the controller and in a run without -n, which make the world themselves."""
        if self._given is None and self._given_at is not None:
            self._given = _wait_for(_part(self._given_at, "world"))
        return self._given

    def _once(self, what: str, make):
        """`make()` the first time, its result after; a step that failed fails the same way
        again, and so does every step made from it (it asks for the failed one)."""
        if what in self._failed:
            raise self._failed[what]
        if what not in self._made:
            try:
                self._made[what] = make()
            except _Unusable as exc:
                self._failed[what] = exc
                raise
        return self._made[what]

    def client(self):
        def connect():
            import docker

            if self.given and self.given.get("unusable"):
                raise _Unusable(*self.given["unusable"])
            try:
                client = docker.from_env(timeout=300)
                client.ping()
            except Exception as exc:  # any failure to reach the engine
                message = f"the Docker engine is not reachable: {exc}"
                if IN_CI:
                    message += " (CI=true: Docker is required, not optional)"
                raise _Unusable(message, fail=IN_CI) from None
            self._stack.callback(client.close)
            if self.given is None:
                self.machine = self._stack.enter_context(Machine(client, on_hang=self._engine_hung))
                # Unwound after all that is made later (the feed, the topology): the sweep
                # comes after every fixture that needs the engine is torn down, and
                # whatever test-made thing is left then was leaked.
                self._stack.callback(lambda: self.leaked.extend(self.machine.sweep()))
            return client

        return self._once("client", connect)

    def image(self) -> str:
        def build() -> str:
            if self.given:
                return self.given["image"]
            log = Path(tempfile.mkdtemp(prefix="imdt-build-")) / "build.log"
            try:
                return build_test_image(self.client(), log)
            except Exception as exc:
                tail = log.read_text()[-4000:] if log.exists() else ""
                raise _Unusable(f"could not build the box image: {exc}\n{tail}", fail=True) from None

        return self._once("image", build)

    def topology(self) -> topo_mod.Topology:
        def make():
            client = self.client()
            if self.given:
                return topo_mod.attach(client)
            topo = topo_mod.build(client, self.image())
            self._stack.callback(topo_mod.teardown, client, topo)
            return topo

        return self._once("topology", make)

    def feed(self) -> str:
        """The fake worker's release feed on the test internet (tests/fake_worker)."""
        from tests.fake_worker.fixtures import FEED_URL, start_feed

        def start():
            self.topology()
            if not self.given:
                container = start_feed(self.client(), self.image())
                self._stack.callback(container.remove, force=True)
            return FEED_URL

        return self._once("feed", start)

    def set_up(self):
        """The run's one real `box setup` (a BoxEnv) that tests not about setup start from:
        each takes a copy of its volume (`copy_of` in tests/fake_worker/fixtures.py), never
        changing it. Made once, by a parallel run's controller for all its workers."""
        from tests.fake_worker.fixtures import BoxEnv, set_up_env

        def make():
            if self.given is not None:
                self.client()  # a world that could not be made fails here first
                handed = _wait_for(_part(self._given_at, "set_up"))
                if handed.get("set_up_unusable"):
                    raise _Unusable(*handed["set_up_unusable"])
                return BoxEnv(**handed["set_up"], client=self.client())
            self.feed()
            try:
                return self._stack.enter_context(set_up_env(self.client(), self.image()))
            except AssertionError as exc:  # box setup failed: its output says why
                raise _Unusable(f"the run's one `box setup` failed: {exc}", fail=True) from None

        return self._once("set_up", make)

    def agents(self) -> str:
        """The volume of the run's one install of the real agent CLIs (tests/harness/agents.py),
        which no test changes: the `agents` fixture gives each process a copy of it. The first
        process to ask installs, under a lock the others wait on: an install is some 25 s of CPU,
        and one for each xdist group cost a parallel run two more. A parallel run's controller
        removes it at the end (hand_over)."""
        from tests.harness import agents as agents_mod
        from tests.harness import boxes

        def install(into):  # into(): the install, and what it gives
            try:
                return into()
            except Exception as exc:  # npm unreachable, say: every test that needs the CLIs fails with it
                raise _Unusable(f"could not install the agent CLIs: {exc}", fail=True) from None

        def make() -> str:
            client, image = self.client(), self.image()
            if self._given_at is None:
                return install(lambda: self._stack.enter_context(agents_mod.installed(client, image)))
            part = _part(self._given_at, "agents")
            with open(part.with_suffix(".lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not part.exists():
                    volume = boxes.make_volume(client, "agents")
                    _write_whole(part, {"volume": volume})  # the controller removes it, whatever comes next
                    try:
                        install(lambda: agents_mod.install_into(client, image, volume))
                        _write_whole(part, {"volume": volume, "installed": True})
                    except _Unusable as exc:
                        _write_whole(part, {"volume": volume, "unusable": (str(exc), exc.fail)})
                handed = json.loads(part.read_text())
            if not handed.get("installed"):
                raise _Unusable(*handed.get("unusable", ("the test process installing the agent CLIs stopped", True)))
            return handed["volume"]

        return self._once("agents", make)

    def _remove_agents(self, folder: Path) -> None:
        """A parallel run's controller: the volume its workers' agents() installed, if one did."""
        from tests.harness import boxes

        part = _part(folder, "agents")
        if part.exists():
            boxes.remove_volume(self.client(), json.loads(part.read_text())["volume"])

    def make_all(self, hand: Callable[[str, dict], None]) -> None:
        """Everything, now (a parallel run's controller), handed to its workers in two parts:
        the world as soon as it is made (most tests need only that), then the one real `box
        setup`, which some tests start from."""
        try:
            self.feed()
        except _Unusable as exc:
            return hand("world", {"unusable": (str(exc), exc.fail)})
        except Exception as exc:  # a listener that died, say: every test that needs the world fails with it
            return hand("world", {"unusable": (f"could not make the test world: {exc}", True)})
        hand("world", {"image": self.image()})
        try:  # only the tests that start from it fail without it
            env = self.set_up()
            hand("set_up", {"set_up": {"image": env.image, "container": env.container, "volume": env.volume}})
        except _Unusable as exc:
            hand("set_up", {"set_up_unusable": (str(exc), exc.fail)})

    def _engine_hung(self, reason: str) -> None:
        """A stuck engine answers no test again: the run ends now, not when every call has
        timed out. The signal wakes the main thread's blocked socket read; its handler ends the
        run as Ctrl-C would."""
        self.hung = reason
        signal.pthread_kill(threading.main_thread().ident, HUNG_SIGNAL)

    def _interrupt(self, signum, frame):
        raise KeyboardInterrupt(self.hung)

    def hand_over(self, folder: Path) -> threading.Thread:
        """A parallel run's controller: make everything in a thread of its own, while the
        workers start, writing each part they are given to `folder` (whole, in one rename)."""

        def hand(part: str, given: dict) -> None:
            _write_whole(_part(folder, part), given)

        def make():
            try:
                self.make_all(hand)
            except BaseException as exc:  # the workers wait for the files: each is written whatever happens
                for part in HANDED:
                    if not _part(folder, part).exists():
                        hand(part, {"unusable": (f"could not make the test world: {exc}", True)})
            if "client" in self._made:  # on the stack after the leak sweep, so it comes before it
                self._stack.callback(self._remove_agents, folder)

        thread = threading.Thread(target=make, name="imdt-world", daemon=True)
        thread.start()
        return thread

    def end(self) -> None:
        """Everything this world made goes, in the reverse order it was made; on a stuck engine
        nothing can go (each call would only wait out its timeout): the next run sweeps it. An
        engine gone by now fails the run with one line, as a stuck one does."""
        import docker
        import requests

        if not self.hung:
            try:
                self._stack.close()
            except (requests.exceptions.ConnectionError, docker.errors.DockerException) as exc:
                self.hung = f"the Docker engine went away before the run could clean up: {exc}"


def _wait_for(path: Path) -> dict:
    """A part of the world the controller hands over (HANDED), once it is there."""
    deadline = time.monotonic() + WORLD_WAIT
    while not path.exists():
        if time.monotonic() > deadline:
            return {"unusable": (f"the controller handed over no {path.stem} in {WORLD_WAIT:.0f} s ({path})", True)}
        time.sleep(0.1)
    return json.loads(path.read_text())


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session):
    config = session.config
    world = _World(config.workerinput.get("imdt_world") if _is_worker(config) else None)
    config.stash[WORLD] = world
    config.stash[CONTROLLER] = xdist.is_xdist_controller(session)
    if config.stash[CONTROLLER]:
        folder = Path(tempfile.mkdtemp(prefix="imdt-world-"))
        config.stash[GIVEN] = str(folder)
        config.stash[MAKER] = world.hand_over(folder)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # pytest-xdist: what each worker starts with
    node.workerinput["imdt_world"] = node.config.stash[GIVEN]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # pytest-xdist: a worker ended, with its `workeroutput`
    left_out = getattr(node, "workeroutput", {}).get(WORKER_LEFT_OUT, 0)
    node.config.stash[LEFT_OUT] = max(node.config.stash.get(LEFT_OUT, 0), left_out)


def pytest_sessionfinish(session):
    world = session.config.stash.get(WORLD, None)
    if world is None:
        return
    maker = session.config.stash.get(MAKER, None)
    if maker is not None and not world.hung:  # a run cut short while the world is made: it ends whole
        maker.join()
    world.end()  # before the folder goes: the controller's end reads what its workers wrote there
    if session.config.stash[CONTROLLER]:
        shutil.rmtree(session.config.stash[GIVEN], ignore_errors=True)
    if world.leaked or world.hung:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    """The run is over. pytest's unraisable-exception plugin collects garbage five times
    after this, to find a late __del__ that raised: over a worker's whole heap, seconds of
    the last worker's exit, with the run waiting for it. What is here now was made
    during the run, and each test's own unraisable exceptions were caught as it ran."""
    gc.freeze()  # what exists now is left out of those collections


def pytest_terminal_summary(terminalreporter, config):
    world = config.stash.get(WORLD, None)
    if world is None:
        return
    write = terminalreporter.write_line
    if world.hung:
        write(f"FAILED: {world.hung}", red=True, bold=True)
    if world.machine and world.machine.stale:
        write("removed what a killed test run left: " + ", ".join(world.machine.stale), yellow=True)
    if world.leaked:
        write("FAILED: tests left these behind (now removed): " + ", ".join(world.leaked), red=True, bold=True)
    if config.stash.get(LEFT_OUT, 0):
        write(
            f"{config.stash[LEFT_OUT]} tests marked {MARKS} were left out of this parallel run: run them with --alone"
        )


def _from_world(name: str, what: str):
    """The session fixture `name`: the world's `what` (made on first use), or the reason
    there is none."""

    def fixture(request):
        try:
            return getattr(request.config.stash[WORLD], what)()
        except _Unusable as exc:
            exc.act()

    return pytest.fixture(scope="session", name=name)(fixture)


docker_client = _from_world("docker_client", "client")
box_image = _from_world("box_image", "image")
topology = _from_world("topology", "topology")
feed = _from_world("feed", "feed")


@pytest.fixture(autouse=True)
def _worker_slots():
    """The worker box slots a test took (tests/harness/machine.py), freed when it ends:
    set up before, so torn down after, the fixtures that remove its boxes."""
    yield
    free_worker_slots()


set_up = _from_world("set_up", "set_up")


@pytest.fixture(scope="session")
def registry(tmp_path_factory):
    """A loopback registry of this process's (tests/harness/registry.py): its host:port."""
    from tests.harness.registry import loopback_registry

    try:
        with loopback_registry(tmp_path_factory.mktemp("registry")) as address:
            yield address
    except FileNotFoundError as exc:
        _Unusable(str(exc), fail=IN_CI).act()


@pytest.fixture
def test_volume(docker_client):
    from tests.harness.boxes import volume

    with volume(docker_client) as name:
        yield name


@pytest.fixture(scope="session")
def agents(request, docker_client, box_image):
    """The real agent CLIs, installed by box's own install path (tests/harness/agents.py): this
    process's own copy of the run's one install, which its tests may change."""
    from tests.harness import boxes

    try:
        installed = request.config.stash[WORLD].agents()
    except _Unusable as exc:
        exc.act()
    with boxes.volume(docker_client, "agents") as volume:
        boxes.copy_volume(docker_client, box_image, installed, volume)
        yield volume
