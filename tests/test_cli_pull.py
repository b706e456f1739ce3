"""`box pull` (and `box update` of a pulled image) against a registry on loopback:
Debian's docker-registry package, serving a free 127.0.0.1 port from a temporary folder
(the engine trusts plain HTTP to a registry on loopback)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid

import docker
import pytest

from tests.harness.cli import cli_env, run_box

IN_CI = os.environ.get("CI", "").lower() == "true"


def _registry_up(address: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{address}/v2/", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    binary = shutil.which("docker-registry")
    if not binary:
        message = "Debian's docker-registry is not installed (apt-get install docker-registry)"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    with socket.socket() as s:  # a free loopback port of ours (a parallel run has one registry per worker)
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    root = tmp_path_factory.mktemp("registry")
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {root / 'data'}\n  delete:\n    enabled: true\nhttp:\n  addr: {address}\n"
    )
    log = (root / "registry.log").open("w")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not _registry_up(address):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"docker-registry did not start: {(root / 'registry.log').read_text()}", pytrace=False)
            time.sleep(0.2)
        yield address
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def box(*args: str, **env: str) -> subprocess.CompletedProcess:
    return run_box(*args, env=cli_env(**env), timeout=900)


def test_pull_from_a_registry_then_update_pulls_again(docker_client, box_image, registry):
    tag = uuid.uuid4().hex[:8]
    remote_repo = f"{registry}/imdt-box"
    remote = f"{remote_repo}:{tag}"
    local = f"imdt-pulled:{tag}"
    env = {"IMD_BOX_IMAGE": local, "IMD_BOX_CONTAINER": f"imdt-box-{tag}", "IMD_BOX_VOLUME": f"imdt-home-{tag}"}
    image = docker_client.images.get(box_image)
    image.tag(remote_repo, tag)
    try:
        for event in docker_client.api.push(remote_repo, tag=tag, stream=True, decode=True):
            assert "error" not in event, event
        docker_client.images.remove(remote)  # pull must fetch it, not find the tag
        r = box("pull", "--image", remote, **env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"pulled {remote}" in r.stdout and f"tagged it {local}" in r.stdout
        pulled = docker_client.images.get(local)
        assert pulled.id == image.id
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
