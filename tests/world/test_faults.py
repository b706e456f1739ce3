"""Faults the box must survive with nothing lost, against the real engine.

Each test breaks one thing (the worker crashes, the engine restarts, two `box start`
race, the container is removed by hand, settings.env holds garbage, the image is
gone), shows what box does about it, and then that the login, the device key,
tools.json and settings.env in the volume are byte-identical to before
(tests/harness/keep.py). Everything runs through the real `box` command on the
harness's internal networks with test-only names (tests/fake_worker/fixtures.py);
the module sets up one volume, and each test leaves it as it found it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import docker
import pytest

from imdbox import engine, names, settings, startup, volume
from tests.conftest import IN_CI
from tests.fake_worker.fixtures import copy_of, remove_container
from tests.harness.keep import KEPT, kept_files
from tests.harness.topology import check_targets, start_again

DEFAULT_SETTINGS = b"RUNTIMES=claude\nCONCURRENCY=2\n"
WORKER = "(^|/)node .*imd start"  # the worker's supervisor (oldest) and the worker itself (newest)


@pytest.fixture(scope="module")
def installed(docker_client, box_image, set_up):
    """Set up, paired (the stand-in pairs at once), with a login planted: all four kept files exist."""
    with copy_of(docker_client, box_image, set_up, paired=True, login=True) as env:
        files = kept_files(docker_client, env)
        assert all(files.values()), {p: v is not None for p, v in files.items()}
        assert files[settings.PATH] == DEFAULT_SETTINGS
        yield env


@pytest.fixture
def bx(docker_client, installed):
    """The module's volume; after the test its box is gone and settings.env is the default again."""
    yield installed
    remove_container(docker_client, installed)
    if kept_files(docker_client, installed)[settings.PATH] != DEFAULT_SETTINGS:
        _put_settings(docker_client, installed, DEFAULT_SETTINGS)


def _put_settings(client, env, data: bytes) -> None:
    """Write settings.env into the volume through a container that never runs."""
    helper = client.containers.create(
        env.image,
        command=["true"],
        volumes={env.volume: {"bind": names.HOME, "mode": "rw"}},
        network_mode="none",
        labels={"imd-test": "1"},
    )
    try:
        assert helper.put_archive(f"{names.HOME}/.imd-box", volume.file_tar("settings.env", data, names.UID))
    finally:
        helper.remove(force=True)


def _container(client, name):
    try:
        return client.containers.get(name)
    except docker.errors.NotFound:
        return None


def _poll(what: str, check, timeout: float = 60.0, every: float = 0.3):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(every)


def _up_again(container, walls_lines: int):
    """The box ran its entrypoint `walls_lines` times in all, and its worker runs."""

    def check():
        container.reload()
        return (
            container.status == "running"
            and container.logs().count(startup.WALLS_UP) >= walls_lines
            and engine.worker_running(container)
        )

    _poll(f"the box running again with its walls verified ({walls_lines} times)", check, timeout=90)


def _one_line(r) -> str:
    assert "Traceback" not in r.all, r.all
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.all
    return lines[0]


# ------------------------------------------------------------------ the worker crashes
@pytest.mark.parametrize(
    "signal_name, pick, ended",
    [
        # The worker (the newest) crashes: an error line, exit 3, which its supervisor passes on.
        ("USR2", "-n", "the worker exited with code 3 (the worker said: Error: the stand-in crashed"),
        # The worker's supervisor, tini's child, is killed outright: no word from it at all.
        ("KILL", "-o", "the worker was killed by SIGKILL (exit code 137)"),
    ],
    ids=["exits-non-zero", "sigkilled"],
)
def test_a_crashed_worker_comes_back_behind_its_walls(docker_client, bx, signal_name, pick, ended):
    before = kept_files(docker_client, bx)
    assert bx.run("start").returncode == 0
    c = docker_client.containers.get(bx.container)
    assert c.logs().count(startup.WALLS_UP) == 1 and c.attrs["RestartCount"] == 0
    r = c.exec_run(["pgrep", pick, "-f", WORKER], user="imd")
    assert r.exit_code == 0, r.output  # the process is there
    # Sent detached: the supervisor's end stops the box, and an exec still running then (the
    # sender, before it reports) dies with it, exit 137.
    c.exec_run(["kill", f"-{signal_name}", r.output.decode().split()[0]], user="imd", detach=True)
    # Docker restarts it (unless-stopped); the entrypoint sets and verifies the walls again.
    _up_again(c, walls_lines=2)
    assert c.attrs["RestartCount"] == 1
    r = bx.run("status")
    assert r.returncode == 0, r.all
    assert f"box:       {bx.container}: running" in r.stdout
    assert "restarts:  1, the last after an exit at " in r.stdout, r.stdout
    assert f"last error: {ended}" in r.stdout, r.stdout  # one prefix: box's
    assert "health:    " in r.stdout
    assert kept_files(docker_client, bx) == before


# ------------------------------------------------------------------ two `box start` at once
def test_two_starts_at_the_same_moment_make_one_box(docker_client, bx):
    before = kept_files(docker_client, bx)
    bx.hold_slot()  # the box the two make
    argv = [sys.executable, "-m", "imdbox", "start"]
    procs = [
        subprocess.Popen(
            argv, cwd=str(names.REPO_ROOT), env=bx.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        for _ in range(2)
    ]  # fmt: skip
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        outs.append((p.returncode, out, err))
    assert [code for code, _, _ in outs] == [0, 0], outs
    assert [err for _, _, err in outs] == ["", ""], outs
    won = [out for _, out, _ in outs if "walls up and verified; the worker is running" in out]
    lost = [out for _, out, _ in outs if "already running" in out]
    assert len(won) == 1 and len(lost) == 1, outs
    assert lost[0].strip() == f"✓ the box is already running ({bx.container}); `box logs` to watch it", outs
    boxes = docker_client.containers.list(all=True, filters={"volume": bx.volume})
    assert [b.name for b in boxes] == [bx.container] and boxes[0].status == "running"
    assert kept_files(docker_client, bx) == before


def test_control_the_engine_gives_the_name_to_one_create_only(docker_client, box_image):
    """The race box start handles is real: two creates of one name at once, one 409."""
    name = f"imdt-race-{uuid.uuid4().hex[:8]}"
    results: list = []
    go = threading.Barrier(2)

    def create():
        go.wait()
        try:
            docker_client.api.create_container(
                box_image, command=["true"], name=name, labels={"imd-test": "1"}, network_disabled=True
            )
            results.append("created")
        except docker.errors.APIError as exc:
            results.append(exc.status_code)

    threads = [threading.Thread(target=create) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        try:
            docker_client.api.remove_container(name, force=True)
        except docker.errors.NotFound:
            pass
    assert sorted(results, key=str) == [409, "created"], results


# ------------------------------------------------------------------ removed by hand
def test_a_box_removed_by_hand_is_named_and_recreated(docker_client, bx):
    before = kept_files(docker_client, bx)
    assert bx.run("start").returncode == 0
    r = bx.run("status")
    assert f"box:       {bx.container}: running" in r.stdout, r.all  # the control
    docker_client.containers.get(bx.container).remove(force=True)  # `docker rm -f`
    r = bx.run("status")
    assert "Traceback" not in r.all, r.all
    assert (
        f"box:       {bx.container}: GONE: there is no container (removed outside box, e.g. `docker rm -f` "
        "or Docker Desktop, or never started); the volume is kept: `box start` creates it again"
    ) in r.stdout, r.all
    r = bx.run("start")
    assert r.returncode == 0 and "the worker is running" in r.stdout, r.all
    assert docker_client.containers.get(bx.container).status == "running"
    assert kept_files(docker_client, bx) == before


# ------------------------------------------------------------------ garbage in settings.env
GARBAGE = {
    "binary": bytes(range(256)),
    "unknown key": b"RUNTIMES=claude\nCONCURRENCY=2\nEXTRA=1\n",
    "bad value": b"RUNTIMES=claude\nCONCURRENCY=lots\n",
}


def test_garbage_settings_are_named_with_their_fix(docker_client, bx):
    before = kept_files(docker_client, bx)
    r = bx.run("runtime")  # the control: good settings read fine
    assert r.returncode == 0 and "runtime(s): claude (concurrency 2)" in r.stdout, r.all
    for label, garbage in GARBAGE.items():
        _put_settings(docker_client, bx, garbage)
        for cmd in (["start"], ["status"], ["runtime"]):
            r = bx.run(*cmd)
            assert r.returncode == 1, (label, cmd, r.all)
            line = _one_line(r)
            assert line.startswith(f"box: {settings.PATH} in the volume {bx.volume} is damaged ("), (label, cmd, line)
            assert line.endswith("run `box runtime claude` (or `box setup`) to write it again"), (label, cmd, line)
        assert _container(docker_client, bx.container) is None, label  # start made nothing
    # The fix the line names rewrites the file; the rest of the volume is untouched.
    r = bx.run("runtime", "claude")
    assert r.returncode == 0, r.all
    assert kept_files(docker_client, bx) == before
    assert bx.run("runtime").returncode == 0


# ------------------------------------------------------------------ the image is gone
def test_every_command_says_how_to_get_a_missing_image_back(docker_client, bx, box_image):
    before = kept_files(docker_client, bx)
    r = bx.run("shell", "true")  # the control: with the image, the command runs
    assert r.returncode == 0, r.all
    repo, tag = bx.image.split(":")
    docker_client.images.remove(bx.image)  # the tag only: the test image keeps its own
    try:
        for cmd in (
            ["start"],
            ["setup", "--no-shell"],
            ["check", "--url", "http://198.51.100.10/"],
            ["shell", "true"],
            ["status"],
            ["runtime"],
            ["runtime", "codex"],
            ["remove", "--yes"],
        ):
            r = bx.run(*cmd)
            assert r.returncode == 1, (cmd, r.all)
            line = _one_line(r)
            assert f"{bx.image}" in line and "box pull" in line and "box build" in line, (cmd, line)
    finally:
        docker_client.images.get(box_image).tag(repo, tag)
    assert _container(docker_client, bx.container) is None
    assert kept_files(docker_client, bx) == before


# ------------------------------------------------------------------ the engine restarts (last)
def _dockerd() -> tuple[int, list[str], dict[str, str], str]:
    """The engine's process on this machine: pid, command line, environment, directory."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "dockerd":
                continue
        except OSError:
            continue  # a process that ended since the listing
        try:
            argv = (entry / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            environ = (entry / "environ").read_bytes().rstrip(b"\0").split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError as exc:
            _cannot(f"dockerd (pid {entry.name}) is not ours to restart: {exc}")
        if not host.startswith("unix://"):
            _cannot(f"DOCKER_HOST={host} is not this machine's dockerd")
        env = dict(e.decode().split("=", 1) for e in environ if b"=" in e)
        return int(entry.name), [a.decode() for a in argv], env, cwd
    _cannot("dockerd is not a process on this machine (Docker Desktop, or a remote engine)")
    raise AssertionError("unreachable")


def _cannot(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason}; CI=true on this machine: the engine restart must run", pytrace=False)
    pytest.skip(reason)


def _restart_engine(client) -> None:
    """Restart dockerd as it was started here: SIGTERM, wait for it to exit, the same
    command again, detached, its log appended to /var/log/dockerd.log."""
    pid, argv, env, cwd = _dockerd()
    os.kill(pid, signal.SIGTERM)
    _poll("dockerd exits after SIGTERM", lambda: not Path(f"/proc/{pid}").exists(), timeout=120)
    with open("/var/log/dockerd.log", "ab") as log:
        subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # nohup: no terminal, no SIGHUP, outlives this session
        )  # fmt: skip

    def answers():
        try:
            return client.ping()  # the session's own client: the SDK connects anew per request
        except Exception:
            return False

    _poll("the engine answers again", answers, timeout=120, every=0.5)


@pytest.mark.engine_restart
def test_the_box_comes_back_after_the_engine_restarts(docker_client, bx, topology, tmp_path):
    _dockerd()  # skips (or fails under CI) before anything is changed
    before = kept_files(docker_client, bx)
    assert bx.run("start").returncode == 0
    c = docker_client.containers.get(bx.container)
    listening = {t.name: t.logs().count(b"listening:") for t in topology.containers}
    _restart_engine(docker_client)
    assert docker_client.info()["ID"]  # the session's client works after the restart
    # The harness's listeners have no restart policy: they stayed down. `box check` aims at
    # them (the internet, and Docker's resolver knows a listener by name), so start them
    # again, while the box comes back on its own.
    start_again(topology)
    _up_again(c, walls_lines=2)  # its restart policy brought it back, behind walls verified again
    for t in topology.containers:
        _poll(f"{t.name} listening again", lambda t=t: t.logs().count(b"listening:") > listening[t.name], timeout=30)
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps(dataclasses.asdict(check_targets())))
    r = bx.run("check", "--url", "http://198.51.100.10/", "--targets", str(targets), timeout=180)
    assert r.returncode == 0 and "all ok" in r.all, r.all
    r = bx.run("status")
    assert f"box:       {bx.container}: running" in r.stdout, r.all
    assert kept_files(docker_client, bx) == before
    assert len(KEPT) == 4
