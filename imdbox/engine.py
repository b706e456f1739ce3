"""The engine's verbs for one command: the box's container, image and volume, one-off
boxes with the worker's own walls, and exec in the running box. Each takes the command's
Engine: the SDK client, the endpoint it talks to, and the seat's names (its Config).

Imported only inside commands: the docker SDK is slow to import.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

import docker
import docker.errors

from . import hostaddrs, layout, names, protocol
from .config import LOGIN_ENV, Config
from .endpoint import Endpoint, client_for, endpoint
from .errors import BoxError
from .runflags import STOP_TIMEOUT, SYSTEM_PATH, EngineLimits, RunFlags
from .throwaway import interruptible, once_free, throwaway

# Run a command in the running box exactly as the entrypoint runs the worker
# (worker/as-imd: as `imd`, every capability gone, no_new_privs, private umask).
AS_IMD = [layout.AS_IMD]
IMD_PATH = f"{names.HOME}/.npm-global/bin/imd"
# The worker's config (its device key, and its pairing once paired); IDENTITYMD_HOME in the image.
WORKER_CONFIG_PATH = f"{names.HOME}/.identitymd/config.json"
FORBIDDEN_NETWORKS = ("host", "none")


@dataclass
class Engine:
    """One command's engine: what it talks to, for which seat, and what it looked up once."""

    client: Any  # the SDK's DockerClient (or the tests' stand-in)
    cfg: Config
    endpoint: Endpoint
    known: dict = field(default_factory=dict, repr=False)
    # What the command has read of each volume, by path (volume.py): forgotten when a box
    # that runs on the volume may have changed it (run_oneoff).
    read: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, client, cfg: Config) -> Engine:
        """An engine around a client made elsewhere (the tests' and the bench's)."""
        return cls(client, cfg, endpoint(cfg.env))

    def for_seat(self, seat: Optional[str]) -> Engine:
        """The same engine and client, acting on another seat."""
        return replace(self, cfg=self.cfg.for_seat(seat))

    def once(self, key, look_up):
        """What a command looks up about the engine, looked up once."""
        if key not in self.known:
            self.known[key] = look_up()
        return self.known[key]


def connect(cfg: Config) -> Engine:
    """The command's engine, with the network setting checked before anything is looked at."""
    ep = endpoint(cfg.env)
    eng = Engine(client_for(ep, cfg.env), cfg, ep)
    network(eng)
    return eng


def limits(eng: Engine) -> EngineLimits:
    return eng.once("limits", lambda: EngineLimits.from_info(eng.client.info()))


def network(eng: Engine) -> str:
    """The network every box runs on: Docker's bridge, or IMD_BOX_NETWORK (a user-defined bridge)."""
    return eng.once(("network", eng.cfg.network), lambda: _checked_network(eng.client, eng.cfg.network))


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


def image(eng: Engine, required: bool = True):
    try:
        return eng.client.images.get(eng.cfg.image)
    except docker.errors.ImageNotFound:
        if not required:
            return None
        raise BoxError(
            f"the box image {eng.cfg.image} is missing: run `{eng.cfg.command('pull')}` (the published image) "
            f"or `{eng.cfg.command('build')}` (from this checkout) first"
        ) from None


def pulled_from(eng: Engine, img) -> Optional[str]:
    """The reference the box image was pulled from (`box pull` keeps it as a tag), or None if built here."""
    if img is None or not img.attrs.get("RepoDigests"):
        return None
    for tag in img.tags:
        if tag != eng.cfg.image:
            return tag
    return None


def is_running(container) -> bool:
    """Running, or being restarted by Docker (its restart policy): up, as far as a user cares."""
    return container is not None and container.status in ("running", "restarting")


def is_up(container) -> bool:
    """Running right now (a command can be executed in it)."""
    return container is not None and container.status == "running"


def create_box(eng: Engine, flags: RunFlags):
    return eng.client.containers.create(**flags.sdk_kwargs())


def stop_box(container, timeout: int = STOP_TIMEOUT) -> None:
    """SIGTERM, then SIGKILL after `timeout` s: the worker finishes its task cleanly."""
    container.stop(timeout=timeout)


def remove_box(container) -> None:
    """Remove the box, running or not; one already gone, or being removed (auto_remove), is fine."""
    try:
        container.remove(force=True)
    except docker.errors.APIError as exc:  # 409: its removal is under way
        if exc.status_code != 409 and not isinstance(exc, docker.errors.NotFound):
            raise


def remove_volume(eng: Engine) -> None:
    # Once the boxes the engine removes on its own (a check's that has just printed) let it go.
    once_free(lambda: eng.client.volumes.get(eng.cfg.volume).remove(force=True))


def remove_image_tag(eng: Engine, tag: str) -> None:
    eng.client.images.remove(tag)


def is_ours(container) -> bool:
    return (container.labels or {}).get(names.LABEL) == "1"


def box_container(eng: Engine):
    """The worker box, or None; a container of someone else's holding the name is refused."""
    try:
        container = eng.client.containers.get(eng.cfg.container)
    except docker.errors.NotFound:
        return None
    if not is_ours(container):
        raise BoxError(
            f"a container named {eng.cfg.container} exists but was not made by box (no {names.LABEL} label); "
            "box leaves it alone: rename or remove it yourself, or set IMD_BOX_CONTAINER"
        )
    return container


