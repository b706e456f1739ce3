"""A registry on loopback for `box pull`: Debian's docker-registry package serving a free
127.0.0.1 port from a folder of the test's (the engine trusts plain HTTP to a registry on
loopback), and tiny images pushed to it."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
import tarfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import docker

MISSING = "Debian's docker-registry is not installed (apt-get install docker-registry)"


def _up(address: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{address}/v2/", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def loopback_registry(folder: Path) -> Iterator[str]:
    """A registry of its own (each worker of a parallel run has one): its host:port."""
    binary = shutil.which("docker-registry")
    if not binary:
        raise FileNotFoundError(MISSING)
    with socket.socket() as s:  # a free loopback port of ours
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    config = folder / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {folder / 'data'}\n  delete:\n    enabled: true\nhttp:\n  addr: {address}\n"
    )
    log_path = folder / "registry.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while not _up(address):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"docker-registry did not start: {log_path.read_text()}")
                time.sleep(0.2)
            yield address
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def push_tiny(client: docker.DockerClient, repo: str, tag: str) -> str:
    """A one-layer image of 4 KiB of random bytes (no other image shares its layer),
    pushed as repo:tag and then removed here: a pull must download it. Its id."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = os.urandom(4096)
        info = tarfile.TarInfo("imdt-blob")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    client.api.import_image_from_data(raw.getvalue(), repository=repo, tag=tag)
    image_id = client.images.get(f"{repo}:{tag}").id
    for event in client.api.push(repo, tag=tag, stream=True, decode=True):
        assert "error" not in event, event
    client.images.remove(image_id, force=True)
    return image_id
