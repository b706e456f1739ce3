"""`box pull` (and `box update` of a pulled image) against a registry on loopback
(the `registry` fixture, tests/harness/registry.py). What is pulled is a tiny image that
is not here until the pull downloads it: `box pull` reads nothing in it."""

from __future__ import annotations

import subprocess
import uuid

import docker

from tests.harness.cli import cli_env, run_box
from tests.harness.registry import push_tiny


def box(*args: str, **env: str) -> subprocess.CompletedProcess:
    return run_box(*args, env=cli_env(**env), timeout=900)


def test_pull_from_a_registry_then_update_pulls_again(docker_client, registry):
    tag = uuid.uuid4().hex[:8]
    remote_repo = f"{registry}/imdt-box"
    remote = f"{remote_repo}:{tag}"
    local = f"imdt-pulled:{tag}"
    env = {"IMD_BOX_IMAGE": local, "IMD_BOX_CONTAINER": f"imdt-box-{tag}", "IMD_BOX_VOLUME": f"imdt-home-{tag}"}
    pushed = push_tiny(docker_client, remote_repo, tag)
    try:
        r = box("pull", "--image", remote, **env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"downloading the layers of {remote}" in r.stdout
        assert f"pulled {remote}" in r.stdout and f"tagged it {local}" in r.stdout
        pulled = docker_client.images.get(local)
        assert pulled.id == pushed
        assert any(d.startswith(remote_repo + "@sha256:") for d in pulled.attrs["RepoDigests"])
        r = box("update", **env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"came from `box pull`: pulling {remote} again" in r.stdout
        assert "setup was not done yet: nothing to refresh" in r.stdout
        r = box("pull", "--image", f"{registry}/imdt-no-such-image:{tag}", **env)
        assert r.returncode == 1 and r.stderr.startswith("box: could not pull"), r.stdout + r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    finally:
        for t in (remote, local):
            try:
                docker_client.images.remove(t, force=True)
            except docker.errors.ImageNotFound:
                pass


def test_a_pull_from_a_registry_that_is_not_there_says_box_build():
    # Nothing listens at port 1 of this machine's loopback: the engine's pull is refused there.
    reference = f"127.0.0.1:1/imdt-box:{uuid.uuid4().hex[:8]}"
    r = box("pull", "--image", reference, IMD_BOX_IMAGE=f"imdt-pulled:{uuid.uuid4().hex[:8]}")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"box: could not pull {reference} ("), r.stderr
    assert lines[0].endswith("): build the image from this checkout instead: `box build`"), r.stderr
