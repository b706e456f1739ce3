"""Shared fixtures: the engine, the box image, the test topology, test volumes.

Under CI=true a missing Docker engine fails the run; elsewhere the tests that
need it skip with the reason.
"""

from __future__ import annotations

import fcntl
import os
import uuid

import pytest

from tests.harness import topology as topo_mod
from tests.harness.image import build_test_image

IN_CI = os.environ.get("CI", "").lower() == "true"
LOCK_PATH = "/tmp/imdt-topology.lock"
# Another session (a colleague's checkout, a second CI job) may be using the same
# engine. The lock is held from the topology's start until this session's sweep
# below is done, so the sweep never removes what the other session made; a
# session that never used the engine sweeps nothing.
_session = {"lock": None, "used_engine": False}


def _hold_machine_lock() -> None:
    if _session["lock"] is None:
        lock = open(LOCK_PATH, "w")  # noqa: SIM115 (held across fixtures, closed by the sweep)
        fcntl.flock(lock, fcntl.LOCK_EX)
        _session["lock"] = lock


@pytest.fixture(scope="session")
def docker_client():
    import docker

    try:
        client = docker.from_env(timeout=300)
        client.ping()
    except Exception as exc:  # any failure to reach the engine
        message = f"the Docker engine is not reachable: {exc}"
        if IN_CI:
            pytest.fail(message + " (CI=true: Docker is required, not optional)", pytrace=False)
        pytest.skip(message)
    _session["used_engine"] = True
    yield client
    client.close()


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind():
    """Torn down last: every container, volume and network a test made is gone by
    now (each fixture removes its own). Whatever is not was leaked: it is removed
    here and the run errors, naming it."""
    yield
    if not _session["used_engine"]:
        return
    _hold_machine_lock()
    try:
        _sweep()
    finally:
        _session["lock"].close()
        _session["lock"] = None


def _sweep() -> None:
    import docker

    try:
        docker_client = docker.from_env(timeout=60)
        docker_client.ping()
    except Exception:  # no engine: nothing can have been made
        return
    leaked = []

    def made_here(obj) -> bool:  # the harness's label, or a test-only name (the `box` runs)
        return "imd-test" in (obj.attrs.get("Labels") or obj.attrs.get("Config", {}).get("Labels") or {}) or (
            obj.name.startswith(topo_mod.PREFIX)
        )

    for c in docker_client.containers.list(all=True):
        if made_here(c):
            leaked.append(f"container {c.name}")
            c.remove(force=True)
    for v in docker_client.volumes.list():
        if made_here(v):
            leaked.append(f"volume {v.name}")
            v.remove(force=True)
    for n in docker_client.networks.list():
        if made_here(n):
            leaked.append(f"network {n.name}")
            n.remove()
    assert not leaked, "tests left these behind (now removed): " + ", ".join(leaked)


@pytest.fixture(scope="session")
def box_image(docker_client, tmp_path_factory):
    log = tmp_path_factory.mktemp("build") / "build.log"
    try:
        return build_test_image(docker_client, log)
    except Exception as exc:
        tail = log.read_text()[-4000:] if log.exists() else ""
        pytest.fail(f"could not build the box image: {exc}\n{tail}", pytrace=False)


@pytest.fixture(scope="session")
def topology(docker_client, box_image):
    # Fixed subnets: one topology per machine. Concurrent runs queue here; the
    # lock is let go after the final sweep (nothing_left_behind).
    _hold_machine_lock()
    topo = topo_mod.build(docker_client, box_image)
    try:
        yield topo
    finally:
        topo_mod.teardown(docker_client, topo)


@pytest.fixture
def test_volume(docker_client):
    """A fresh volume standing in for imd-worker-home (never the user's own)."""
    name = f"imdt-home-{uuid.uuid4().hex[:8]}"
    volume = docker_client.volumes.create(name, labels={"imd-test": "1"})
    yield name
    for c in docker_client.containers.list(all=True, filters={"volume": name}):
        c.remove(force=True)
    volume.remove(force=True)
