"""What the commands decide, run in-process against a small fake engine.

`lifecycle` only orchestrates: it asks the engine's verbs (engine.py) and says what
happened. Here the verbs that would run a box (reading and writing the volume, one-off
boxes, the walls coming up) are replaced by a fake that keeps the state in memory, and
the SDK objects the rest of engine.py reads (the container, the volume, the image) are
small stand-ins. The real engine's side is tested against Docker in the other files;
these cover the decisions: what is made, stopped, removed or kept, in which order, and
the one line the user reads, in milliseconds each.
"""

from __future__ import annotations

import docker.errors
import pytest
from typer.testing import CliRunner

from imdbox import cli, engine, hostaddrs, images, lifecycle, names, settings
from tests.test_cli_unit import REAL_HELP

SETTINGS = settings.PATH
GOOD_SETTINGS = b"RUNTIMES=claude\nCONCURRENCY=2\n"


class FakeContainer:
    def __init__(self, world, labels, restart):
        self.world = world
        self.labels = labels
        self.restart = restart
        self.status = "created"
        self.worker = False  # `imd start` in its process list

    @property
    def attrs(self):
        running = self.status == "running"
        return {
            "State": {"Status": self.status, "Running": running, "Restarting": False, "ExitCode": 0},
            "RestartCount": 0,
            "Created": "0001-01-01T00:00:00Z",
        }

    def reload(self):
        pass

    def start(self):
        self.world.log.append("start")
        self.status = "running"
        self.worker = self.world.starts_ok

    def stop(self, timeout):
        self.world.log.append("stop")
        self.status = "exited"
        self.worker = False

    def remove(self, force):
        self.world.log.append("remove")
        self.world.container = None

    def logs(self, **_):
        return b"imd-box: FAILED: the firewall did not apply\n" if not self.world.starts_ok else b""


class NotFoundMap:
    """A collection of the SDK's: get() raises its NotFound."""

    def __init__(self, get, error=docker.errors.NotFound):
        self._get, self._error = get, error

    def get(self, name):
        found = self._get(name)
        if found is None:
            raise self._error(name)
        return found


class FakeClient:
    def __init__(self, world):
        self.world = world
        self.containers = NotFoundMap(lambda n: world.container if n == names.CONTAINER else None)
        self.containers.create = self._create
        self.volumes = NotFoundMap(
            lambda n: FakeVolume(world) if n == names.VOLUME and world.volume is not None else None
        )
        self.volumes.create = lambda name, labels: setattr(world, "volume", {})
        self.images = NotFoundMap(lambda n: world.image if n == names.IMAGE else None, docker.errors.ImageNotFound)
        self.images.remove = lambda tag: world.log.append(f"rmi {tag}")

    def info(self):
        return {"NCPU": 4, "MemTotal": 8 << 30}

    def _create(self, **kwargs):
        if self.world.container is not None:
            raise docker.errors.APIError("Conflict", response=type("R", (), {"status_code": 409})())
        self.world.log.append("create")
        restart = (kwargs.get("restart_policy") or {}).get("Name")
        self.world.container = FakeContainer(self.world, kwargs["labels"], restart)
        return self.world.container


class FakeVolume:
    def __init__(self, world):
        self.world = world

    def remove(self, force):
        self.world.log.append("remove volume")
        self.world.volume = None


class FakeImage:
    attrs = {"RepoDigests": [], "Created": "2026-11-30T10:00:00.5Z"}
    tags = [names.IMAGE]
    short_id = "sha256:0123456789ab"


class World:
    """The engine's state: the image, the volume's files (None: no volume), the box."""

    def __init__(self):
        self.image = FakeImage()
        self.volume = None
        self.container = None
        self.log: list[str] = []
        self.starts_ok = True
        self.oneoff = lambda role, command, env: (0, "")  # what a one-off box does

    def set_up(self, settings_text=GOOD_SETTINGS):
        self.volume = {engine.IMD_PATH: b"#!imd", SETTINGS: settings_text}

    def run_box(self):
        """A box that `box start` made and that is running its worker."""
        self.container = FakeContainer(self, {names.LABEL: "1"}, "unless-stopped")
        self.container.status, self.container.worker = "running", True

    def oneoff_run(self, client, flags, on_line=lambda s: None, files=None):
        self.log.append(f"oneoff {flags.role} {' '.join(flags.command or [])}")
        code, out = self.oneoff(flags.role, list(flags.command or []), flags.environment)
        for line in out.splitlines():
            on_line(line)
        return code, out

    def read(self, client, path):
        return None if self.volume is None else self.volume.get(path)

    def write(self, client, path, data):
        self.log.append(f"write {path.rsplit('/', 1)[-1]}={data.decode().strip()}")
        self.volume[path] = data


