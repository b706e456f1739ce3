"""Two seats side by side on the real engine: each its own box, volume, settings and
identity (the fake worker's), and what is done to one leaves the other untouched.

The seats' names hang off a box env's test-only names (IMD_BOX_CONTAINER/VOLUME), so
seat `a` is `<container>-a` and `<volume>-a`; every one of them is removed whether the
test passes or fails.
"""

from __future__ import annotations

import re

import docker
import pytest

from imdbox import runflags
from tests.fake_worker.fixtures import box_env

SEATS = ("a", "b")


@pytest.fixture
def two_seats(docker_client, box_image, feed):
    with box_env(docker_client, box_image) as env:
        try:
            yield env
        finally:
            for seat in SEATS:
                for c in docker_client.containers.list(all=True, filters={"volume": f"{env.volume}-{seat}"}):
                    c.remove(force=True)
                try:
                    docker_client.containers.get(f"{env.container}-{seat}").remove(force=True)
                except docker.errors.NotFound:
                    pass
                try:
                    docker_client.volumes.get(f"{env.volume}-{seat}").remove(force=True)
                except docker.errors.NotFound:
                    pass


def _state(client, name: str) -> tuple[str, int]:
    try:
        c = client.containers.get(name)
    except docker.errors.NotFound:
        return "gone", 0
    return c.status, c.attrs["RestartCount"]


def _row(table: str, seat: str) -> list[str]:
    """A seat's row of `box seats`, split on its column gaps (two spaces or more)."""
    for line in table.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] == seat:
            return cells
    raise AssertionError(f"no row for seat {seat}:\n{table}")


def test_two_seats_run_side_by_side_and_one_goes_alone(docker_client, two_seats):
    env = two_seats
    keys = {}
    for seat in SEATS:
        r = env.run("--seat", seat, "setup", "--no-shell")
        assert r.returncode == 0, r.all
        assert f"created the volume {env.volume}-{seat}" in r.stdout
        r = env.run("--seat", seat, "shell", "imd", "pair")
        assert r.returncode == 0 and "  Paired. Token " in r.stdout, r.all
        r = env.run("--seat", seat, "shell", "imd", "whoami")
        assert r.returncode == 0, r.all
        keys[seat] = r.stdout.strip()
    assert keys["a"] != keys["b"], "each seat is its own identity"
    # Seat b runs codex, seat a keeps claude: their settings are their own.
    r = env.run("--seat", "b", "runtime", "codex")
    assert r.returncode == 0, r.all
    for seat in SEATS:
        r = env.run("--seat", seat, "start")
        assert r.returncode == 0, r.all
        assert _state(docker_client, f"{env.container}-{seat}")[0] == "running"
        # What run.sh's messages tell the user to run names this seat (test_settings shows it).
        config = docker_client.containers.get(f"{env.container}-{seat}").attrs["Config"]
        assert f"{runflags.BOX_COMMAND_ENV}=box --seat {seat}" in config["Env"]
    assert _state(docker_client, env.container)[0] == "gone", "the seat without a name was never made"

    r = env.run("seats")
    assert r.returncode == 0, r.all
    a, b = _row(r.stdout, "a"), _row(r.stdout, "b")
    assert a[1:4] == ["running", "claude ×2", "0"], r.stdout
    assert b[1:4] == ["running", "codex ×2", "0"], r.stdout
    assert a[4].startswith("token ") and b[4].startswith("token ") and a[4] != b[4], r.stdout

    before_b = _state(docker_client, f"{env.container}-b")
    r = env.run("--seat", "a", "stop")
    assert r.returncode == 0 and "stopped" in r.stdout, r.all
    assert _state(docker_client, f"{env.container}-a")[0] == "exited"
    assert _state(docker_client, f"{env.container}-b") == before_b

    r = env.run("--seat", "a", "remove", "--yes")
    assert r.returncode == 0, r.all
    assert f"removed the volume {env.volume}-a" in r.stdout
    assert f"kept the image {env.image}: the other seats use it too (b)" in r.stdout
    assert _state(docker_client, f"{env.container}-a")[0] == "gone"
    assert _state(docker_client, f"{env.container}-b") == before_b
    docker_client.images.get(env.image)
    r = env.run("--seat", "b", "shell", "imd", "whoami")
    assert r.returncode == 0 and r.stdout.strip() == keys["b"], r.all

    r = env.run("seats")
    assert r.returncode == 0 and _row(r.stdout, "b")[1] == "running", r.all
    assert "\na " not in r.stdout and not r.stdout.startswith("a "), r.stdout
    r = env.run("--seat", "b", "stop")
    assert r.returncode == 0, r.all
