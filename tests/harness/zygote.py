"""A Python that has imported box's libraries once and forks each `python -m imdbox`
from itself (tests/harness/cli.py starts one per test process and sends it commands).

Why: a fresh `python -m imdbox` spends 0.3 s of CPU importing docker, requests, typer
and rich before its first line (`python -X importtime`), and the suite runs a few
hundred of them on two cores that it keeps busy.

What stays as in a fresh process: each command is a process of its own (its own pid,
exit code, signals, file descriptors 0-2, working directory, environment, and its way
out), and box's own modules are imported anew in it. Only the libraries in PRELOAD are
loaded ahead, and they read the variables a test varies (CALL_TIME_ENV) only when called,
never when imported (tests/world/test_zygote.py checks that); a command whose environment
differs in any other variable goes to a server started with that environment.

Protocol, one Unix connection per command: the client sends the command as JSON with
its stdin, stdout and stderr as SCM_RIGHTS descriptors, then shuts its side; the answer
is a line `pid N`, then `exit CODE` once it has ended.
"""

from __future__ import annotations

import gc
import json
import locale
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Optional

# What box imports beyond imdbox (the rest is the standard library, which these pull in).
PRELOAD = ("docker", "docker.errors", "requests", "requests.exceptions", "typer", "rich.console", "rich.table")
# The variables a command's environment may change from its server's: the libraries
# read them when called, not when imported. Any other difference (PYTHON*, HOME for
# the user site, LANG for the streams' encoding) gets a server of its own.
# PYTEST_CURRENT_TEST is pytest's, in every test's environment and new in each phase of
# each test: keyed on it, every test would start a server of its own, importing all of
# PRELOAD, instead of forking from its process's one.
CALL_TIME_ENV = (
    "PATH", "NO_COLOR", "COLUMNS", "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "PYTEST_CURRENT_TEST",
)  # fmt: skip
CALL_TIME_PREFIX = "IMD_"  # box's own (IMD_BOX_*) and those it hands to install.sh


def call_time(key: str) -> bool:
    return key in CALL_TIME_ENV or key.startswith(CALL_TIME_PREFIX)


class Zygote:
    """The test process's side: one server, started on first use, ended with the test
    process (its stdin is a pipe from here)."""

    def __init__(self, env: dict[str, str], cwd: str) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="imdt-zygote-")
        self.path = str(Path(self._dir.name) / "socket")
        self.server = subprocess.Popen(
            [sys.executable, "-m", "tests.harness.zygote", self.path],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        ready = self.server.stdout.readline()
        if ready != b"ready\n":
            self.server.kill()
            raise RuntimeError(f"the zygote did not start (it said {ready!r}, exit {self.server.wait()})")

    def run(self, args: list[str], env: dict[str, str], cwd: str, timeout: float) -> subprocess.CompletedProcess:
        """As subprocess.run(..., capture_output=True, text=True, timeout=timeout) would."""
        cmd = ["python", "-m", "imdbox", *args]
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        stdin = os.open(os.devnull, os.O_RDONLY)
        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        readers = [threading.Thread(target=_drain, args=(fd, chunks[fd]), daemon=True) for fd in (out_r, err_r)]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            try:
                conn.connect(self.path)
                request = json.dumps({"args": args, "env": env, "cwd": cwd}).encode()
                socket.send_fds(conn, [request], [stdin, out_w, err_w])
                conn.shutdown(socket.SHUT_WR)  # the request's end
            finally:
                for fd in (stdin, out_w, err_w):
                    os.close(fd)
            for reader in readers:
                reader.start()
            answer = _Lines(conn)
            pid = int(answer.next(None).split()[1])
            try:
                code: Optional[int] = int(answer.next(timeout).split()[1])
            except (TimeoutError, socket.timeout):
                os.kill(pid, signal.SIGKILL)  # as subprocess.run does on a timeout
                answer.next(None)
                code = None
        for reader in readers:
            reader.join()
        stdout, stderr = (_text(b"".join(chunks[fd])) for fd in (out_r, err_r))
        if code is None:
            raise subprocess.TimeoutExpired(cmd, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(cmd, code, stdout, stderr)


class _Lines:
    """The server's answer, a line at a time (a file of the socket is unusable once a
    read of it timed out)."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn, self.buf = conn, b""

    def next(self, timeout: Optional[float]) -> str:
        self.conn.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.conn.recv(4096)
            if not chunk:
                raise RuntimeError("the zygote hung up mid-command")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


def _drain(fd: int, into: list[bytes]) -> None:
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            into.append(chunk)
    finally:
        os.close(fd)


def _text(data: bytes) -> str:
    """subprocess's text mode: the locale's encoding, universal newlines."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


_servers: dict[frozenset, Zygote] = {}
_servers_lock = threading.Lock()


def zygote_for(env: dict[str, str], cwd: str) -> Zygote:
    """The server for an environment like `env` (equal outside CALL_TIME_ENV)."""
    key = frozenset((k, v) for k, v in env.items() if not call_time(k))
    with _servers_lock:
        server: Optional[Zygote] = _servers.get(key)
        if server is None or server.server.poll() is not None:
            server = _servers[key] = Zygote(env, cwd)
        return server


def serve(path: str) -> None:
    for module in PRELOAD:
        __import__(module)
    # The libraries' objects live as long as any command, so no collection in a command
    # needs to look at them: frozen, they are left out of its collections. Otherwise each
    # command's full collections walked them all (and, writing to them, copied the pages
    # they share with this server), a large part of a short command's CPU.
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    # The waiters below are reaped by the kernel; each waits for its own command.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    os.write(1, b"ready\n")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing of the server's own may land in a command's output
    os.close(devnull)
    while True:
        # stdin is a pipe from the test process: its end (EOF) ends the server too.
        readable, _, _ = select.select([listener, 0], [], [])
        if 0 in readable and not os.read(0, 1):
            return
        if listener in readable:
            conn, _ = listener.accept()
            request, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)  # the descriptors come first
            while chunk := conn.recv(1 << 16):
                request += chunk
            if os.fork() == 0:
                listener.close()
                _wait_for(conn, json.loads(request), fds)
            for fd in fds:
                os.close(fd)
            conn.close()


def _wait_for(conn: socket.socket, request: dict, fds: list[int]) -> None:
    """In a forked waiter: fork the command, say its pid, then its exit code."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a fresh Python starts with it so
    pid = os.fork()
    if pid == 0:
        conn.close()
        _command(request, fds)
    for fd in fds:
        os.close(fd)
    conn.sendall(f"pid {pid}\n".encode())
    _, status = os.waitpid(pid, 0)
    conn.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
    os._exit(0)


def _command(request: dict, fds: list[int]) -> None:
    """`python -m imdbox ARGS`, as the interpreter would run it. Its way out is the
    interpreter's own: its SystemExit (or any other exception) unwinds this forked process
    to the top, where Python waits for non-daemon threads, runs atexit, flushes and exits
    with the code, printing a traceback or a message as a fresh `python -m` would."""
    import runpy

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["-m", *request["args"]]  # run_module puts the module's path first, as -m does
    runpy.run_module("imdbox", run_name="__main__", alter_sys=True)
    sys.exit(0)


if __name__ == "__main__":
    serve(sys.argv[1])
