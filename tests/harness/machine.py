"""This machine's engine as a test run (or the bench) holds it: one run at a time, and
the sweep of what test runs make.

    with Machine(client) as machine:   # waits for any other run to end
        machine.stale                  # what a killed run left (removed, named)
        ...
        machine.sweep()                # what this run left (removed, named)

With `on_hang`, an EngineWatch calls it if the engine stops answering for minutes (deadlocked).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from typing import Callable, Optional

import docker
import requests.exceptions

from .topology import PREFIX

# The topology's subnets are fixed (one per machine), and the sweep must never see another
# run's boxes: every run takes this lock for as long as it uses the engine.
LOCK_PATH = "/tmp/imdt-topology.lock"


@contextlib.contextmanager
def held() -> Iterator[None]:
    """The lock, for as long as the block runs: waits while another run holds it."""
    with open(LOCK_PATH, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# `box start` refuses a box whose memory cap, with the other worker boxes', is more than
# the engine has (service._refuse_if_seats_overfill): side by side, every test's box is
# another seat to it. So a test holds a slot, machine-wide, for each box it may start,
# from that command to the test's end (tests remove their boxes by then): as many slots
# as the engine takes boxes. Freed at the end of the test, never held across tests, so a
# module's fixture cannot keep one while its next test waits for another.
SLOT_PATH = "/tmp/imdt-worker-slot-{}.lock"
SLOT_WAIT = 900.0  # seconds: longer than any test holds one
_held: dict[object, int] = {}  # this test's slots, by the box they are for
_held_lock = threading.Lock()


def slot_count(client: docker.DockerClient) -> int:
    """As many as `box start` lets run side by side: each box's cap, with the others', fits."""
    from imdbox.runflags import EngineLimits

    limits = EngineLimits.from_info(client.info())
    return max(1, limits.memory // limits.box_memory)


def worker_slot(client: docker.DockerClient) -> int:
    """A free slot (the descriptor of a locked file: os.close frees it); waits for one."""
    count = slot_count(client)
    deadline = time.monotonic() + SLOT_WAIT
    while True:
        for i in range(count):
            slot = os.open(SLOT_PATH.format(i), os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                fcntl.flock(slot, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return slot
            except BlockingIOError:
                os.close(slot)
        if time.monotonic() > deadline:
            raise AssertionError(f"no worker box slot of {count} came free in {SLOT_WAIT:.0f} s")
        time.sleep(0.2)


def hold_worker_slot(client: docker.DockerClient, box: object) -> None:
    """This test may start `box` (any key naming it): hold a slot for it until the test ends."""
    with _held_lock:
        if box not in _held:
            _held[box] = worker_slot(client)


def free_worker_slots() -> None:
    """The test has ended (tests/conftest.py, after its fixtures removed its boxes)."""
    with _held_lock:
        for slot in _held.values():
            os.close(slot)
        _held.clear()


class Machine:
    def __init__(self, client: docker.DockerClient, on_hang: Optional[Callable[[str], None]] = None):
        self.client = client
        self.stale: list[str] = []
        self._held = held()
        self._on_hang = on_hang
        self._watch: Optional[EngineWatch] = None

    def __enter__(self) -> Machine:
        self._held.__enter__()
        # Holding the lock, no other run goes on: whatever test-made thing is there now was
        # left by a run killed before its teardown (SIGKILL, a machine stopped mid-run).
        # Not this run's leak: removed now, so the sweep at the end measures only this run.
        try:
            self.stale = self.sweep(tags=True)
        except BaseException:
            # Let go of the lock: the next test of this process would wait on it for good.
            self._held.__exit__(None, None, None)
            raise
        if self._on_hang:
            self._watch = EngineWatch.of_engine(self._on_hang).start()
        return self

    def __exit__(self, *exc) -> None:
        if self._watch:
            self._watch.stop()
        self._held.__exit__(*exc)

    def sweep(self, tags: bool = False) -> list[str]:
        """Every container, volume and network a test made is gone by now (each fixture
        removes its own): whatever is left was leaked. Remove it, and name it. With `tags`,
        the test-only image tags too (a killed run's; a tag holds no engine resource of its
        own, so the end-of-run measure leaves them out)."""
        client, leaked = self.client, []
        for c in client.containers.list(all=True):
            if _made_here(c):
                leaked.append(f"container {c.name}")
                c.remove(force=True)
        for v in client.volumes.list():
            if _made_here(v):
                leaked.append(f"volume {v.name}")
                v.remove(force=True)
        for n in client.networks.list():
            if _made_here(n):
                leaked.append(f"network {n.name}")
                n.remove()
        for image in client.images.list() if tags else []:
            for tag in image.tags:
                if tag.startswith(PREFIX):  # box_env's and the like: untag even if in use
                    leaked.append(f"image tag {tag}")
                    client.images.remove(tag, force=True)
        return leaked


def _made_here(obj) -> bool:
    """The harness's label, or a test-only name (the `box` runs)."""
    labels = obj.attrs.get("Labels") or obj.attrs.get("Config", {}).get("Labels") or {}
    return "imd-test" in labels or obj.name.startswith(PREFIX)


class EngineWatch:
    """Asks the engine for a network, on a connection of its own, every `every` s: the lookup
    takes libnetwork's controller lock, which a deadlocked docker.io 20.10.24 never gives back
    (HACKING.md, "If the run stops moving"). When `misses` asks in a row get no answer in
    `timeout` s, `on_hang(reason)` is called once and the watch ends. An engine that refuses or
    drops the connection (stopped, restarting) is not stuck: that resets the count."""

    TIMEOUT = 60.0  # s: a lookup on a busy engine takes well under one

    def __init__(
        self,
        ask: Callable[[], object],
        on_hang: Callable[[str], None],
        *,
        every: float = 30.0,
        misses: int = 3,
        timeout: float = TIMEOUT,
    ):
        self._ask, self._on_hang = ask, on_hang
        self._every, self._misses, self._timeout = every, misses, timeout
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="engine-watch", daemon=True)

    @classmethod
    def of_engine(cls, on_hang: Callable[[str], None], **kw) -> EngineWatch:
        api = docker.from_env(timeout=kw.setdefault("timeout", cls.TIMEOUT)).api  # the engine the run's client reaches
        return cls(lambda: api.inspect_network("bridge"), on_hang, **kw)

    def start(self) -> EngineWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        missed = 0
        while not self._stop.wait(self._every):
            try:
                self._ask()
                missed = 0
            except requests.exceptions.ReadTimeout:
                missed += 1
            except Exception:  # refused, reset, an error answer: the engine is there or gone, not stuck
                missed = 0
            if missed >= self._misses:
                self._on_hang(
                    f"the Docker engine has not answered a network lookup {missed} times in a row "
                    f"({self._timeout:.0f} s each): dockerd is deadlocked (HACKING.md says how to confirm it); "
                    "restart dockerd and run again"
                )
                return