def box_container_soon(eng: Engine, timeout: float = 10.0):
    """The worker box, just after creating it failed because its name is taken: the engine
    reserves a name before the container can be looked up by it, so the box another
    `box start` is making can take a moment to appear. None if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        container = box_container(eng)
        if container is not None or time.monotonic() >= deadline:
            return container
        time.sleep(0.2)


def volume_exists(eng: Engine) -> bool:
    try:
        eng.client.volumes.get(eng.cfg.volume)
        return True
    except docker.errors.NotFound:
        return False


def ensure_volume(eng: Engine) -> bool:
    """Create the volume if missing; True if it was created."""
    if volume_exists(eng):
        return False
    eng.client.volumes.create(eng.cfg.volume, labels={names.LABEL: "1"})
    return True


def seats(eng: Engine) -> list[Optional[str]]:
    """Every seat on this engine, the one without a name first: a seat is its volume
    (made by `setup`, kept until `remove --yes`), whether or not its box exists."""
    found = {
        seat
        for v in eng.client.volumes.list(filters={"label": names.LABEL})
        for is_seat, seat in [eng.cfg.seat_of_volume(v.name)]
        if is_seat
    }
    return sorted(found, key=lambda s: (s is not None, s or ""))


def other_boxes_memory(eng: Engine) -> int:
    """The memory caps of the other seats' worker boxes that run (or restart) now."""
    # A box removed between the listing and its inspection (another seat's `box remove`) is
    # no longer there to count: not an error.
    running = eng.client.containers.list(filters={"label": f"{names.LABEL}.role=worker"}, ignore_removed=True)
    return sum(
        int(c.attrs["HostConfig"].get("Memory") or 0) for c in running if c.name != eng.cfg.container and is_ours(c)
    )


def flags(
    eng: Engine,
    role: str,
    command: Optional[Sequence[str]] = None,
    *,
    name: Optional[str] = None,
    restart: bool = False,
    environment: Optional[dict[str, str]] = None,
    interactive: bool = False,
    starts: bool = True,
    network_name: Optional[str] = None,
) -> RunFlags:
    """The one way to make any box's flags (the product's, `box check`'s, the tests' and
    the bench's). `starts=False` for a box that is only created (to read the volume): it
    never runs its entrypoint, so it needs no firewall input. The image and volume are the
    engine's (eng.cfg); the network is its own unless `network_name` names another."""
    cfg = eng.cfg
    return RunFlags(
        limits=limits(eng),
        image=cfg.image,
        command=list(command) if command else None,
        name=name,
        role=role,
        network=network_name or network(eng),
        volume=cfg.volume,
        box_command=cfg.command(),
        environment={**({LOGIN_ENV: "jail"} if cfg.login_in_jail else {}), **(environment or {})},
        restart=restart,
        interactive=interactive,
        host_addresses=hostaddrs.collect(eng.client, cfg.image, eng.endpoint.host, cfg.container) if starts else (),
    )


def run_oneoff(
    eng: Engine,
    run_flags: RunFlags,
    on_line: Callable[[str], None] = lambda s: None,
    files: Optional[bytes] = None,
) -> tuple[int, str]:
    """Run a throwaway box (same walls), streaming its output; returns exit code and output.
    `files` (a tar, paths relative to the home) is put into the volume before the box
    starts: how a secret gets in without passing through its command line or
    environment. (Only the volume takes files: the box's root is read-only.)"""
    lines: list[str] = []
    eng.read.pop(run_flags.volume, None)
    with throwaway(eng.client, run_flags.sdk_kwargs(), eng.cfg.container) as container:
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


def exec_as_imd(container, command: Sequence[str], env: Optional[dict[str, str]] = None) -> tuple[int, str]:
    """`command` as imd in a running box; `env`: more of its environment."""
    result = container.exec_run(
        AS_IMD + list(command), user="root", environment={**EXEC_ENV, **(env or {})}, demux=False
    )
    return result.exit_code, (result.output or b"").decode(errors="replace")


def exec_as_root(container, command: Sequence[str]) -> tuple[int, str]:
    """One of the image's programs, by absolute path, as the box's root (with the box's
    capabilities, never more): only for reading what root alone may (the firewall's counters)."""
    result = container.exec_run(list(command), user="root", environment=EXEC_ENV, demux=False)
    return result.exit_code, (result.output or b"").decode(errors="replace")


def health(eng: Engine, container) -> str:
    """The image's HEALTHCHECK (worker/healthy) as Docker last saw it: its state and what it said."""
    h = container.attrs["State"].get("Health")
    if not h:
        return f"no health check (an image from before box had one: `{eng.cfg.command('update')}`)"
    last = (h.get("Log") or [{}])[-1].get("Output", "").strip()
    return f"{h.get('Status')}" + (f" ({last})" if last else " (the first check has not run yet)")


@dataclass(frozen=True)
class Worker:
    """The worker as one look at the box's processes (a `ps` by the engine) sees it."""

    pids: frozenset  # its own processes (`imd start`: the supervisor and the worker it runs)
    # A process it started runs beside it: at its start, a probe of a runtime or a tool
    # (`claude --version` through the door), which a worker that then fails outlives only by
    # moments; later, a job's.
    busy: bool


def worker(container) -> Optional[Worker]:
    """The box's worker, or None where it does not run (or the box does not answer)."""
    try:
        top = container.top(ps_args="-eo pid,ppid,args")
    except docker.errors.APIError:
        return None
    procs = [(str(p[0]), str(p[1]), " ".join(str(a) for a in p[2:])) for p in top.get("Processes") or []]
    own = {pid for pid, _, args in procs if protocol.WORKER_PROCESS in args}
    if not own:
        return None
    children: dict[str, list[str]] = {}
    for pid, ppid, _ in procs:
        children.setdefault(ppid, []).append(pid)
    below, todo = set(), list(own)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in below:
                below.add(child)
                todo.append(child)
    return Worker(pids=frozenset(own), busy=bool(below - own))


def worker_running(container) -> bool:
    return worker(container) is not None
