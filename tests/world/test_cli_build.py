"""`box build` and `box update`'s rebuild: the CLI path users run, against the real engine
(layer cache warm from the session's `box_image`; only the update rebuilds the apt layers)."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import docker
import pytest

from imdbox import build, volume
from imdbox.layout import CA_DIR
from tests.fake_worker.fixtures import box_env
from tests.harness import boxes
from tests.harness.cli import cli_env, run_box
from tests.harness.image import BASE_IMAGE, CA_FILE, image_of_an_earlier_day


def _box(*args: str, image: str) -> subprocess.CompletedProcess:
    return run_box(*args, env=cli_env(IMD_BOX_IMAGE=image), timeout=900)


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


def test_a_base_image_out_of_reach_says_the_ways_out(docker_client, image_tag):
    # As a machine without Docker Hub: the base is not here, and its registry (port 1 of this
    # machine's loopback, where nothing listens) is not there.
    base = f"127.0.0.1:1/imdt-no-base:{uuid.uuid4().hex[:8]}"
    r = _box("build", "--base-image", base, image=image_tag)
    assert r.returncode == 1, r.all
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.all
    assert lines[0].startswith(f"box: the base image {base} is not on this engine and could not be pulled ("), r.all
    assert "`scripts/make-base-image.sh`" in lines[0] and "`--base-image`" in lines[0], r.all
    # The steps it ran were shown as they ran, once.
    assert r.all.count("FROM ${BASE_IMAGE}") == 1, r.all
    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(image_tag)


def _apt_layers(client, ref: str) -> list[str]:
    """The ids of the image's Debian package layers (the box stage's apt-get RUNs)."""
    return [h["Id"] for h in client.api.history(ref) if "apt-get install" in h["CreatedBy"]]


def _ca_files(client, ref: str) -> dict[str, bytes]:
    return volume.image_files(boxes.engine_of(client, image=ref), ref, CA_DIR)


def test_update_refreshes_debian_packages_and_a_plain_build_stays_warm(docker_client, box_image, topology):
    """`box update` rebuilds the apt layers (once a day); `box build` with no flags rebuilds
    nothing. Neither is given the base or the CA: both come back from the current image."""
    # An image whose Debian packages were fetched on an earlier day (a real apt run, on this
    # machine's first run: the harness keeps it), as the box's image.
    old_id = image_of_an_earlier_day(docker_client)
    with box_env(docker_client, old_id) as bx:
        certs = build.read_ca_file(Path(CA_FILE))
        old_layers = _apt_layers(docker_client, old_id)
        assert len(old_layers) == 2

        r = bx.run("build", timeout=900)
        assert r.returncode == 0, r.all
        assert f"with the {len(certs)} extra CA certificate(s) the current image was built with" in r.all
        assert f"(base {BASE_IMAGE})" in r.all
        assert docker_client.images.get(bx.image).id == old_id, "a plain build is all cache: the same image"

        r = bx.run("update", timeout=900)
        assert r.returncode == 0, r.all
        assert "newest Debian trixie packages" in r.all
        updated = docker_client.images.get(bx.image)
        assert updated.labels[build.APT_LABEL] == build.apt_refresh_stamp(), "the day is kept for the next build"
        new_layers = _apt_layers(docker_client, bx.image)
        assert len(new_layers) == 2 and not set(old_layers) & set(new_layers), "every apt layer was rebuilt"
        # The CA certificates were remembered, not dropped: the same files in the image.
        ca_then = _ca_files(docker_client, old_id)
        assert ca_then and _ca_files(docker_client, updated.id) == ca_then

        r = bx.run("build", timeout=900)
        assert r.returncode == 0, r.all
        assert docker_client.images.get(bx.image).id == updated.id, "after an update, a plain build stays warm"
        r = bx.run("update", timeout=900)
        assert r.returncode == 0 and "were fetched today" in r.all, r.all
        assert _apt_layers(docker_client, bx.image) == new_layers, "a second update the same day keeps them"
