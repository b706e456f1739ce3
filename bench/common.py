"""What the bench's scenarios and its runner share: the state (`Bench`), the goals, the log, the
`box` command pointed at the bench's own names, and the timings and rows they are made of."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, Optional

from bench.report import GB, Row
from tests.harness import boxes
from tests.harness.cli import cli_env, run_box, start_box

ROOT = Path(__file__).resolve().parent.parent

PREFIX = "imdbench-"

# The goals docs/performance.md states (seconds, or bytes for the image).
GOALS = {
    "image": 1.5 * GB,
    "warm": 15.0,
    "check": 10.0,
    "check_starts": 8.0,  # the whole check over a bare walled start as `box start` makes it, side by side
    "start": 1.0,  # `box start` until the worker process runs
    "help": 0.3,
    "job": 20.0,
    "jail": 1.2,  # the jailed job's median over the unjailed one's
    "hands": 1.2,  # the worker's jailed git and forge steps over the plain ones
    "v4hook": 1.1,  # the same on a v4 hook job, whose compile outweighs the calls' own cost
    "commands": 1.1,  # a job's own npm and forge command in its jail over the same without it
    "net": 0.05,  # a job's jail with its own network, an empty run start to end
    "door": 0.010,  # a call through the door over the same call as the worker made it before the door
    "broker": 0.005,  # a request through the login broker over the same request straight to Anthropic
}


def log(msg: str) -> None:
    sys.stderr.write(f"bench: {msg}\n")
    sys.stderr.flush()


# --------------------------------------------------------------------------- the box command
class Box:
    """The `box` command as a user runs it (tests/harness/cli.py), pointed at the bench's own names."""

    def __init__(self, image: str, container: str, volume: str, network: str):
        launcher = ROOT / "box"
        self.has_launcher = launcher.is_file() and os.access(launcher, os.X_OK)
        self.env = cli_env(
            IMD_BOX_IMAGE=image, IMD_BOX_CONTAINER=container, IMD_BOX_VOLUME=volume, IMD_BOX_NETWORK=network
        )
        # A user's Python keeps box's bytecode from its first run on; a machine that sets this
        # (this project's CI machine does) would have every timed command compile box and its
        # libraries again: 0.2-0.3 s of a `box start` of 1.0 s, measured.
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run(self, *args: str, launcher: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        # fresh: the bench times what a user waits for, interpreter start included.
        return run_box(*args, env=self.env, timeout=timeout, launcher=launcher and self.has_launcher, fresh=True)

    def popen(self, *args: str, launcher: bool = True) -> subprocess.Popen:
        return start_box(*args, env=self.env, launcher=launcher and self.has_launcher, stderr=subprocess.STDOUT)


def tail(text: str, n: int = 3) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return " / ".join(lines[-n:])[:300] or "(no output)"


def cost_row(label: str, jailed: Row, plain: Row, goal: float) -> Row:
    """The jailed median over the plain one, against its goal."""
    ratio = statistics.median(jailed.samples) / statistics.median(plain.samples)
    cost = Row(label, goal=None, value_text=f"{ratio:.2f}×")
    cost.met, cost.note = ratio <= goal, f"goal ≤ {goal}×, medians of alternating runs"
    return cost


def added_row(label: str, through: Row, without: Row, goal: Optional[float] = None) -> Row:
    """What `through` adds to `without` (their medians), against its goal in seconds, if any."""
    added = statistics.median(through.samples) - statistics.median(without.samples)
    row = Row(label, value_text=f"{added * 1000:+.1f} ms", note="medians of alternating runs")
    if goal is not None:
        row.met, row.note = added <= goal, f"goal ≤ +{goal * 1000:.0f} ms, {row.note}"
    return row


def timed_runs(box, command: str, runs: int, *, view: bool = False) -> list[float]:
    """`command` run `runs` times in one shell as imd, in a job's node of the bench's (in the
    worker's view, `view`): each run's seconds. The first run that fails ends it, said."""
    from tests.harness import jobs

    node = f"{jobs.WORK_ROOT}/bench/node"
    script = (
        f"mkdir -p {node} && cd {node} && for i in $(seq {runs}); do s=$EPOCHREALTIME; {command} || exit 1; "
        'echo "took $(( ${EPOCHREALTIME/./} - ${s/./} ))"; done'
    )
    code, out = boxes.as_imd(box, boxes.in_view(script) if view else script, timeout=120)
    if code != 0:
        raise RuntimeError(f"`{command}` did not run: {tail(out)}")
    return [int(line.split()[1]) / 1e6 for line in out.splitlines() if line.startswith("took ")]


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# --------------------------------------------------------------------------- the shared state
class Bench:
    """What the scenarios share: the options, the engine, the bench's own names, the rows."""

    def __init__(self, args: argparse.Namespace):
        import docker

        from imdbox import build, names

        self.args = args
        self.build = build
        self.names = names
        self.client = docker.from_env(timeout=900)
        self.client.ping()
        self.run_id = uuid.uuid4().hex[:8]
        self.image = args.image or f"{PREFIX}box:{self.run_id}"
        self.container = f"{PREFIX}box-{self.run_id}"
        self.own_volume: Optional[str] = None
        self.volume = args.volume or f"{PREFIX}home-{self.run_id}"
        self.made_images: set[str] = set()
        self.rows: list[Row] = []
        self.layers: list[list[str]] = []
        self.box = Box(self.image, self.container, self.volume, args.network)

    # ---------------------------------------------------------------- clean-up
    def remove_container(self) -> None:
        import docker.errors

        try:
            self.client.containers.get(self.container).remove(force=True)
        except docker.errors.NotFound:
            pass

    def remove_volume(self, name: str) -> None:
        import docker.errors

        try:
            for c in self.client.containers.list(all=True, filters={"volume": name}):
                if c.name.startswith(PREFIX):
                    c.remove(force=True)
            self.client.volumes.get(name).remove(force=True)
        except docker.errors.APIError as exc:
            log(f"could not remove the volume {name}: {exc}")

    def cleanup(self) -> None:
        import docker.errors

        self.remove_container()
        if self.own_volume:
            self.remove_volume(self.own_volume)
        if self.args.image or self.args.keep_image:
            return
        try:
            self.client.images.remove(self.image)  # our tag; layers others use stay
        except docker.errors.APIError:
            pass
        for image_id in self.made_images:  # cold builds' images nobody else tagged
            try:
                if not self.client.images.get(image_id).tags:
                    self.client.images.remove(image_id)
            except docker.errors.APIError:
                pass
