"""This machine's engine as a test run (or the bench) holds it: one run at a time, and
the sweep of what test runs make.

    with Machine(client) as machine:   # waits for any other run to end
        machine.stale                  # what a killed run left (removed, named)
        ...
        machine.sweep()                # what this run left (removed, named)
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator

import docker

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


class Machine:
    def __init__(self, client: docker.DockerClient):
        self.client = client
        self.stale: list[str] = []
        self._held = held()

    def __enter__(self) -> Machine:
        self._held.__enter__()
        # Holding the lock, no other run goes on: whatever test-made thing is there now was
        # left by a run killed before its teardown (SIGKILL, a machine stopped mid-run).
        # Not this run's leak: removed now, so the sweep at the end measures only this run.
        self.stale = self.sweep(tags=True)
        return self

    def __exit__(self, *exc) -> None:
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
