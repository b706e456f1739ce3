"""`box build` itself: the CLI path users run, against the real engine (layer cache warm
from the session's `box_image`, so this takes seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import docker
import pytest

from tests.harness.image import BASE_IMAGE, CA_FILE


def _box(*args: str, image: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "IMD_BOX_IMAGE": image}
    return subprocess.run([sys.executable, "-m", "imdbox", *args], env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture
def image_tag(docker_client):
    tag = f"imdt-build-{uuid.uuid4().hex[:8]}:test"
    yield tag
    try:
        docker_client.images.remove(tag)
    except docker.errors.ImageNotFound:
        pass


def test_box_build_tags_the_image_with_progress(docker_client, box_image, image_tag):
    r = _box("build", "--base-image", BASE_IMAGE, "--ca-cert", CA_FILE, image=image_tag)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "Step 1/" in out and f"built {image_tag}" in out
    built = docker_client.images.get(image_tag)
    assert built.id == docker_client.images.get(box_image).id, "same checkout, same inputs: the same image"
    assert built.labels["org.opencontainers.image.source"].endswith("/box")


def test_a_bad_ca_certificate_is_one_clear_line_and_builds_nothing(docker_client, tmp_path, image_tag):
    bad = tmp_path / "corp-ca.pem"
    bad.write_text("not a certificate")
    r = _box("build", "--base-image", BASE_IMAGE, "--ca-cert", str(bad), image=image_tag)
    assert r.returncode != 0
    assert "holds no PEM certificate" in r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(image_tag)
