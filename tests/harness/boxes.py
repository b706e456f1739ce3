"""Walled boxes and their unwalled controls, attached to the test topology."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Callable, Optional

import docker

from imdbox import engine, layout, names
from imdbox.config import Config
from imdbox.startup import WALLS_UP  # the entrypoint's line that `box start` waits for
from imdbox.throwaway import LEAVING_S, once_free

from .topology import NO_HEALTHCHECK, PREFIX, Topology


@dataclass(frozen=True)
class Probe:
    outcome: str  # reached | refused | timeout | error
    detail: str

    @property
    def reached(self) -> bool:
        return self.outcome == "reached"


def unique(prefix: str) -> str:
    return f"{PREFIX}{prefix}-{uuid.uuid4().hex[:8]}"


def containers(client: docker.DockerClient, **filters) -> list[dict]:
    """The engine's containers (`filters` as `docker ps --filter`), from one listing and no
    inspection: other tests' containers come and go meanwhile (in a parallel run), and one
    removed between a listing and its inspection would fail the test that only looked."""
    return client.api.containers(all=True, filters=filters or None)


def names_from(client: docker.DockerClient, prefix: str) -> list[str]:
    """The containers whose name starts with `prefix` (a box's name: the box and its one-offs)."""
    found = (n.lstrip("/") for c in containers(client, name=prefix) for n in c["Names"])
    return sorted(n for n in found if n.startswith(prefix))


def over_volume(client: docker.DockerClient, image: str, volume: str, script: str, *args: str) -> str:
    """The output of `script` (sh; `args` are its $0, $1, ...) run as imd over `volume`,
    mounted read-only at /v, in a box of `image` with no entrypoint and no network."""
    return client.containers.run(
        image,
        entrypoint=["/bin/sh", "-c", script, *args],
        command=[],
        volumes={volume: {"bind": "/v", "mode": "ro"}},
        network_mode="none",
        user=f"{names.UID}:{names.UID}",
        labels={"imd-test": "1"},
        healthcheck=NO_HEALTHCHECK,
        remove=True,
        stderr=False,
    ).decode()


@contextlib.contextmanager
def volume(client: docker.DockerClient, prefix: str = "home", **create) -> Iterator[str]:
    """A fresh volume standing in for imd-worker-home (never the user's own); on the way
    out, pass or fail, every container using it and then the volume are removed.
    `create`: more `volumes.create` arguments (a size-limited driver, say)."""
    name = make_volume(client, prefix, **create)
    try:
        yield name
    finally:
        remove_volume(client, name)


def make_volume(client: docker.DockerClient, prefix: str, **create) -> str:
    """A fresh test volume's name: the caller removes it (remove_volume), or the run's sweep does."""
    name = unique(prefix)
    client.volumes.create(name, labels={"imd-test": "1"}, **create)
    return name


def remove_volume(client: docker.DockerClient, name: str) -> None:
    """Every container using volume `name`, then the volume: gone, or never made."""
    for c in client.containers.list(all=True, filters={"volume": name}, ignore_removed=True):
        engine.remove_box(c)
    once_free(lambda: client.volumes.get(name).remove(force=True))


def until_gone(client: docker.DockerClient, **filters) -> list[str]:
    """The names of the boxes `filters` match once those the engine removes on its own (a
    check's, auto_remove) are gone: within LEAVING_S, else whatever is left then."""
    deadline = time.monotonic() + LEAVING_S
    while (left := client.containers.list(all=True, filters=filters, ignore_removed=True)) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    return [c.name for c in left]


def copy_volume(client: docker.DockerClient, image: str, source: str, target: str) -> None:
    """Everything in volume `source` into `target`, each file's owner and mode kept (`cp -a`
    as root), in a box of `image` with no network."""
    client.containers.run(
        image,
        entrypoint=["cp", "-a", "/from/.", "/to/"],
        command=[],
        user="0",
        network_mode="none",
        volumes={source: {"bind": "/from", "mode": "ro"}, target: {"bind": "/to", "mode": "rw"}},
        labels={"imd-test": "1"},
        healthcheck=NO_HEALTHCHECK,
        remove=True,
    )


def _attach(client: docker.DockerClient, container, topo: Topology) -> None:
    for name in topo.network_names[1:]:
        client.networks.get(name).connect(container)


def engine_of(client: docker.DockerClient, *, image: str, volume: str = "", network: str = "bridge") -> engine.Engine:
    """box's own Engine around the suite's client, with a Config naming the test's image,
    volume and network, as the CLI makes one from IMD_BOX_*; its one-off boxes carry the
    harness's prefix, so a killed run's sweep finds them."""
    cfg = Config(
        image=image, base_container=f"{PREFIX}box", base_volume=volume or f"{PREFIX}none", network=network,
        env=dict(os.environ),
    )  # fmt: skip
    return engine.Engine.of(client, cfg)


def create_walled(
    client: docker.DockerClient,
    image: str,
    topo: Topology,
    *,
    volume: str,
    command: Sequence[str] = ("sleep", "infinity"),
    mutate: Optional[Callable[[dict], None]] = None,
    name: Optional[str] = None,
    alone_on: Optional[str] = None,
):
    """A box with the worker's exact flags, on the test networks; `mutate` lets a
    test break one flag (the product has no switch for that). `alone_on`: on that one
    network only, as `box` puts a box on one, and without Docker Desktop's names."""
    flags = engine.flags(
        engine_of(client, image=image, volume=volume), "test", command, name=name or unique("box"),
        network_name=alone_on or topo.network_names[0],
    )  # fmt: skip
    kwargs = flags.sdk_kwargs()
    if not alone_on:
        kwargs["extra_hosts"] = dict(topo.extra_hosts)  # what Docker Desktop provides
    kwargs["labels"] = {**kwargs["labels"], "imd-test": "1"}
    if mutate:
        mutate(kwargs)
    container = client.containers.create(**kwargs)
    if not alone_on:
        with removed_on_error(container):
            _attach(client, container, topo)
    return container


@contextlib.contextmanager
def removed_on_error(container):
    """A container half made (not attached, not started, walls never up) is removed
    before the error goes on: the caller never got it, so nothing else would."""
    try:
        yield container
    except BaseException:
        container.remove(force=True)
        raise


def start_walled(client, image, topo, *, volume, timeout: float = 30.0, **kw):
    """Start a walled box and wait for the entrypoint's verified-walls line."""
    container = create_walled(client, image, topo, volume=volume, **kw)
    with removed_on_error(container):
        container.start()
        wait_walls_up(container, timeout)
    return container


def wait_walls_up(container, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if WALLS_UP in container.logs():
            return
        container.reload()
        if container.status in ("exited", "dead"):
            raise RuntimeError(f"box exited before its walls were up:\n{container.logs().decode()}")
        time.sleep(0.1)
    raise RuntimeError(f"box walls not up after {timeout}s:\n{container.logs().decode()}")


def wait_exit(container, timeout: float = 60.0) -> tuple[int, str]:
    result = container.wait(timeout=timeout)
    return result["StatusCode"], container.logs().decode(errors="replace")


def start_control(client: docker.DockerClient, image: str, topo: Topology, name: Optional[str] = None):
    """Same image, same networks, same names, no walls: proves every listener is reachable."""
    container = client.containers.create(
        image,
        entrypoint=["sleep", "infinity"],
        command=[],
        name=name or unique("control"),
        network=topo.network_names[0],
        extra_hosts=dict(topo.extra_hosts),
        labels={"imd-test": "1"},
        healthcheck=NO_HEALTHCHECK,
    )
    with removed_on_error(container):
        _attach(client, container, topo)
        container.start()
    return container


def run(
    container, cmd: Sequence[str], user: str = "imd", timeout: int = 20, environment: Optional[dict] = None
) -> tuple[int, str]:
    """Run a command inside (as imd unless told); returns exit code and output. `environment`
    goes to it as the environment, on no command line in the box."""
    full = ["timeout", str(timeout), *cmd]
    result = container.exec_run(full, user=user, demux=False, environment=environment)
    return result.exit_code, (result.output or b"").decode(errors="replace")


def in_view(script: str) -> str:
    """`script` run in the worker's view of the box (worker/door/view), as the worker runs."""
    return f"exec {layout.WORKER_VIEW} /bin/bash -c {shlex.quote(script)}"


def as_imd(container, script: str, timeout: int = 60, environment: Optional[dict] = None) -> tuple[int, str]:
    """A shell script with the worker's own powers (the drop `box shell` uses)."""
    return run(container, [*engine.AS_IMD, "/bin/bash", "-c", script], "root", timeout, environment)


def classify_curl(code: int, out: str) -> Probe:
    found = re.search(r"imd-test-listener:[\w.-]+", out)
    if code == 0 and found:
        return Probe("reached", found.group(0))
    low = out.lower()
    if code == 28 or "timed out" in low:
        return Probe("timeout", out.strip())
    reasons = re.findall(r"(?:Immediate connect fail for|connect to) [^\n]*?: ([^\n]+)", out)
    if code == 7 and any(
        w in r.lower()
        for r in reasons
        for w in ("refused", "no route", "not permitted", "permission denied", "unreachable")
    ):
        return Probe("refused", reasons[0].strip())
    return Probe("error", f"curl exit {code}: {out.strip()}")


# The engine can lose an exec's output when its process ends at once (moby/moby#27289,
# docker/docker-py#2042). Seen here under a full run's load: a REJECTed curl's exit 7
# with no output at all, so no errno to tell a refusal from any other failure.
PROBE_TRIES = 3


def read(container, cmd: Sequence[str], user: str = "imd", timeout: int = 20) -> tuple[int, str]:
    """`run` for a command that always prints something and changes nothing: one that came
    back with no output lost it, and is asked again."""
    for _ in range(PROBE_TRIES):
        code, out = run(container, cmd, user=user, timeout=timeout)
        if out.strip():
            break
    return code, out


def http_probe(container, url: str, user: str = "imd", seconds: int = 3) -> Probe:
    # -v: curl 8 says only "Could not connect"; the verbose lines carry the errno. They come
    # before anything else ("* Trying"), so a probe always prints (a GET to one of the
    # harness's own listeners, which changes nothing).
    cmd = ["curl", "-sS", "-v", "-g", "-m", str(seconds), url]
    return classify_curl(*read(container, cmd, user=user, timeout=seconds + 5))


def pid_of(container, pattern: str) -> int:
    """The pid (as seen inside) of the first process whose command line matches."""
    code, out = run(container, ["pgrep", "-o", "-f", pattern], user="root")
    if code != 0:
        raise RuntimeError(f"no process matching {pattern!r} in the box")
    return int(out.split()[0])


def proc_status(container, pid: int) -> dict:
    code, out = run(container, ["cat", f"/proc/{pid}/status"], user="root")
    assert code == 0, out
    fields = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields
