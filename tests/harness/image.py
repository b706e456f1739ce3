"""The box image for a test run: built once from this checkout, layer cache reused."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Optional

import docker

from imdbox import build, names

TEST_IMAGE = os.environ.get("IMD_BOX_TEST_IMAGE", "imd-box:test")
# This machine cannot pull debian:trixie-slim: scripts/make-base-image.sh makes
# the same base from Debian's archive.
BASE_IMAGE = os.environ.get("IMD_BOX_TEST_BASE", "imd-box-base:trixie")
# The network here inspects TLS: the build trusts the system's bundle.
CA_FILE = os.environ.get("IMD_BOX_TEST_CA", "/etc/ssl/certs/ca-certificates.crt")
# CI that built the image elsewhere (the GitHub workflow's build job) sets
# IMD_BOX_TEST_PREBUILT=1: the tests then run against that image as it is.
PREBUILT = os.environ.get("IMD_BOX_TEST_PREBUILT") == "1"
# The day `test_cli_build`'s older image had its Debian packages fetched (image_of_an_earlier_day).
EARLIER_DAY = "2026-01-01"


def ca_certs() -> Optional[list[str]]:
    """The extra CA certificates every test build trusts (CA_FILE), if there is such a file."""
    ca = Path(CA_FILE) if CA_FILE else None
    return build.read_ca_file(ca) if ca and ca.is_file() else None


def ensure_base(client: docker.DockerClient) -> None:
    try:
        client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        subprocess.run([str(names.REPO_ROOT / "scripts" / "make-base-image.sh"), BASE_IMAGE], check=True)


def build_test_image(client: docker.DockerClient, log_path: Path) -> str:
    if PREBUILT:
        client.images.get(TEST_IMAGE)  # ImageNotFound: there is nothing to test
        log_path.write_text(f"testing the prebuilt {TEST_IMAGE}\n")
        return TEST_IMAGE
    ensure_base(client)
    started = time.monotonic()
    with log_path.open("w") as log:
        build.build_image(
            client.api,
            tag=TEST_IMAGE,
            base_image=BASE_IMAGE,
            ca_certs=ca_certs(),
            # Today's packages, as `box build` and `box update` label them: the tests'
            # builds and updates reuse these layers (test_cli_build shows a refresh itself).
            apt_refresh=build.apt_refresh_stamp(),
            on_line=lambda line: log.write(line + "\n"),
        )
        log.write(f"built {TEST_IMAGE} in {time.monotonic() - started:.1f}s\n")
    return TEST_IMAGE


def image_of_an_earlier_day(client: docker.DockerClient) -> str:
    """The box image from this checkout with its Debian packages fetched on EARLIER_DAY (a
    real apt run): what `box update` refreshes. Kept between runs, as TEST_IMAGE is, and under
    a name the start-of-run sweep leaves alone: the apt run (about 50 s of two cores) happens
    on a machine's first run, and after a change to the base or the CA files; any later
    change to the checkout rebuilds only the layers after the apt ones. Its id."""
    ensure_base(client)
    return build.build_image(
        client.api,
        tag=f"{TEST_IMAGE}-apt-{EARLIER_DAY}",
        base_image=BASE_IMAGE,
        ca_certs=ca_certs(),
        apt_refresh=EARLIER_DAY,
    )
