"""`box` against an engine it reaches the way a Linux server's is reached: tcp://, a
docker context, and ssh://, all on loopback, all this machine's own engine.

- tcp: a forwarder of ours on 127.0.0.1 passes bytes to the engine's socket and counts
  the connections, so each command is seen to go through it (a box that ignored
  DOCKER_HOST would talk to the local socket, and the count would stay put);
- a context: `docker context create` (the real CLI) in a docker config of the test's own,
  pointing at that forwarder;
- ssh: Debian's sshd, started here on 127.0.0.1 with a host key and one client key made
  for the test (key auth only), and the system's ssh client with a config of the test's
  own; sshd's log counts the sessions.
Every box runs on the harness's internal network; nothing leaves this machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import pytest

from imdbox import names
from tests.conftest import IN_CI
from tests.fake_worker.fixtures import box_env, pair
from tests.harness.topology import check_targets

# In a parallel run (-n) one worker runs this module's tests: its sshd and forwarder are module fixtures.
pytestmark = pytest.mark.xdist_group("remote_engine")

LOCAL_SOCKET = "/var/run/docker.sock"


def _cannot(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason}; CI=true: the remote-engine tests must run", pytrace=False)
    pytest.skip(reason)


def _local_socket() -> str:
    host = os.environ.get("DOCKER_HOST", f"unix://{LOCAL_SOCKET}")
    if not host.startswith("unix://"):
        _cannot(f"the suite's engine is {host}, not a local socket to forward to")
    return host[len("unix://") :]


class Forwarder:
    """127.0.0.1:PORT -> the engine's unix socket, byte for byte (hijacked streams too)."""

    def __init__(self, target: str):
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:  # closed
                return
            engine = socket.socket(socket.AF_UNIX)
            try:
                engine.connect(self.target)
            except OSError:  # the engine is down: the client sees its connection closed
                client.close()
                engine.close()
                continue
            self.connections += 1
            self._open += [client, engine]
            for a, b in ((client, engine), (engine, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)  # pass the half-close on (an exec's stdin ending)
        except OSError:
            pass

    def close(self) -> None:
        self.server.close()
        for s in self._open:
            s.close()


@pytest.fixture(scope="module")
def forwarder():
    door = Forwarder(_local_socket())
    try:
        yield door
    finally:
        door.close()


@dataclasses.dataclass
class Sshd:
    port: int
    wrapper_dir: Path  # an `ssh` that is the system's, with the test's own config
    log: Path

    def sessions(self) -> int:
        return self.log.read_text().count("Accepted publickey for root")


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30)
    return path.with_suffix(".pub").read_text().strip()


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    if not Path("/usr/sbin/sshd").exists() or not shutil.which("ssh"):
        _cannot("Debian's openssh-server and ssh client are not installed (scripts/test installs them)")
    if os.geteuid() != 0:
        _cannot("sshd must start as root to let root log in")
    _local_socket()
    d = tmp_path_factory.mktemp("sshd")
    host_pub = _keygen(d / "host_key")
    (d / "authorized_keys").write_text(_keygen(d / "client_key") + "\n")
    with socket.socket() as s:  # a free loopback port of ours
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n"
        f"AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n"
        "PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "UsePAM no\nStrictModes no\n"  # the keys sit in pytest's temporary folder
    )
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    (d / "ssh_config").write_text(
        f"Host 127.0.0.1\n  IdentityFile {d}/client_key\n  IdentitiesOnly yes\n  BatchMode yes\n"
        f"  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking yes\n"
    )
    wrappers = d / "bin"
    wrappers.mkdir()
    (wrappers / "ssh").write_text(f'#!/bin/sh\nexec {shutil.which("ssh")} -F {d}/ssh_config "$@"\n')
    (wrappers / "ssh").chmod(0o755)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    log = d / "sshd.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config")], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 20
        while "Server listening on 127.0.0.1" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield Sshd(port, wrappers, log)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def far_box(docker_client, box_image, feed, forwarder):
    """A box env set up and paired through tcp:// (the forwarder); removed afterwards."""
    with box_env(docker_client, box_image) as env:
        env.extra["DOCKER_HOST"] = f"tcp://127.0.0.1:{forwarder.port}"
        seen = forwarder.connections
        r = env.run("setup", "--no-shell")
        assert r.returncode == 0, r.all
        assert forwarder.connections > seen, "setup did not go through DOCKER_HOST"
        pair(env)
        env.extra.pop("DOCKER_HOST")
        yield env


