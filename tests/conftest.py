"""Shared fixtures: the engine, the box image, the test topology, test volumes.

Under CI=true a missing Docker engine fails the run; elsewhere the tests that
need it skip with the reason.
"""

from __future__ import annotations

import fcntl
import os
import warnings

import pytest

from tests.harness import topology as topo_mod
from tests.harness.image import build_test_image

IN_CI = os.environ.get("CI", "").lower() == "true"
LOCK_PATH = "/tmp/imdt-topology.lock"
ENGINE_RESTART = "engine_restart"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{ENGINE_RESTART}: restarts the Docker engine (as a Mac reboot would); runs after every other test "
        "of the session, so no other test is disturbed",
    )


def pytest_collection_modifyitems(config, items):
    """Tests that restart the engine go last (in the order they were collected): only the
    session's teardown and its leak sweep come after them."""
    last = [item for item in items if item.get_closest_marker(ENGINE_RESTART)]
    if last:
        items[:] = [item for item in items if not item.get_closest_marker(ENGINE_RESTART)] + last


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
    # One test session at a time uses this machine's engine: the topology's subnets
    # are fixed, and the sweep below must never see another session's boxes.
    with open(LOCK_PATH, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # Holding the lock, no other session runs: whatever test-made thing is there now
        # was left by a session killed before its teardown (SIGKILL, a machine stopped
        # mid-run). Not this session's leak: removed and named, so the sweep at the end
        # measures only what this session made.
        stale = _sweep(client, tags=True)
        if stale:  # in the run's warnings summary
            warnings.warn("removed what a killed test session left: " + ", ".join(stale), stacklevel=1)
        try:
            yield client
            leaked = _sweep(client)  # after every fixture that needs the engine is torn down
            assert not leaked, "tests left these behind (now removed): " + ", ".join(leaked)
        finally:
            client.close()


def _sweep(client, tags: bool = False) -> list[str]:
    """Every container, volume and network a test made is gone by now (each fixture
    removes its own): whatever is left was leaked. Remove it, and name it. With `tags`,
    the test-only image tags too (a killed session's; a tag holds no engine resource
    of its own, so the end-of-session measure leaves them out)."""
    leaked = []

    def made_here(obj) -> bool:  # the harness's label, or a test-only name (the `box` runs)
        labels = obj.attrs.get("Labels") or obj.attrs.get("Config", {}).get("Labels") or {}
        return "imd-test" in labels or obj.name.startswith(topo_mod.PREFIX)

    for c in client.containers.list(all=True):
        if made_here(c):
            leaked.append(f"container {c.name}")
            c.remove(force=True)
    for v in client.volumes.list():
        if made_here(v):
            leaked.append(f"volume {v.name}")
            v.remove(force=True)
    for n in client.networks.list():
        if made_here(n):
            leaked.append(f"network {n.name}")
            n.remove()
    for image in client.images.list() if tags else []:
        for tag in image.tags:
            if tag.startswith(topo_mod.PREFIX):  # box_env's and the like: untag even if in use
                leaked.append(f"image tag {tag}")
                client.images.remove(tag, force=True)
    return leaked


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
    # Fixed subnets: one topology per machine (docker_client holds the machine's lock).
    topo = topo_mod.build(docker_client, box_image)
    try:
        yield topo
    finally:
        topo_mod.teardown(docker_client, topo)


@pytest.fixture(scope="session")
def feed(docker_client, topology, box_image):
    """The fake worker's release feed on the test internet (tests/fake_worker)."""
    from tests.fake_worker.fixtures import FEED_URL, start_feed

    container = start_feed(docker_client, box_image)
    try:
        yield FEED_URL
    finally:
        container.remove(force=True)


@pytest.fixture(scope="session")
def set_up(docker_client, box_image, feed):
    """The session's one real `box setup` that tests not about setup start from: each takes
    a copy of its volume (`copy_of` in tests/fake_worker/fixtures.py). The tests of setup
    itself run it in their own volume."""
    from tests.fake_worker.fixtures import set_up_env

    with set_up_env(docker_client, box_image) as env:
        yield env


@pytest.fixture
def test_volume(docker_client):
    from tests.harness.boxes import volume

    with volume(docker_client) as name:
        yield name