@pytest.fixture
def world(monkeypatch):
    w = World()
    client = FakeClient(w)
    monkeypatch.setattr(engine, "connect", lambda: client)
    monkeypatch.setattr(engine, "read_volume_file", w.read)
    monkeypatch.setattr(engine, "write_volume_file", w.write)
    monkeypatch.setattr(engine, "volume_has", lambda c, path: w.read(c, path) is not None)
    monkeypatch.setattr(engine, "run_oneoff", w.oneoff_run)
    monkeypatch.setattr(engine, "worker_running", lambda container: container.worker)
    monkeypatch.setattr(engine, "wait_started", lambda container, **_: (container.worker, container.logs().decode()))
    monkeypatch.setattr(hostaddrs, "collect", lambda client, image: ())
    monkeypatch.setattr(images, "build", lambda *a, **k: w.log.append("build"))
    monkeypatch.setattr(images, "pull", lambda *a, **k: w.log.append("pull"))
    return w


def box(*args: str):
    result = CliRunner().invoke(cli.app, list(args))
    assert "Traceback" not in result.output
    return result


def one_error_line(result) -> str:
    errors = [line for line in result.stderr.splitlines() if line.startswith("box: ")]
    assert len(errors) == 1, result.output
    return errors[0]


# ------------------------------------------------------------------ start / stop
def test_start_makes_the_box_with_its_restart_policy(world):
    world.set_up()
    result = box("start")
    assert result.exit_code == 0, result.output
    assert world.log == ["create", "start"]
    assert world.container.restart == "unless-stopped" and world.container.labels[names.LABEL] == "1"
    assert "walls up and verified" in result.stdout


def test_start_when_running_changes_nothing(world):
    world.set_up()
    world.run_box()
    result = box("start")
    assert result.exit_code == 0 and "already running" in result.stdout
    assert world.log == []


def test_start_replaces_a_stopped_box(world):
    world.set_up()
    world.run_box()
    world.container.status = "exited"
    assert box("start").exit_code == 0
    assert world.log == ["remove", "create", "start"]


@pytest.mark.parametrize(
    "prepare, says",
    [
        (lambda w: None, "no volume"),
        (lambda w: setattr(w, "volume", {}), "no worker installed"),
        (lambda w: w.set_up(b"RUNTIMES=claude\n"), "settings.env"),
        (lambda w: setattr(w, "image", None), "box pull"),
    ],
    ids=["no-volume", "no-worker", "damaged-settings", "no-image"],
)
def test_start_that_cannot_start_makes_nothing(world, prepare, says):
    prepare(world)
    result = box("start")
    assert result.exit_code == 1
    assert says in one_error_line(result)
    assert world.log == [] and world.container is None


def test_a_box_that_does_not_start_is_removed_with_its_reason(world):
    world.set_up()
    world.starts_ok = False
    result = box("start")
    assert result.exit_code == 1
    assert "the box did not start, and was removed (no restart loop)" in one_error_line(result)
    assert "the firewall did not apply" in one_error_line(result)
    assert world.log == ["create", "start", "remove"] and world.container is None


def test_stop(world):
    result = box("stop")
    assert result.exit_code == 0 and "not running" in result.stdout and world.log == []
    world.set_up()
    world.run_box()
    assert box("stop").exit_code == 0
    assert world.log == ["stop"] and world.container.status == "exited"  # kept: `box start` replaces it


# ------------------------------------------------------------------ update
def agents_install(role, command, env):
    assert role == "setup" and command == [engine.INSTALL_SH, "agents"]
    assert env["IMD_BOX_RUNTIMES"] == "claude" and env["IMD_BOX_CONCURRENCY"] == "2"
    return 0, "agents refreshed"


