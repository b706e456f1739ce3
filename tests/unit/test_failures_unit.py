"""How `box setup`, `box build`, `box pull` and `box update` fail, in-process: one line at the
end, what went wrong then what to do, no prefix of the box's beside box's own, nothing said
twice. The same failures against the engine: tests/world/test_faults_install.py (setup),
tests/world/test_cli_build.py (build) and tests/world/test_cli_pull.py (pull)."""

from __future__ import annotations

import pytest

from imdbox import build, images, layout
from tests.harness import fake_engine
from tests.harness.fake_engine import FakeClient, box, one_error_line

world = fake_engine.world  # its fixture: the fake engine, the commands' verbs stood in

PULL, BUILD = images.pull, images.build  # the real ones: the world stands them in
MIRROR = "http://mirror.invalid/v2"
DOWNLOAD_FAILED = (
    f"imd-box: FAILED: could not download {MIRROR}/identitymd-worker.tgz (Could not resolve host: mirror.invalid); "
    "the installed worker (if any) is unchanged"
)


def install_fails(said: str):
    """install.sh's worker step as it prints a failure (its last line), after its first."""

    def oneoff(role, command, env):
        if command == [layout.INSTALL_SH, "worker"]:
            return 1, f"imd-box: downloading the worker release from {MIRROR}\n{said}\n"
        return 0, ""

    return oneoff


def test_a_failed_download_ends_setup_in_one_line_with_what_to_do(world):
    world.oneoff = install_fails(DOWNLOAD_FAILED)
    result = box("setup", "--no-shell", "--worker-url", MIRROR)
    assert result.exit_code == 1
    assert one_error_line(result) == (
        f"box: could not download {MIRROR}/identitymd-worker.tgz (Could not resolve host: mirror.invalid); "
        "the installed worker (if any) is unchanged: check that this machine reaches it (or name a mirror: "
        "`box setup --worker-url URL`), then run `box setup` again"
    )
    assert "FAILED" not in result.output  # said once, as box's own line
    assert result.output.count("Could not resolve host") == 1
    assert f"downloading the worker release from {MIRROR}" in result.stdout  # the progress before it stays


def test_any_other_failed_install_step_says_to_run_the_command_again(world):
    world.oneoff = install_fails(
        "imd-box: FAILED: npm could not install the worker (the installed worker, if any, is unchanged)"
    )
    result = box("--seat", "alice", "setup", "--no-shell")
    assert one_error_line(result) == (
        "box: npm could not install the worker (the installed worker, if any, is unchanged): "
        "run `box --seat alice setup` again"
    )


def test_twin_a_box_line_that_is_no_failed_step_is_said_as_it_is(world):
    # What the box said last when install.sh said no FAILED line (its entrypoint's refusal).
    world.oneoff = install_fails("imd-box: the firewall could not be set up; the worker was not started")
    result = box("setup", "--no-shell")
    assert one_error_line(result) == (
        "box: the firewall could not be set up; the worker was not started: run `box setup` again"
    )


class FakeApi:
    def __init__(self, events):
        self.events = events

    def pull(self, repo, tag, stream, decode):
        return iter(self.events)

    def build(self, **kwargs):
        return iter(self.events)


def with_api(monkeypatch, events):
    monkeypatch.setattr(FakeClient, "api", FakeApi(events), raising=False)
    monkeypatch.setattr(images, "pull", PULL)
    monkeypatch.setattr(images, "build", BUILD)


def test_a_pull_without_the_registry_says_box_build(world, monkeypatch):
    refused = 'Get "https://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused'
    with_api(monkeypatch, [{"error": refused + "\n"}])
    result = box("pull", "--image", "127.0.0.1:1/imdt-box:x")
    assert result.exit_code == 1
    assert one_error_line(result) == (
        f"box: could not pull 127.0.0.1:1/imdt-box:x ({refused}): build the image from this checkout instead: "
        "`box build`"
    )


STEPS = [
    {"stream": "Step 1/40 : ARG BASE_IMAGE=debian:trixie-slim\n"},
    {"stream": " ---> Running in 0123\n"},
    {"stream": "Step 2/40 : FROM ${BASE_IMAGE} AS fetch\n"},
]


def test_a_build_without_its_base_image_says_the_ways_out(world, monkeypatch):
    error = "pull access denied for imdt-no-base, repository does not exist or may require 'docker login'"
    world.image = None  # no current image: the base is the one given
    with_api(monkeypatch, [*STEPS, {"error": error + "\n"}])
    result = box("build", "--base-image", "imdt-no-base:trixie")
    assert result.exit_code == 1
    assert one_error_line(result) == (
        f"box: the base image imdt-no-base:trixie is not on this engine and could not be pulled ({error}): "
        "make one from Debian's archive with `scripts/make-base-image.sh` and build with `--base-image` and the "
        "name it prints, or name with `--base-image` a Debian trixie image this engine has"
    )
    # Its steps were shown as they ran, and once.
    assert result.output.count("Step 2/40 : FROM ${BASE_IMAGE} AS fetch") == 1
    assert result.output.count("Running in 0123") == 1


def test_twin_a_step_past_the_base_that_fails_names_its_step(world, monkeypatch):
    world.image = None
    steps = [*STEPS, {"stream": "Step 3/40 : RUN apt-get update\n"}, {"stream": "E: no network\n"}]
    with_api(monkeypatch, [*steps, {"error": "The command '/bin/sh -c apt-get update' returned a non-zero code: 100"}])
    result = box("build")
    assert one_error_line(result) == (
        "box: the image build failed at 3/40: The command '/bin/sh -c apt-get update' returned a non-zero code: 100: "
        "fix what its output above names, then build again"
    )
    assert result.output.count("E: no network") == 1


@pytest.mark.parametrize("step", ["", "Step 7/40 : COPY image/ /x/"])
def test_a_failed_step_is_one_line(step):
    assert "\n" not in str(build.failed_step(step, "a\nb\n", "base"))
