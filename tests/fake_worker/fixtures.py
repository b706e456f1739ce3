"""The fake release feed as a container on the harness's `imdt-internet` network,
and a runner for the real `box` command pointed at test-only names."""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

import docker

from imdbox import names
from tests.harness import boxes
from tests.harness.cli import cli_env, run_box
from tests.harness.machine import hold_worker_slot
from tests.harness.topology import NO_HEALTHCHECK, PREFIX

from . import default_feed, feed_tar

FEED_IP = "198.51.100.20"
FEED_NETWORK = PREFIX + "internet"
FEED_URL = f"http://{FEED_IP}"


def start_feed(client: docker.DockerClient, image: str):
    name = f"{PREFIX}feed-{uuid.uuid4().hex[:8]}"
    networking = client.api.create_networking_config(
        {FEED_NETWORK: client.api.create_endpoint_config(ipv4_address=FEED_IP)}
    )
    cid = client.api.create_container(
        image,
        entrypoint=["node", "/srv/feed_server.mjs"],
        command=[],
        labels={"imd-test": "1"},
        healthcheck=NO_HEALTHCHECK,
        name=name,
        host_config=client.api.create_host_config(network_mode=FEED_NETWORK),
        networking_config=networking,
    )["Id"]
    container = client.containers.get(cid)
    container.put_archive("/", feed_tar(default_feed()))
    container.start()
    deadline = time.monotonic() + 20
    while b"listening: feed" not in container.logs():
        container.reload()
        if container.status == "exited" or time.monotonic() > deadline:
            raise RuntimeError(f"the fake feed did not start: {container.logs().decode()}")
        time.sleep(0.2)
    return container


@dataclass
class BoxEnv:
    """`box` run as a subprocess with test-only image, container, volume and network names."""

    image: str
    container: str
    volume: str
    network: str = FEED_NETWORK
    extra: dict[str, str] = field(default_factory=dict)
    client: Optional[docker.DockerClient] = field(default=None, repr=False)

    def env(self, **overrides: str) -> dict[str, str]:
        env = cli_env(
            IMD_BOX_IMAGE=self.image,
            IMD_BOX_CONTAINER=self.container,
            IMD_BOX_VOLUME=self.volume,
            IMD_BOX_NETWORK=self.network,
            IMD_WORKER_URL=f"{FEED_URL}/v1",
            IMD_CLAUDE_PACKAGE=f"{FEED_URL}/npm/claude-code.tgz",
            IMD_CODEX_PACKAGE=f"{FEED_URL}/npm/codex.tgz",
            IMD_GROK_PACKAGE=f"{FEED_URL}/npm/grok-cli.tgz",
            IMD_BOX_SOLC_URL=f"{FEED_URL}/solc",
        )
        env.update(self.extra)
        env.update(overrides)
        return env

    def run(self, *args: str, timeout: float = 300, **overrides: str) -> subprocess.CompletedProcess:
        seat, command = _seat_and_command(args)
        if command in STARTS_A_BOX:
            self.hold_slot(seat)
        return run_box(*args, env=self.env(**overrides), timeout=timeout)

    def hold_slot(self, seat: Optional[str] = None) -> None:
        """A worker box slot for this env's (seat's) box until the test ends (tests/harness/
        machine.py says why): `run` takes it itself; a test that starts a box with a
        process of its own (two at once, one to interrupt) takes it first."""
        if self.client is not None:
            hold_worker_slot(self.client, (self.volume, seat))


STARTS_A_BOX = ("start", "update", "runtime")  # the commands that may leave a worker box running


def _seat_and_command(args) -> tuple[Optional[str], Optional[str]]:
    """`box [--seat NAME] COMMAND ...`: the seat and the command word."""
    words = list(args)
    seat = None
    if words[:1] == ["--seat"] and len(words) > 1:
        seat, words = words[1], words[2:]
    return seat, next((w for w in words if not w.startswith("-")), None)


def new_box_env(client: docker.DockerClient, image: str, network: str = FEED_NETWORK) -> BoxEnv:
    tag = uuid.uuid4().hex[:8]
    env = BoxEnv(
        image=f"{PREFIX}box:{tag}",
        container=f"{PREFIX}box-{tag}",
        volume=f"{PREFIX}home-{tag}",
        network=network,
        client=client,
    )
    repo, _, t = env.image.partition(":")
    client.images.get(image).tag(repo, t)
    return env


def cleanup_box_env(client: docker.DockerClient, env: BoxEnv, image_too: bool = True) -> None:
    for c in client.containers.list(all=True, filters={"volume": env.volume}):
        c.remove(force=True)
    try:
        client.containers.get(env.container).remove(force=True)
    except docker.errors.NotFound:
        pass
    try:
        client.volumes.get(env.volume).remove(force=True)
    except docker.errors.NotFound:
        pass
    if image_too:
        try:
            client.images.remove(env.image, force=True)  # a tag only: untag even if a container uses it
        except docker.errors.ImageNotFound:
            pass


@contextlib.contextmanager
def box_env(client: docker.DockerClient, image: str, network: str = FEED_NETWORK):
    """A BoxEnv of its own; its container, volume and tag are removed on the way
    out, whether the test passed or failed."""
    env = new_box_env(client, image, network)
    try:
        yield env
    finally:
        cleanup_box_env(client, env)


def volume_files(client: docker.DockerClient, env: BoxEnv, paths) -> dict[str, Optional[bytes]]:
    """Files from the test volume, all read through one container that never runs."""
    from imdbox import volume

    eng = boxes.engine_of(client, image=env.image, volume=env.volume, network=env.network)
    return volume.read_files(eng, list(paths))


# A Claude Code login as the volume holds one (private to imd): what a fault must keep.
PLANT_LOGIN = f"mkdir -p {names.HOME}/.claude && umask 077 && head -c 300 /dev/urandom | base64 > {names.HOME}/.claude/.credentials.json"


@contextlib.contextmanager
def set_up_env(client: docker.DockerClient, image: str):
    """A box env of its own after a real `box setup`. Removed on the way out."""
    with box_env(client, image) as env:
        r = env.run("setup", "--no-shell")
        assert r.returncode == 0, r.all
        yield env


@contextlib.contextmanager
def copy_of(client: docker.DockerClient, image: str, template: BoxEnv, *, paired: bool = False, login: bool = False):
    """A box env of its own whose volume is a copy of `template`'s, as `box setup` left it:
    for a test that needs a set-up volume but is not about setup (the session makes one
    real setup, `set_up` in tests/conftest.py, instead of one per module). With `paired`,
    `imd pair` runs in the copy, so each has its own device key; with `login`, a Claude
    login is planted too. Removed on the way out."""
    with box_env(client, image) as env:
        client.volumes.create(env.volume, labels={names.LABEL: "1"})  # as box setup makes it
        boxes.copy_volume(client, image, template.volume, env.volume)
        if paired:
            pair(env, login=login)
        yield env


def pair(env: BoxEnv, *, login: bool = False) -> None:
    """`imd pair` in a set-up env (and, with `login`, a Claude login planted)."""
    r = env.run("shell", "imd", "pair")
    assert r.returncode == 0 and "  Paired. Token " in r.stdout, r.all
    if login:
        r = env.run("shell", "bash", "-c", PLANT_LOGIN)
        assert r.returncode == 0, r.all


def remove_container(client: docker.DockerClient, env: BoxEnv) -> None:
    """The env's box is gone (a test's finalizer); its volume stays."""
    try:
        client.containers.get(env.container).remove(force=True)
    except docker.errors.NotFound:
        pass