def _tty_shell(env: dict[str, str]) -> subprocess.CompletedProcess:
    """`box shell` in a terminal: the docker CLI's path (`docker exec -it`)."""
    return subprocess.run(
        ["script", "-qec", f"{sys.executable} -m imdbox shell", "/dev/null"],
        input="imd help | head -1; exit 3\n",
        cwd=str(names.REPO_ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# What one box command may open over ssh: a few connections, each one ssh login, reused for
# every request (docker-py alone logs in once per request: `box start` did 40 times).
SSH_LOGINS_AT_MOST = 5


def _start_to_stop(env, through, engine_line, count, tmp_path, at_most: Optional[int] = None) -> None:
    """start, status, logs, check, a terminal shell and stop, each seen going `through`;
    `box status` names the engine as `engine_line`. `at_most`: how far `count` may go up in
    one box command (the terminal shell's count is the docker CLI's as well)."""
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps(dataclasses.asdict(check_targets())))
    steps = [
        ("start",),
        ("status",),
        ("logs", "--no-follow"),
        ("check", "--url", "http://198.51.100.10/", "--targets", str(targets)),
        "tty shell",
        ("stop",),
    ]
    for step in steps:
        seen = count()
        if step == "tty shell":
            if not shutil.which("script"):
                _cannot("script(1) is not installed")
            r = _tty_shell(env.env(**through))
            assert r.returncode == 3 and "IdentityMD contributor daemon" in r.stdout, r.stdout + r.stderr
        else:
            r = env.run(*step, timeout=180, **through)
            assert r.returncode == 0, (step, r.all)
            if step[0] == "status":
                assert f"engine:    {engine_line}\n" in r.stdout, r.all
            if step[0] == "check":
                assert "all ok" in r.all, r.all
        assert count() > seen, f"{step} did not go through {through}"
        if at_most is not None and step != "tty shell":
            assert count() - seen <= at_most, f"{step}: {count() - seen} connections, more than {at_most}"


def test_setup_to_stop_through_tcp(far_box, forwarder, tmp_path):
    through = {"DOCKER_HOST": f"tcp://127.0.0.1:{forwarder.port}"}
    _start_to_stop(far_box, through, f"{through['DOCKER_HOST']} (DOCKER_HOST)", lambda: forwarder.connections, tmp_path)


def test_a_docker_context_is_the_engine_for_box_and_its_docker_cli(far_box, forwarder, tmp_path):
    config = tmp_path / "docker-config"
    config.mkdir()
    (config / "config.json").write_text("{}")
    r = subprocess.run(
        ["docker", "context", "create", "imdt-far", "--docker", f"host=tcp://127.0.0.1:{forwarder.port}"],
        env={**os.environ, "DOCKER_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    (config / "config.json").write_text(json.dumps({"currentContext": "imdt-far"}))  # `docker context use`
    through = {"DOCKER_CONFIG": str(config)}
    engine_line = f"tcp://127.0.0.1:{forwarder.port} (context imdt-far)"
    _start_to_stop(far_box, through, engine_line, lambda: forwarder.connections, tmp_path)


def test_start_to_stop_through_ssh(far_box, sshd, tmp_path):
    through = {
        "DOCKER_HOST": f"ssh://root@127.0.0.1:{sshd.port}",
        "PATH": f"{sshd.wrapper_dir}:{os.environ['PATH']}",
    }
    engine_line = f"{through['DOCKER_HOST']} (DOCKER_HOST)"
    _start_to_stop(far_box, through, engine_line, sshd.sessions, tmp_path, at_most=SSH_LOGINS_AT_MOST)


def test_over_ssh_one_login_serves_many_requests_and_an_ended_one_is_replaced(sshd, monkeypatch):
    """engine.connect over ssh: requests reuse one ssh login; when that ssh ends (the server
    dropped it), the next request opens another instead of failing."""
    from imdbox import engine
    from imdbox.config import Config

    monkeypatch.setenv("PATH", f"{sshd.wrapper_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("DOCKER_HOST", f"ssh://root@127.0.0.1:{sshd.port}")
    client = engine.connect(Config.from_env(os.environ)).client
    try:
        first = sshd.sessions()
        for _ in range(5):
            client.info()
            client.containers.list(filters={"name": "imdt-none-such"})
        assert sshd.sessions() == first, "ten requests, no new login"
        pool = client.api.get_adapter(client.api.base_url).get_connection(client.api.base_url)
        idle = [conn for conn in list(pool.pool.queue) if conn is not None and conn.sock is not None]
        assert idle, "the connection went back to the pool"
        for conn in idle:
            conn.sock.proc.kill()
            conn.sock.proc.wait(timeout=10)
        assert client.ping()
        assert sshd.sessions() == first + 1
        live = [conn.sock.proc for conn in list(pool.pool.queue) if conn is not None and conn.sock is not None]
    finally:
        client.close()
    for proc in live:  # closing the client ends its ssh processes
        assert proc.wait(timeout=10) is not None
