"""Ctrl-C ends `box` at once, every time, quietly, and leaves nothing half-made.

The root cause of the hang CI saw: a job started in the background without job
control (`cmd &` in a non-interactive shell, as CI runners and scripts do)
inherits SIGINT as *ignored*, and Python keeps an inherited "ignore", so a
following `box logs` never heard Ctrl-C. The tests start `box` exactly that way.
"""

from __future__ import annotations

import io
import random
import sys
import uuid

import docker
import pytest

from imdbox import names
from tests.fake_worker.fixtures import copy_of, volume_files
from tests.harness import boxes
from tests.harness.cli import BOX
from tests.harness.image import BASE_IMAGE, CA_FILE
from tests.harness.interrupt import GRACE, interrupt, left_after
from tests.harness.topology import NO_HEALTHCHECK

ROUNDS = 20


@pytest.fixture
def chatty_box(docker_client, box_image):
    """A container `box` takes for its own (the label), printing a line every 0.2 s.
    No network at all: it only writes a log."""
    name = f"imdt-logs-{uuid.uuid4().hex[:8]}"
    container = docker_client.containers.run(
        box_image,
        entrypoint=["bash", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done"],
        command=[],
        name=name,
        network_mode="none",
        labels={names.LABEL: "1", "imd-test": "1"},
        healthcheck=NO_HEALTHCHECK,
        detach=True,
    )
    try:
        yield name
    finally:
        container.remove(force=True)


def _interrupt_following(argv: list[str], container: str, rng: random.Random) -> tuple[float, str]:
    return interrupt(argv, {"IMD_BOX_CONTAINER": container}, "tick", rng.uniform(0, 0.6))


BOX_LOGS = [*BOX, "logs", "--tail", "0"]
SETTINGS = "/home/imd/.imd-box/settings.env"
WORKER_PKG = "/home/imd/.npm-global/lib/node_modules/@identitymd/worker/package.json"


def test_ctrl_c_ends_box_logs_at_once_every_time(chatty_box):
    rng = random.Random()
    for i in range(ROUNDS):
        took, stderr = _interrupt_following(BOX_LOGS, chatty_box, rng)
        assert took < GRACE, f"round {i + 1}: `box logs` still following {GRACE} s after Ctrl-C\n{stderr[-4000:]}"
        assert stderr == "", f"round {i + 1}: not quiet: {stderr!r}"


def test_breaking_twin_without_the_fix_ctrl_c_is_lost(chatty_box):
    """The same command with box's SIGINT handling left out (typer's app called
    directly, not `main`): the inherited "ignore" wins and Ctrl-C does nothing."""
    without_fix = [
        sys.executable,
        "-c",
        "import sys; sys.argv = ['box', 'logs', '--tail', '0']\nfrom imdbox.cli import app\napp()",
    ]
    took, _ = _interrupt_following(without_fix, chatty_box, random.Random(0))
    assert took == float("inf")


# ---------------------------------------------------------------- long commands


@pytest.mark.parametrize(
    "until, delay",
    [("walls up and verified", 0.0), ("downloading the worker release", 0.2), ("installing the claude CLI", 0.5)],
)
def test_ctrl_c_during_setup_leaves_nothing_half_made(docker_client, box_image, set_up, until, delay):
    with copy_of(docker_client, box_image, set_up) as bx:  # a worker to keep unchanged
        before = volume_files(docker_client, bx, [SETTINGS, WORKER_PKG])
        took, stderr = interrupt([*BOX, "setup", "--no-shell"], bx.env(), until, delay)
        assert took < GRACE, f"`box setup` still running {GRACE} s after Ctrl-C\n{stderr[-4000:]}"
        assert "Traceback" not in stderr, stderr
        assert left_after(lambda: boxes.names_from(docker_client, bx.container)) == [], "a one-off box was left behind"
        after = volume_files(docker_client, bx, [SETTINGS, WORKER_PKG])
        assert after == before, "the settings or the installed worker changed half-way"
        r = bx.run("shell", "imd", "help")
        assert r.returncode == 0 and "imd start" in r.stdout, r.all


def test_ctrl_c_during_check_leaves_no_check_box(docker_client, box_image, topology):
    env = {"IMD_BOX_IMAGE": box_image, "IMD_BOX_NETWORK": topology.network_names[1]}
    env["IMD_BOX_VOLUME"] = env["IMD_BOX_CONTAINER"] = f"imdt-ctrlc-{uuid.uuid4().hex[:8]}"
    try:

        def check_box_running() -> bool:
            found = boxes.containers(docker_client, volume=env["IMD_BOX_VOLUME"])
            return any(c["State"] == "running" for c in found)

        took, stderr = interrupt([*BOX, "check", "--url", topology.url("internet")], env, check_box_running, 0.3)
        assert took < GRACE and "Traceback" not in stderr, stderr
        left = left_after(lambda: boxes.containers(docker_client, volume=env["IMD_BOX_VOLUME"]))
        assert left == [], f"the check box was left behind: {left}"
    finally:
        for c in docker_client.containers.list(all=True, filters={"volume": env["IMD_BOX_VOLUME"]}):
            c.remove(force=True)
        for v in docker_client.volumes.list(filters={"name": env["IMD_BOX_VOLUME"]}):
            v.remove(force=True)


@pytest.fixture
def own_base(docker_client):
    """The tests' base with a label of this run's: a build on it shares no layer cache with
    any other build, so one cut short leaves no half chain of layers that the next builds
    would take up (`--no-cache` did: the engine's cache takes the newest matching layer,
    and every later build and update then rebuilt the image from its first RUN). On the
    way out, the layers the cut build made and the base go again, newest first."""
    tag = f"imdt-base:{uuid.uuid4().hex[:8]}"
    dockerfile = io.BytesIO(f"FROM {BASE_IMAGE}\nLABEL imdt-own-base={tag}\n".encode())
    base, _ = docker_client.images.build(fileobj=dockerfile, tag=tag, rm=True, forcerm=True)
    try:
        yield tag
    finally:
        children: dict[str, list[str]] = {}
        for img in docker_client.api.images(all=True):
            children.setdefault(img.get("ParentId") or "", []).append(img["Id"])

        def descendants(image_id: str) -> list[str]:
            return [d for child in children.get(image_id, []) for d in [*descendants(child), child]]

        for image_id in [*descendants(base.id), tag]:
            try:
                docker_client.images.remove(image_id, force=True)
            except docker.errors.ImageNotFound:
                pass


def test_ctrl_c_during_a_build_stops_it_and_leaves_no_build_container(docker_client, box_image, own_base):
    tag = f"imdt-ctrlc:{uuid.uuid4().hex[:8]}"
    argv = [*BOX, "build", "--base-image", own_base, "--ca-cert", CA_FILE]
    took, stderr = interrupt(argv, {"IMD_BOX_IMAGE": tag}, "apt-get update", 3.0)
    assert took < GRACE and "Traceback" not in stderr, stderr
    # The engine stops the step and removes its container. A build's step containers run
    # layers on its base: on this test's own base, they are this build's.
    left = left_after(lambda: boxes.containers(docker_client, ancestor=own_base), 30)
    assert not left, "a build container was left behind"
    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(tag)
