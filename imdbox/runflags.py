"""The flags every box runs with, defined once.

`box start`, `setup`, `shell`, `status` and `check` all build their container
from `RunFlags`: the docker SDK gets `sdk_kwargs()`, and the one place that needs
the docker CLI (an interactive TTY) gets the same definition as `cli_args()`.
A check that passes therefore speaks for the worker's own box.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import layout, names

# Only the entrypoint (root, before the drop) uses these; the worker has none.
# NET_ADMIN sets the firewall, SETUID/SETGID become `imd`, SETPCAP empties the
# bounding set. tests/world/test_image_walls.py removes each and sees the box refuse to start.
CAPABILITIES = ("NET_ADMIN", "SETGID", "SETPCAP", "SETUID")

MAX_CPUS = 4
MAX_MEMORY = 6 * 1024**3  # 6 GiB, or Docker's total if that is less
PIDS_LIMIT = 2048  # Claude Code, builds and Chromium together stay far below
SHM_SIZE = 512 * 1024**2  # Chromium keeps its renderers' memory in /dev/shm
STOP_TIMEOUT = 45  # seconds between SIGTERM and SIGKILL: the worker finishes cleanly
LOG_MAX_SIZE = "10m"
LOG_MAX_FILES = "3"
# The root filesystem is read-only: outside the volume, only these are writable
# (the entrypoint's iptables lock in /run; temp files of the worker, npm, Chromium
# and builds in /tmp and /var/tmp, where tools also run what they unpack: `exec`,
# which Docker's tmpfs leaves out by default). None keeps setuid or device files.
# And the box's own folders (layout.OWN_DIR: the door's, the launchers', the login broker's),
# imd's alone from the start (no one else can make it first), where no place the worker names
# can be; `exec` for the views' stand-ins, which the worker runs.
TMPFS = {
    "/tmp": "rw,exec,nosuid,nodev,size=1g,mode=1777",
    "/var/tmp": "rw,exec,nosuid,nodev,size=256m,mode=1777",
    "/run": "rw,nosuid,nodev,noexec,size=16m,mode=755",
    layout.OWN_DIR: f"rw,exec,nosuid,nodev,size=64m,mode=700,uid={names.UID},gid={names.UID}",
}
# The one device a box gets: the TUN device, through which each job's jail gets a network of its
# own (worker/jail, pasta). It opens nothing in the box's own network: a TUN interface is made
# only in a network namespace where the maker holds CAP_NET_ADMIN, a job's own.
TUN = "/dev/net/tun"
TUN_DEVICE = f"{TUN}:{TUN}:rwm"  # the same path inside, read, write and mknod by the cgroup
# What every command box runs in a box gets as PATH: the image's own directories (layout.py).
SYSTEM_PATH = layout.SYSTEM_PATH
# The entrypoint REJECTs each of these (the Mac's or the Linux host's own addresses).
HOST_ADDRS_ENV = "IMD_BOX_HOST_ADDRS"
# How a message from inside the box names a box command: the seat's whose volume it runs
# on (`box --seat alice setup`), or a user following it would act on another seat.
BOX_COMMAND_ENV = "IMD_BOX_COMMAND"


def seccomp_path() -> Path:
    """seccomp.json: in a checkout at the repo root, when installed inside the package."""
    for candidate in (names.REPO_ROOT / "seccomp.json", Path(__file__).with_name("seccomp.json")):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("seccomp.json is missing from this installation of box")


def _bare(image: str, role: str, entrypoint: list[str], network_mode: str) -> dict:
    """`containers.create` kwargs for a box that only runs (or holds) one image tool,
    not the entrypoint: as nobody, no capability, nothing writable, no mount."""
    return dict(
        image=image,
        entrypoint=entrypoint,
        command=[],
        user="65534:65534",
        network_mode=network_mode,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges:true"],
        read_only=True,
        labels={names.LABEL: "1", f"{names.LABEL}.role": role},
    )


def host_lister_kwargs(image: str) -> dict:
    """The one box that sees the host's network: it only lists the host's addresses
    (imdbox/hostaddrs.py) with `ip` itself. Not the entrypoint, which would set a firewall there."""
    kwargs = _bare(image, "host-addresses", ["/usr/bin/ip", "-4", "-o", "addr", "show"], "host")
    return {**kwargs, "pids_limit": 16, "mem_limit": 64 * 1024**2}


def image_reader_kwargs(image: str) -> dict:
    """A box that is only created, never started, to copy files out of an image (the CA
    certificates a build remembers): no volume, no network, nothing runs."""
    return _bare(image, "image-reader", ["/bin/true"], "none")


@dataclass(frozen=True)
class EngineLimits:
    """What the Docker engine has: the box takes at most that."""

    cpus: int
    memory: int  # bytes

    @classmethod
    def from_info(cls, info: dict) -> EngineLimits:
        return cls(cpus=int(info["NCPU"]), memory=int(info["MemTotal"]))

    @property
    def box_cpus(self) -> float:
        """What each box may use: every seat's box gets this much, not a share of it."""
        return float(min(MAX_CPUS, self.cpus))

    @property
    def box_memory(self) -> int:
        """Each box's memory cap: seats that together would need more are refused at start."""
        return min(MAX_MEMORY, self.memory)


