"""A small fake engine, in-process, for what box's commands decide (tests/unit): the SDK objects
engine.py reads (a container, a volume, the image) as small stand-ins, and the verbs that would run
a box (reading and writing the volume, one-off boxes, the walls coming up) replaced by a world that
keeps the state in memory (the `world` fixture); `box(...)` runs a command in-process."""

from __future__ import annotations

import docker.errors
import pytest
from typer.testing import CliRunner

from imdbox import cli, engine, hostaddrs, images, names, runflags, settings, startup, volume, worker
from imdbox.config import Config
from imdbox.endpoint import Endpoint

# The released worker's help, as its USAGE has it (build 0.1.0+47df9c68), around the lines box reads.
REAL_HELP = """imd-box firewall: walls up and verified
imd \u2014 IdentityMD contributor daemon (v0.1.0+47df9c68)

  imd start    Connect and make this machine available for work.
               imd service restart [--runtime claude|codex]
Options:
  --server <url>       control plane to join (default: https://api.imd.fun)
  --concurrency <1-4>  how many tasks this machine runs at once
  --runtime <id>       which agent runs tasks here: claude or codex. Default:
                       the first of those that is installed, so a machine with
                       both runs claude. This machine then advertises only the
"""

SETTINGS = settings.PATH
GOOD_SETTINGS = b"RUNTIMES=claude\nCONCURRENCY=2\n"


class FakeContainer:
    def __init__(self, world, name, labels, restart, memory=0):
        self.world = world
        self.name = name
        self.labels = labels
        self.restart = restart
        self.memory = memory
        self.status = "created"
        self.worker = False  # `imd start` in its process list
        self.paired = None  # the token `imd status` says, once paired

    @property
    def attrs(self):
        running = self.status == "running"
        return {
            "State": {"Status": self.status, "Running": running, "Restarting": False, "ExitCode": 0},
            "RestartCount": 0,
            "Created": "0001-01-01T00:00:00Z",
            "HostConfig": {"Memory": self.memory},
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
        del self.world.boxes[self.name]

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
        self.containers = NotFoundMap(world.boxes.get)
        self.containers.create = self._create
        self.containers.list = self._running_workers
        self.volumes = NotFoundMap(lambda n: FakeVolume(world, n) if n in world.volumes else None)
        self.volumes.create = lambda name, labels: world.volumes.setdefault(name, {})
        self.volumes.list = lambda filters: [FakeVolume(world, n) for n in world.volumes]
        self.images = NotFoundMap(lambda n: world.image if n == DEFAULT.image else None, docker.errors.ImageNotFound)
        self.images.remove = lambda tag: world.log.append(f"rmi {tag}")

    def info(self):
        return {"NCPU": 4, "MemTotal": self.world.memory}

    def _create(self, **kwargs):
        if kwargs["name"] in self.world.boxes:
            raise docker.errors.APIError("Conflict", response=type("R", (), {"status_code": 409})())
        self.world.log.append("create")
        restart = (kwargs.get("restart_policy") or {}).get("Name")
        box = FakeContainer(self.world, kwargs["name"], kwargs["labels"], restart, kwargs["mem_limit"])
        self.world.boxes[box.name] = box
        return box

    def _running_workers(self, filters, ignore_removed):
        assert filters == {"label": f"{names.LABEL}.role=worker"} and ignore_removed
        return [b for b in self.world.boxes.values() if b.status == "running"]


class FakeVolume:
    def __init__(self, world, name):
        self.world = world
        self.name = name

    def remove(self, force):
        self.world.log.append("remove volume")
        del self.world.volumes[self.name]


class FakeImage:
    attrs = {"RepoDigests": [], "Created": "2026-11-30T10:00:00.5Z"}
    tags = [names.DEFAULT_IMAGE]
    short_id = "sha256:0123456789ab"


DEFAULT = Config()  # the names the in-process CLI uses (no IMD_BOX_* in the tests' environment)


class World:
    """The engine's state: the image, the volumes' files, the boxes. `container` and
    `volume` are the seat's without a name, or `seat`'s (container_of, volume_of)."""

    def __init__(self):
        self.image = FakeImage()
        self.volumes: dict[str, dict] = {}
        self.boxes: dict[str, FakeContainer] = {}
        self.memory = 8 << 30
        self.log: list[str] = []
        self.reads: list[list[str]] = []  # the files each box on a volume read
        self.starts_ok = True
        self.oneoff = lambda role, command, env: (0, "")  # what a one-off box does

    def container_of(self, seat):
        return self.boxes.get(DEFAULT.seat_names(seat)[0])

    @property
    def container(self):
        return self.container_of(None)

    @property
    def volume(self):
        return self.volumes.get(DEFAULT.volume)

    @volume.setter
    def volume(self, files):
        if files is None:
            self.volumes.pop(DEFAULT.volume, None)
        else:
            self.volumes[DEFAULT.volume] = files

    def set_up(self, settings_text=GOOD_SETTINGS):
        self.volume = {engine.IMD_PATH: b"#!imd", SETTINGS: settings_text}

    def run_box(self, seat=None):
        """A box that `box start` made and that is running its worker."""
        name = DEFAULT.seat_names(seat)[0]
        box = FakeContainer(self, name, {names.LABEL: "1"}, "unless-stopped", runflags.MAX_MEMORY)
        box.status, box.worker = "running", True
        self.boxes[box.name] = box

    def oneoff_run(self, eng, flags, on_line=lambda s: None, files=None):
        self.log.append(f"oneoff {flags.role} {' '.join(flags.command or [])}")
        code, out = self.oneoff(flags.role, list(flags.command or []), flags.environment)
        for line in out.splitlines():
            on_line(line)
        return code, out

    def exec_as_imd(self, container, command):
        assert command == worker.STATUS_COMMAND
        token = container.paired
        return 0, f"  server    https://imd.invalid\n  token     {token or 'not paired yet'}\n"

    def read_files(self, eng, paths):
        """What a box on the volume reads: one such box per call."""
        self.reads.append(sorted(p.rsplit("/", 1)[-1] for p in paths))
        files = self.volumes.setdefault(eng.cfg.volume, {})  # a box on a volume makes it
        return {path: files.get(path) for path in paths}

    def write(self, eng, path, data):
        self.log.append(f"write {path.rsplit('/', 1)[-1]}={data.decode().strip()}")
        self.volumes[eng.cfg.volume][path] = data


@pytest.fixture
def world(monkeypatch):
    w = World()
    for key in ("IMD_BOX_IMAGE", "IMD_BOX_CONTAINER", "IMD_BOX_VOLUME", "IMD_BOX_NETWORK"):
        monkeypatch.delenv(key, raising=False)
    here = Endpoint("unix:///var/run/docker.sock", "the local socket")
    monkeypatch.setattr(engine, "connect", lambda cfg: engine.Engine(FakeClient(w), cfg, here))  # one per command
    monkeypatch.setattr(volume, "read_files", w.read_files)
    monkeypatch.setattr(volume, "write_file", w.write)
    monkeypatch.setattr(engine, "run_oneoff", w.oneoff_run)
    monkeypatch.setattr(engine, "exec_as_imd", w.exec_as_imd)
    monkeypatch.setattr(engine, "worker_running", lambda container: container.worker)
    monkeypatch.setattr(startup, "wait_started", lambda container, **_: (container.worker, container.logs().decode()))
    monkeypatch.setattr(hostaddrs, "collect", lambda client, image, engine_url, prefix: ())
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