def test_update_of_a_running_box_rebuilds_then_brings_it_back(world):
    world.set_up()
    world.run_box()
    world.oneoff = agents_install
    result = box("update")
    assert result.exit_code == 0, result.output
    assert world.log == [
        "build",  # the box keeps running while the image is made
        "write resume-after-update=1",  # noted before the stop: a cut after it is resumed
        "stop",
        "remove",
        f"oneoff setup {engine.INSTALL_SH} agents",
        "create",
        "start",
        "write resume-after-update=0",
    ]
    assert "the box is running again" in result.stdout


def test_update_cut_after_the_stop_starts_the_box_next_time(world):
    world.set_up()
    world.run_box()

    def cut(role, command, env):
        raise KeyboardInterrupt

    world.oneoff = cut
    assert box("update").exit_code == 130
    assert world.container is None and world.volume[lifecycle.RESUME_PATH] == b"1\n"
    world.log.clear()
    world.oneoff = agents_install
    result = box("update")
    assert result.exit_code == 0, result.output
    assert "the box was running when an earlier `box update` was cut short" in result.stdout
    assert world.log[-3:] == ["create", "start", "write resume-after-update=0"]
    assert world.container.status == "running"


def test_update_with_damaged_settings_changes_nothing(world):
    world.set_up(b"RUNTIMES=claude\nCONCURRENCY=9\n")
    world.run_box()
    result = box("update")
    assert result.exit_code == 1 and "CONCURRENCY" in one_error_line(result)
    assert world.log == [] and world.container.status == "running"


def test_update_before_setup_only_rebuilds(world):
    result = box("update")
    assert result.exit_code == 0, result.output
    assert world.log == ["build"] and "setup was not done yet" in result.stdout


# ------------------------------------------------------------------ runtime
def worker_and_install(role, command, env):
    if command == ["imd", "help"]:
        return 0, REAL_HELP
    assert command == [engine.INSTALL_SH, "agents"] and env["IMD_BOX_RUNTIMES"] == "codex"
    return 0, ""


def test_runtime_change_restarts_a_running_worker(world):
    world.set_up()
    world.run_box()
    world.oneoff = worker_and_install
    result = box("runtime", "codex")
    assert result.exit_code == 0, result.output
    assert world.log == [
        "oneoff status imd help",
        f"oneoff setup {engine.INSTALL_SH} agents",
        "stop",
        "remove",
        "create",
        "start",
    ]


def test_runtime_the_worker_cannot_run_changes_nothing(world):
    world.set_up()
    world.run_box()
    world.oneoff = worker_and_install
    result = box("runtime", "claude,codex")
    assert result.exit_code == 1
    assert "this worker runs one runtime at a time" in one_error_line(result)
    assert "nothing was changed" in one_error_line(result)
    assert world.log == ["oneoff status imd help"] and world.container.status == "running"


# ------------------------------------------------------------------ status / remove
def test_status_of_a_box_removed_by_hand(world):
    world.set_up()
    world.volume[engine.WORKER_CONFIG_PATH] = b"{}"
    world.oneoff = lambda role, command, env: (0, "✓ all good")
    result = box("status")
    assert result.exit_code == 0, result.output
    assert "GONE: there is no container" in result.stdout
    assert world.log == ["oneoff status imd doctor --runtime claude"]


def test_remove_without_the_image_frees_no_seat_and_removes_nothing(world):
    world.set_up()
    world.volume[engine.WORKER_CONFIG_PATH] = b"{}"
    world.run_box()
    world.image = None
    result = box("remove", "--yes")
    assert result.exit_code == 1 and "--keep-seat" in one_error_line(result)
    assert world.log == ["stop"] and world.volume is not None and world.container is not None
    world.log.clear()
    result = box("remove", "--yes", "--keep-seat")
    assert result.exit_code == 0, result.output
    assert world.log == ["remove", "remove volume"]


def test_an_unexpected_failure_is_one_line(world, monkeypatch):
    def broken(client):
        raise RuntimeError("the socket said something odd")

    monkeypatch.setattr(engine, "box_container", broken)
    result = box("stop")
    assert result.exit_code == 1
    assert one_error_line(result) == (
        "box: stopped on an unexpected RuntimeError: the socket said something odd (please report it)"
    )
