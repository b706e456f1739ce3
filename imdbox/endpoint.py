"""Which Docker engine a command talks to, and the SDK client for it, with clear errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import docker
import docker.errors

from .errors import BoxError


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


def endpoint(env: Mapping[str, str]) -> Endpoint:
    from docker.context import ContextAPI
    from docker.context.config import get_current_context_name

    if env.get("DOCKER_HOST"):
        return Endpoint(env["DOCKER_HOST"], "DOCKER_HOST")
    name = env.get("DOCKER_CONTEXT") or get_current_context_name()
    if not name or name == "default":
        return Endpoint(LOCAL_SOCKET, LOCAL)
    try:
        ctx = ContextAPI.get_context(name)
    except docker.errors.DockerException as exc:
        raise BoxError(f"the docker context {name} cannot be read ({exc}): `docker context ls`") from None
    if ctx is None or not ctx.Host:
        raise BoxError(f"the docker context {name} does not exist here: `docker context ls`, then `docker context use`")
    return Endpoint(ctx.Host, f"context {name}", name, ctx.TLSConfig)


def client_for(ep: Endpoint, env: Mapping[str, str]) -> docker.DockerClient:
    """The SDK's client for the engine, asked once that it answers. Without a context the
    SDK reads DOCKER_HOST and its TLS settings from `env`, as the docker CLI does."""
    ssh = ep.host.startswith("ssh://")  # the system's ssh (its keys, its known_hosts), not paramiko
    if ssh:
        from . import sshfix

        sshfix.fix_ssh_shell_out()
    try:
        if ep.context is not None:
            client = docker.DockerClient(base_url=ep.host, tls=ep.tls or False, timeout=300, use_ssh_client=ssh)
        else:
            client = docker.from_env(timeout=300, use_ssh_client=ssh, environment=dict(env))
        if ssh:
            sshfix.reuse_ssh_connections(client)
        client.ping()
    except Exception as exc:  # the SDK's, requests' own when the socket answers oddly, ssh's
        raise BoxError(_engine_error(ep, str(exc))) from None
    return client


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
