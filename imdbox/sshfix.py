"""Two mends to docker-py's ssh transport (`use_ssh_client`: the system's ssh, its keys and
its known_hosts), for an engine at ssh://. They patch docker-py's private SSHSocket and its
connection pool, as docker-py 7.1.0 has them (requirements.txt pins it;
tests/unit/test_engine_endpoint_unit.py checks that what they patch is there), and
tests/world/test_remote_engine.py runs every command through them.
"""

from __future__ import annotations


def reuse_ssh_connections(client) -> None:
    """docker-py's ssh shell-out makes a new connection pool for every request, so every
    request is a new `ssh` login (docker/docker-py#2966, open): `box start` logged in 40
    times. One pool for the command instead: a request takes an idle connection (an `ssh ...
    docker system dial-stdio`, HTTP/1.1 with keep-alive) or opens one. A connection whose
    ssh has ended, or that was closed, is never taken again: a new one is opened."""
    adapter = client.api.get_adapter(client.api.base_url)
    pool = adapter.get_connection(client.api.base_url)
    take = pool._get_conn

    def live_conn(timeout=None):
        conn = take(timeout)
        sock = getattr(conn, "sock", None)
        if sock is not None and (getattr(sock, "imd_box_closed", False) or sock.proc.poll() is not None):
            conn.close()
            conn = pool._new_conn()
        return conn

    pool._get_conn = live_conn
    adapter.pools[client.api.base_url] = pool  # the client's close() ends its ssh processes
    adapter.get_connection = lambda url, proxies=None: pool


class _ResponseFile:
    """ssh's stdout as the file of one HTTP response. http.client closes a response's file
    when the response ends; closing ssh's stdout would end the connection with it."""

    def __init__(self, stdout, channel):
        self._stdout = stdout
        self.channel = channel  # docker-py reads a hijacked stream (attach, exec) through it

    def __getattr__(self, name):
        return getattr(self._stdout, name)

    def close(self) -> None:
        pass  # the connection's own close ends ssh


def fix_ssh_shell_out() -> None:
    """Two mends to docker-py's ssh shell-out (the SSHSocket class, once per process):
    - it says goodbye by writing to ssh's stdin when it closes a connection; when ssh already
      ended with the engine's reply (an exec's output, read in full), that write raised
      BrokenPipeError and failed the command that had succeeded (docker/docker-py#3218, open).
      Such a connection is closed without the goodbye.
    - each response got ssh's stdout itself as its file, which http.client closes when the
      response ends: no connection could serve a second request (reuse_ssh_connections)."""
    from docker.transport import sshconn

    original_close = sshconn.SSHSocket.close
    if getattr(original_close, "imd_box", False):
        return

    def close(self) -> None:
        self.imd_box_closed = True  # never taken again from the pool
        try:
            original_close(self)
        except (BrokenPipeError, ValueError):  # ValueError: its stdin is closed already
            if self.proc is not None:
                self.proc.terminate()

    def makefile(self, mode):
        if not self.proc:
            self.connect()
        return _ResponseFile(self.proc.stdout, self)

    close.imd_box = True  # type: ignore[attr-defined]
    sshconn.SSHSocket.close = close
    sshconn.SSHSocket.makefile = makefile
