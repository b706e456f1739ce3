"""Which engine box talks to, decided as the docker CLI decides it, without an engine:
DOCKER_HOST, else DOCKER_CONTEXT, else the current context, else the local socket.
The real engine through tcp:// and a context is in test_remote_engine.py."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from imdbox import cli, names
from imdbox.endpoint import endpoint
from imdbox.errors import BoxError


@pytest.fixture
def docker_config(tmp_path, monkeypatch):
    """An empty docker config folder of this test's own (the user's is never read)."""
    for var in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    return tmp_path


def make_context(config, name: str, host: str) -> None:
    """A context as `docker context create` stores it (the real CLI writes it)."""
    if not shutil.which("docker"):
        pytest.skip("the docker CLI is not installed here")
    r = subprocess.run(
        ["docker", "context", "create", name, "--docker", f"host={host}"],
        env={"DOCKER_CONFIG": str(config), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr


def closed_port() -> int:
    """A loopback port nothing listens on (ours a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_local_socket_by_default(docker_config):
    ep = endpoint(os.environ)
    assert (ep.host, ep.source, ep.context) == ("unix:///var/run/docker.sock", "the local socket", None)
    assert ep.cli("/usr/bin/docker") == ["/usr/bin/docker"]


def test_docker_host_wins_over_any_context(docker_config, monkeypatch):
    make_context(docker_config, "vps", "tcp://127.0.0.1:2")
    (docker_config / "config.json").write_text(json.dumps({"currentContext": "vps"}))
    monkeypatch.setenv("DOCKER_CONTEXT", "vps")
    monkeypatch.setenv("DOCKER_HOST", "ssh://root@127.0.0.1")
    ep = endpoint(os.environ)
    assert (ep.host, ep.source, ep.context) == ("ssh://root@127.0.0.1", "DOCKER_HOST", None)
    assert ep.cli("docker") == ["docker"]  # the CLI reads DOCKER_HOST itself


@pytest.mark.parametrize("how", ["DOCKER_CONTEXT", "docker context use"])
def test_a_context_is_the_engine_for_the_sdk_and_the_cli(docker_config, monkeypatch, how):
    make_context(docker_config, "vps", "tcp://127.0.0.1:2")
    if how == "DOCKER_CONTEXT":
        monkeypatch.setenv("DOCKER_CONTEXT", "vps")
    else:
        (docker_config / "config.json").write_text(json.dumps({"currentContext": "vps"}))
    ep = endpoint(os.environ)
    assert (ep.host, ep.source, ep.context) == ("tcp://127.0.0.1:2", "context vps", "vps")
    assert ep.cli("docker") == ["docker", "--context", "vps"]


def test_a_context_that_is_not_there_is_one_line(docker_config, monkeypatch):
    monkeypatch.setenv("DOCKER_CONTEXT", "gone")
    with pytest.raises(BoxError, match=r"^the docker context gone does not exist here: `docker context ls`"):
        endpoint(os.environ)


@pytest.mark.parametrize("via", ["DOCKER_HOST", "context"])
def test_an_engine_that_does_not_answer_is_one_line_naming_it(docker_config, monkeypatch, via):
    host = f"tcp://127.0.0.1:{closed_port()}"
    if via == "DOCKER_HOST":
        monkeypatch.setenv("DOCKER_HOST", host)
        where, fix = f"{host} (DOCKER_HOST)", "point DOCKER_HOST at one that runs"
    else:
        make_context(docker_config, "far", host)
        monkeypatch.setenv("DOCKER_CONTEXT", "far")
        where, fix = f"{host} (context far)", "pick another with `docker context use`"
    result = CliRunner().invoke(cli.app, ["status"])
    assert result.exit_code == 1
    assert result.stderr == f"box: cannot reach the Docker engine at {where}: connection refused; start it, or {fix}\n"


def test_docker_desktop_not_running_is_the_familiar_line(docker_config, monkeypatch):
    """The local socket (no DOCKER_HOST, no context) that nothing answers on: what a Mac
    user sees when Docker Desktop is not running."""
    import docker

    def nobody_there(**_):
        raise docker.errors.DockerException(
            "Error while fetching server API version: ('Connection aborted.', "
            "FileNotFoundError(2, 'No such file or directory'))"
        )

    monkeypatch.setattr(docker, "from_env", nobody_there)
    result = CliRunner().invoke(cli.app, ["status"])
    assert result.exit_code == 1
    assert result.stderr == (
        "box: Docker is not running — start Docker Desktop, wait for it to say it is running, and try again\n"
    )


def test_a_context_is_read_once_per_command(docker_config, monkeypatch):
    """The SDK's client takes its TLS settings from the Endpoint, not from a second read."""
    from docker.context import ContextAPI

    make_context(docker_config, "far", f"tcp://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("DOCKER_CONTEXT", "far")
    reads = []
    real = ContextAPI.get_context.__func__

    def counted(cls, name=None):
        reads.append(name)
        return real(cls, name)

    monkeypatch.setattr(ContextAPI, "get_context", classmethod(counted))
    result = CliRunner().invoke(cli.app, ["status"])
    assert result.exit_code == 1 and "context far" in result.stderr, result.output
    assert reads == ["far"]


def test_a_box_command_never_loads_paramiko_and_it_still_loads_when_read():
    """imdbox/__init__.py: paramiko waits until something reads from it (box never does;
    the ssh:// engine itself is in test_remote_engine.py)."""
    probe = (
        "import sys, imdbox.cli, imdbox.install, imdbox.service, imdbox.inspection, docker\n"
        "print('paramiko.transport' in sys.modules)\n"
        "import paramiko\n"
        "print(paramiko.RejectPolicy.__name__, 'paramiko.transport' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=names.REPO_ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["False", "RejectPolicy True"]


def test_what_the_ssh_mends_patch_is_there():
    """sshfix patches docker-py's private ssh socket and connection pool: a docker-py
    without them would fail every ssh:// command, so the names are checked here."""
    from importlib.metadata import version

    from docker.transport import sshconn
    from urllib3 import HTTPConnectionPool

    pinned = next(line for line in (names.REPO_ROOT / "requirements.txt").read_text().splitlines() if "docker" in line)
    assert pinned.split()[0] == f"docker[ssh]=={version('docker')}", "sshfix.py was written against the pinned one"
    assert callable(sshconn.SSHSocket.close) and callable(sshconn.SSHSocket.makefile)
    assert callable(HTTPConnectionPool._get_conn) and callable(HTTPConnectionPool._new_conn)
