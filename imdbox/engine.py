"""A thin layer over the docker SDK: connect with clear errors, find the box's
container, image and volume, and run one-off boxes with the worker's own walls.

Imported only inside commands: the docker SDK is slow to import.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import docker
import docker.errors

from . import hostaddrs, layout, names
from .errors import BoxError
from .runflags import STOP_TIMEOUT, SYSTEM_PATH, EngineLimits, RunFlags, image_reader_kwargs
from .throwaway import interruptible, throwaway

WALLS_UP = b"walls up and verified"
# Run a command in the running box exactly as the entrypoint runs the worker
# (worker/as-imd: as `imd`, every capability gone, no_new_privs, private umask).
AS_IMD = [layout.AS_IMD]
IMD_PATH = f"{names.HOME}/.npm-global/bin/imd"
# The worker's config (its device key, and its pairing once paired); IDENTITYMD_HOME in the image.
WORKER_CONFIG_PATH = f"{names.HOME}/.identitymd/config.json"
FORBIDDEN_NETWORKS = ("host", "none")


@dataclass(frozen=True)
class Endpoint:
    """The engine every command talks to, decided once, as the docker CLI decides it:
    DOCKER_HOST, else DOCKER_CONTEXT, else the current `docker context`, else the
    local socket. The SDK connects to it, and the docker CLI box runs is pointed at it."""

    host: str  # unix://…, tcp://…, ssh://user@host
    source: str  # where it came from, for the user: "DOCKER_HOST", "context NAME", "the local socket"
    context: Optional[str] = None  # the docker context's name, for the docker CLI box runs
    # The context's TLS settings (a docker.tls.TLSConfig), kept from the one read of it.
    tls: Any = field(default=None, compare=False, repr=False)

    @property
    def local_default(self) -> bool:
        return self.source == LOCAL

    def cli(self, docker: str) -> list[str]:
        """The docker CLI aimed at this engine (DOCKER_HOST, when set, it reads itself)."""
        return [docker, "--context", self.context] if self.context else [docker]

    def describe(self) -> str:
        return f"{self.host} ({self.source})"


LOCAL = "the local socket"
LOCAL_SOCKET = "unix:///var/run/docker.sock"


def endpoint() -> Endpoint:
    from docker.context import ContextAPI
    from docker.context.config import get_current_context_name

    if os.environ.get("DOCKER_HOST"):
        return Endpoint(os.environ["DOCKER_HOST"], "DOCKER_HOST")
    name = os.environ.get("DOCKER_CONTEXT") or get_current_context_name()
    if not name or name == "default":
        return Endpoint(LOCAL_SOCKET, LOCAL)
    try:
        ctx = ContextAPI.get_context(name)
    except docker.errors.DockerException as exc:
        raise BoxError(f"the docker context {name} cannot be read ({exc}): `docker context ls`") from None
    if ctx is None or not ctx.Host:
        raise BoxError(f"the docker context {name} does not exist here: `docker context ls`, then `docker context use`")
    return Endpoint(ctx.Host, f"context {name}", name, ctx.TLSConfig)


def connect() -> docker.DockerClient:
    ep = endpoint()
    ssh = ep.host.startswith("ssh://")  # the system's ssh (its keys, its known_hosts), not paramiko
    if ssh:
        _fix_ssh_shell_out()
    try:
        if ep.context is not None:
            client = docker.DockerClient(base_url=ep.host, tls=ep.tls or False, timeout=300, use_ssh_client=ssh)
        else:
            client = docker.from_env(timeout=300, use_ssh_client=ssh)
        if ssh:
            _reuse_ssh_connections(client)
        client.ping()
    except Exception as exc:  # the SDK's, requests' own when the socket answers oddly, ssh's
        raise BoxError(_engine_error(ep, str(exc))) from None
    client.__dict__["_imd_box_endpoint"] = ep
    return client


def _reuse_ssh_connections(client) -> None:
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


def _fix_ssh_shell_out() -> None:
    """Two mends to docker-py's ssh shell-out (the SSHSocket class, once per process):
    - it says goodbye by writing to ssh's stdin when it closes a connection; when ssh already
      ended with the engine's reply (an exec's output, read in full), that write raised
      BrokenPipeError and failed the command that had succeeded (docker/docker-py#3218, open).
      Such a connection is closed without the goodbye.
    - each response got ssh's stdout itself as its file, which http.client closes when the
      response ends: no connection could serve a second request (_reuse_ssh_connections)."""
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


def endpoint_of(client) -> Endpoint:
    return client.__dict__.get("_imd_box_endpoint") or endpoint()


def _engine_error(ep: Endpoint, detail: str) -> str:
    low = detail.lower()
    if ep.host.startswith("unix://"):  # this machine's engine (Docker Desktop's own context is one)
        where = "" if ep.local_default else f" at {ep.describe()}"
        if "permission denied" in low:
            return (
                f"cannot talk to Docker{where}: permission denied on its socket (is your user allowed to use Docker?)"
            )
        return f"Docker is not running{where} — start Docker Desktop, wait for it to say it is running, and try again"
    fix = "point DOCKER_HOST at one that runs" if ep.context is None else "pick another with `docker context use`"
    if ep.host.startswith("ssh://"):  # ssh printed its own reason on stderr, just above
        reason = "ssh could not connect, or `docker system dial-stdio` failed there"
    else:
        reason = _short_reason(low)
    return f"cannot reach the Docker engine at {ep.describe()}: {reason}; start it, or {fix}"


def _short_reason(low: str) -> str:
    for needle, said in (
        ("permission denied", "permission denied"),
        ("connection refused", "connection refused"),
        ("name or service not known", "no such host"),
        ("nodename nor servname", "no such host"),
        ("timed out", "no answer (timed out)"),
    ):
        if needle in low:
            return said
    return "it does not answer"


def _once(client, key, look_up):
    """What a command looks up about the engine, looked up once per client (one command)."""
    known = client.__dict__.setdefault("_imd_box_known", {})
    if key not in known:
        known[key] = look_up()
    return known[key]


def limits(client) -> EngineLimits:
    return _once(client, "limits", lambda: EngineLimits.from_info(client.info()))


def network(client) -> str:
    """The network every box runs on: Docker's bridge, or IMD_BOX_NETWORK (a user-defined bridge)."""
    return _once(client, ("network", names.NETWORK), lambda: _checked_network(client, names.NETWORK))


def _checked_network(client, name: str) -> str:
    if name == "bridge":
        return name
    if name in FORBIDDEN_NETWORKS or name.startswith("container:"):
        raise BoxError(
            f"IMD_BOX_NETWORK={name} is refused: the box sets its firewall with NET_ADMIN, which must never "
            "act on the Mac's or another container's network; name a user-defined bridge network"
        )
    try:
        net = client.networks.get(name)
    except docker.errors.NotFound:
        raise BoxError(f"IMD_BOX_NETWORK={name}: no such Docker network") from None
    if net.attrs.get("Driver") != "bridge":
        raise BoxError(f"IMD_BOX_NETWORK={name} is a {net.attrs.get('Driver')} network; it must be a bridge network")
    return name


def image(client, required: bool = True):
    try:
        return client.images.get(names.IMAGE)
    except docker.errors.ImageNotFound:
        if not required:
            return None
        raise BoxError(
            f"the box image {names.IMAGE} is missing: run `{names.box_command('pull')}` (the published image) "
            f"or `{names.box_command('build')}` (from this checkout) first"
        ) from None


def pulled_from(img) -> Optional[str]:
    """The reference the box image was pulled from (`box pull` keeps it as a tag), or None if built here."""
    if img is None or not img.attrs.get("RepoDigests"):
        return None
    for tag in img.tags:
        if tag != names.IMAGE:
            return tag
    return None


def is_running(container) -> bool:
    """Running, or being restarted by Docker (its restart policy): up, as far as a user cares."""
    return container is not None and container.status in ("running", "restarting")


def is_up(container) -> bool:
    """Running right now (a command can be executed in it)."""
    return container is not None and container.status == "running"


def create_box(client, flags: RunFlags):
    return client.containers.create(**flags.sdk_kwargs())


def stop_box(container) -> None:
    """SIGTERM, then SIGKILL after STOP_TIMEOUT: the worker finishes its task cleanly."""
    container.stop(timeout=STOP_TIMEOUT)


def remove_box(container) -> None:
    """Remove the box, running or not; one already gone is fine."""
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass


def remove_volume(client) -> None:
    client.volumes.get(names.VOLUME).remove(force=True)


def remove_image_tag(client, tag: str) -> None:
    client.images.remove(tag)


def is_ours(container) -> bool:
    return (container.labels or {}).get(names.LABEL) == "1"


def box_container(client):
    """The worker box, or None; a container of someone else's holding the name is refused."""
    try:
        container = client.containers.get(names.CONTAINER)
    except docker.errors.NotFound:
        return None
    if not is_ours(container):
        raise BoxError(
            f"a container named {names.CONTAINER} exists but was not made by box (no {names.LABEL} label); "
            "box leaves it alone: rename or remove it yourself, or set IMD_BOX_CONTAINER"
        )
    return container


def box_container_soon(client, timeout: float = 10.0):
    """The worker box, just after creating it failed because its name is taken: the engine
    reserves a name before the container can be looked up by it, so the box another
    `box start` is making can take a moment to appear. None if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        container = box_container(client)
        if container is not None or time.monotonic() >= deadline:
            return container
        time.sleep(0.2)


def volume_exists(client) -> bool:
    try:
        client.volumes.get(names.VOLUME)
        return True
    except docker.errors.NotFound:
        return False


def ensure_volume(client) -> bool:
    """Create the volume if missing; True if it was created."""
    if volume_exists(client):
        return False
    client.volumes.create(names.VOLUME, labels={names.LABEL: "1"})
    return True


def seats(client) -> list[Optional[str]]:
    """Every seat on this engine, the one without a name first: a seat is its volume
    (made by `setup`, kept until `remove --yes`), whether or not its box exists."""
    found = {
        seat
        for v in client.volumes.list(filters={"label": names.LABEL})
        for is_seat, seat in [names.seat_of_volume(v.name)]
        if is_seat
    }
    return sorted(found, key=lambda s: (s is not None, s or ""))


def other_boxes_memory(client) -> int:
    """The memory caps of the other seats' worker boxes that run (or restart) now."""
    # A box removed between the listing and its inspection (another seat's `box remove`) is
    # no longer there to count: not an error.
    running = client.containers.list(filters={"label": f"{names.LABEL}.role=worker"}, ignore_removed=True)
    return sum(
        int(c.attrs["HostConfig"].get("Memory") or 0) for c in running if c.name != names.CONTAINER and is_ours(c)
    )


def flags(
    client,
    role: str,
    command: Optional[Sequence[str]] = None,
    *,
    name: Optional[str] = None,
    restart: bool = False,
    environment: Optional[dict[str, str]] = None,
    interactive: bool = False,
    starts: bool = True,
    image: Optional[str] = None,
    volume: Optional[str] = None,
    network_name: Optional[str] = None,
) -> RunFlags:
    """The one way to make any box's flags (the product's, `box check`'s, the tests' and
    the bench's). `starts=False` for a box that is only created (to read the volume): it
    never runs its entrypoint, so it needs no firewall input. image, volume and network
    default to the box's own (names.py); the tests and the bench name theirs."""
    image = image or names.IMAGE
    return RunFlags(
        limits=limits(client),
        image=image,
        command=list(command) if command else None,
        name=name,
        role=role,
        network=network_name or network(client),
        volume=volume or names.VOLUME,
        environment=dict(environment or {}),
        restart=restart,
        interactive=interactive,
        host_addresses=hostaddrs.collect(client, image, endpoint_of(client).host) if starts else (),
    )


def read_volume_file(client, path: str) -> Optional[bytes]:
    """A file from the volume, read through a created (never started) box: nothing runs."""
    return read_volume_files(client, [path])[path]


def read_volume_files(client, paths: Sequence[str]) -> dict[str, Optional[bytes]]:
    """Files from the volume by path (None: not there; a link: its target), all read
    through one created (never started) box: nothing runs."""
    with throwaway(client, flags(client, "read", ["true"], starts=False).sdk_kwargs()) as helper:
        return {path: _one_file(helper, path) for path in paths}


def _one_file(helper, path: str) -> Optional[bytes]:
    try:
        chunks, _ = helper.get_archive(path)
    except docker.errors.NotFound:
        return None
    data = b"".join(chunks)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.next()
        if member is None:
            return None
        if member.issym() or member.islnk():
            return member.linkname.encode()
        handle = tar.extractfile(member)
        return handle.read() if handle else b""


def image_files(client, image_ref: str, directory: str) -> dict[str, bytes]:
    """The regular files directly in `directory` of an image, by name, copied out of a
    created (never started) container with no volume and no network."""
    with throwaway(client, image_reader_kwargs(image_ref)) as reader:
        try:
            chunks, _ = reader.get_archive(directory)
        except docker.errors.NotFound:
            return {}
        files = {}
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
            for member in tar:
                parts = member.name.split("/")
                handle = tar.extractfile(member) if member.isreg() and len(parts) == 2 else None
                if handle:
                    files[parts[1]] = handle.read()
        return files


def volume_has(client, path: str) -> bool:
    """Whether a file is in the volume, asked through a created (never started) box;
    its content is not read."""
    with throwaway(client, flags(client, "read", ["true"], starts=False).sdk_kwargs()) as helper:
        try:
            helper.get_archive(path)
            return True
        except docker.errors.NotFound:
            return False


def write_volume_file(client, path: str, data: bytes) -> None:
    """Put one file (imd's, mode 600) into an existing folder of the volume, through a
    created (never started) box: nothing runs, and root inside never touches it."""
    folder, _, base = path.rpartition("/")
    with throwaway(client, flags(client, "write", ["true"], starts=False).sdk_kwargs()) as helper:
        helper.put_archive(folder, file_tar(base, data, names.UID))


def file_tar(path: str, data: bytes, uid: int, mode: int = 0o600) -> bytes:
    """One file as a tar for `put_archive`, owned by `uid` (`path` relative to where it is put)."""
    info = tarfile.TarInfo(path)
    info.size, info.mode, info.uid, info.gid, info.mtime = len(data), mode, uid, uid, int(time.time())
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def setup_done(client) -> bool:
    return volume_exists(client) and read_volume_file(client, IMD_PATH) is not None


def require_volume(client) -> None:
    if not volume_exists(client):
        raise BoxError(f"setup was not done (no volume {names.VOLUME}): run `{names.box_command('setup')}` first")


def require_setup(client) -> None:
    require_volume(client)
    if read_volume_file(client, IMD_PATH) is None:
        raise BoxError(
            f"setup was not done (no worker installed in {names.VOLUME}): run `{names.box_command('setup')}` first"
        )


def run_oneoff(
    client,
    run_flags: RunFlags,
    on_line: Callable[[str], None] = lambda s: None,
    files: Optional[bytes] = None,
) -> tuple[int, str]:
    """Run a throwaway box (same walls), streaming its output; returns exit code and output.
    `files` (a tar, paths relative to the home) is put into the volume before the box
    starts: how a secret gets in without passing through its command line or
    environment. (Only the volume takes files: the box's root is read-only.)"""
    lines: list[str] = []
    with throwaway(client, run_flags.sdk_kwargs()) as container:
        if files is not None:
            container.put_archive(names.HOME, files)
        container.start()
        buf = b""
        for chunk in interruptible(container.logs(stream=True, follow=True)):
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode(errors="replace")
                lines.append(line)
                on_line(line)
        if buf:
            line = buf.decode(errors="replace")
            lines.append(line)
            on_line(line)
        code = container.wait(timeout=3600)["StatusCode"]
    return code, "\n".join(lines)


# Every exec box makes as root names its PATH: the image's directories, never the volume's.
EXEC_ENV = {"PATH": SYSTEM_PATH}


def exec_as_imd(container, command: Sequence[str]) -> tuple[int, str]:
    result = container.exec_run(AS_IMD + list(command), user="root", environment=EXEC_ENV, demux=False)
    return result.exit_code, (result.output or b"").decode(errors="replace")


def exec_as_root(container, command: Sequence[str]) -> tuple[int, str]:
    """One of the image's programs, by absolute path, as the box's root (with the box's
    capabilities, never more): only for reading what root alone may (the firewall's counters)."""
    result = container.exec_run(list(command), user="root", environment=EXEC_ENV, demux=False)
    return result.exit_code, (result.output or b"").decode(errors="replace")


def health(container) -> str:
    """The image's HEALTHCHECK (worker/healthy) as Docker last saw it: its state and what it said."""
    h = container.attrs["State"].get("Health")
    if not h:
        return f"no health check (an image from before box had one: `{names.box_command('update')}`)"
    last = (h.get("Log") or [{}])[-1].get("Output", "").strip()
    return f"{h.get('Status')}" + (f" ({last})" if last else " (the first check has not run yet)")


def worker_running(container) -> bool:
    try:
        top = container.top(ps_args="-eo pid,args")
    except docker.errors.APIError:
        return False
    return any("imd start" in " ".join(str(p) for p in proc) for proc in top.get("Processes") or [])


START_TIMEOUT = 90.0  # seconds `box start` waits for the walls and the worker


def wait_started(
    container, timeout: float = START_TIMEOUT, settle: float = 2.0, joining: bool = False
) -> tuple[bool, str]:
    """Wait for the walls line and the worker process, then for the worker to stay up
    `settle` s; (ok, logs). Fails fast on an exit or a restart.
    `joining`: the box is another command's, which may not have started it yet."""
    deadline = time.monotonic() + timeout
    seen = False
    while time.monotonic() < deadline:
        container.reload()
        state = container.attrs["State"]
        if joining and state.get("Status") == "created":
            time.sleep(0.3)
            continue
        if state.get("Restarting") or container.attrs.get("RestartCount", 0) > 0 or not state.get("Running"):
            return False, container.logs().decode(errors="replace")
        if WALLS_UP in container.logs(stderr=True, stdout=False) and worker_running(container):
            if seen:  # still up, and the box neither ended nor restarted meanwhile
                return True, container.logs().decode(errors="replace")
            # Looked at once more after `settle`, not polled through it: a worker that dies
            # in its first moments ends its box (run.sh exits with it), which the restart
            # count then shows. Each look asks the engine for the box's processes (`ps`).
            seen = True
            time.sleep(min(settle, max(0.0, deadline - time.monotonic())))
            continue
        seen = False
        time.sleep(0.3)
    return False, container.logs().decode(errors="replace") + f"\n(timed out after {timeout:.0f}s)"


def age(stamp: Optional[str]) -> float:
    """Seconds since a Docker timestamp (RFC 3339, nanoseconds); a large number if unknown."""
    import datetime as dt

    if not stamp or stamp.startswith("0001-"):
        return float("inf")
    whole = stamp.split(".")[0].rstrip("Z")
    then = dt.datetime.fromisoformat(whole).replace(tzinfo=dt.timezone.utc)
    return (dt.datetime.now(dt.timezone.utc) - then).total_seconds()


def being_started(container) -> bool:
    """A box made moments ago whose walls or worker are not up yet, never restarted:
    another `box start` is waiting for it, and removing it would break that one."""
    state = container.attrs.get("State") or {}
    if container.attrs.get("RestartCount", 0) > 0 or state.get("Restarting"):
        return False
    if state.get("Status") not in ("created", "running"):
        return False
    if age(container.attrs.get("Created")) > START_TIMEOUT + 10:
        return False
    return not (state.get("Running") and worker_running(container))


_WORKER_END = re.compile(r"imd-box: the worker (exited with code|was killed by)")
_WORKER_START = "imd-box: starting the worker"  # worker/run.sh, just before it runs `imd start`
_TROUBLE = re.compile(r"error|fail|fatal|cannot|can't|refus|denied|invalid|not ", re.IGNORECASE)


def _worker_said(earlier: list[str]) -> Optional[str]:
    """The worker's latest line that says what went wrong, since run.sh started it. Not
    simply its last line: its stdout and stderr are two streams, and Docker's log does
    not keep their order (an error on stderr can land before an info line on stdout)."""
    for line in reversed(earlier):
        if "imd-box:" in line:  # run.sh's or the entrypoint's own
            if _WORKER_START in line or _WORKER_END.search(line):
                return None
        elif _TROUBLE.search(line):
            return line
    return None


def last_error(logs: str) -> str:
    """The latest of: the entrypoint's or run.sh's own refusal, or the worker's end
    (run.sh's line with its exit code or signal, and what the worker said went wrong,
    if it did); else the last error-like line, else the last line."""
    lines = [line.strip() for line in logs.splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if "imd-box:" in line and ("FAILED" in line or "not started" in line or "not installed" in line):
            return line
        if _WORKER_END.search(line):
            said = _worker_said(lines[:i])
            return f"{line} (the worker said: {said})" if said else line
    for line in reversed(lines):
        if "error" in line.lower() or "failed" in line.lower():
            return line
    return lines[-1] if lines else "(no output)"