@dataclass(frozen=True)
class RunFlags:
    limits: EngineLimits
    image: str = names.DEFAULT_IMAGE
    command: Optional[Sequence[str]] = None
    name: Optional[str] = None
    role: str = "worker"  # what the box is for (worker, setup, shell, check, ...): a label, never a wall
    network: str = "bridge"
    volume: str = names.DEFAULT_VOLUME  # the seat's (engine.flags names it)
    box_command: str = "box"  # how the box tells the user to run box for this seat ("box --seat alice")
    environment: dict[str, str] = field(default_factory=dict)
    restart: bool = False  # only the long-running worker restarts with Docker
    interactive: bool = False
    host_addresses: Sequence[str] = ()  # IPv4 addresses of the Mac and of Docker's host

    @property
    def cpus(self) -> float:
        return self.limits.box_cpus

    @property
    def memory(self) -> int:
        return self.limits.box_memory

    @property
    def labels(self) -> dict[str, str]:
        return {names.LABEL: "1", f"{names.LABEL}.role": self.role}

    def security_opts(self, seccomp: str) -> list[str]:
        return ["no-new-privileges:true", f"seccomp={seccomp}"]

    @property
    def env(self) -> dict[str, str]:
        env = dict(self.environment)
        env[BOX_COMMAND_ENV] = self.box_command
        if self.host_addresses:
            env[HOST_ADDRS_ENV] = " ".join(self.host_addresses)
        return env

    def sdk_kwargs(self) -> dict:
        """Keyword arguments for docker SDK `containers.create` / `containers.run`."""
        kwargs = dict(
            image=self.image,
            command=list(self.command) if self.command else None,
            hostname=names.HOSTNAME,
            cap_drop=["ALL"],
            cap_add=list(CAPABILITIES),
            # The API takes the profile's text; the CLI reads the file itself.
            security_opt=self.security_opts(seccomp_path().read_text()),
            nano_cpus=int(self.cpus * 1e9),
            mem_limit=self.memory,
            memswap_limit=self.memory,  # swap equal to memory: no swap on top
            pids_limit=PIDS_LIMIT,
            shm_size=SHM_SIZE,
            devices=[TUN_DEVICE],
            read_only=True,
            tmpfs=dict(TMPFS),
            # The volume is the only mount: no host path, no Docker socket.
            volumes={self.volume: {"bind": names.HOME, "mode": "rw"}},
            network=self.network,
            environment=self.env,
            labels=self.labels,
            stop_signal="SIGTERM",
            log_config={"type": "json-file", "config": {"max-size": LOG_MAX_SIZE, "max-file": LOG_MAX_FILES}},
            tty=self.interactive,
            stdin_open=self.interactive,
        )
        if self.name:
            kwargs["name"] = self.name
        if self.restart:
            kwargs["restart_policy"] = {"Name": "unless-stopped"}
        return kwargs

    def cli_args(self) -> list[str]:
        """The same box as `docker run` arguments (for the interactive shell)."""
        args = ["--cap-drop", "ALL"]
        for cap in CAPABILITIES:
            args += ["--cap-add", cap]
        for opt in self.security_opts(str(seccomp_path())):
            args += ["--security-opt", opt]
        args += [
            "--hostname", names.HOSTNAME,
            "--cpus", f"{self.cpus:g}",
            "--memory", str(self.memory),
            "--memory-swap", str(self.memory),
            "--pids-limit", str(PIDS_LIMIT),
            "--shm-size", str(SHM_SIZE),
            "--device", TUN_DEVICE,
            "--read-only",
            *[a for path, opts in TMPFS.items() for a in ("--tmpfs", f"{path}:{opts}")],
            "--mount", f"type=volume,source={self.volume},target={names.HOME}",
            "--network", self.network,
            "--stop-signal", "SIGTERM",
            "--log-driver", "json-file",
            "--log-opt", f"max-size={LOG_MAX_SIZE}",
            "--log-opt", f"max-file={LOG_MAX_FILES}",
        ]  # fmt: skip
        for key, value in sorted(self.labels.items()):
            args += ["--label", f"{key}={value}"]
        for key, value in sorted(self.env.items()):
            args += ["--env", f"{key}={value}"]
        if self.name:
            args += ["--name", self.name]
        if self.restart:
            args += ["--restart", "unless-stopped"]
        if self.interactive:
            args += ["--interactive", "--tty"]
        return args + [self.image] + list(self.command or [])
