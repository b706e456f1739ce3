"""The real agent CLIs in a test volume, installed from npm by box's own install path.

`install.sh agents` (install.run_install, exactly as `box setup`/`box runtime` run it)
runs in a one-off box made from the product's RunFlags, on Docker's default bridge
network with every wall up, and installs the latest @anthropic-ai/claude-code,
@openai/codex and @vibe-kit/grok-cli. That box is the only one of these tests that reaches
off this machine, and only npm (package installs). Install time and the volume's size are
printed (pytest -s shows them). A run installs once (the world's `agents` in tests/conftest.py),
into a volume no test changes; each test process takes a copy of its own for every test of its
that asks for `agents`. The modules that use them go in one of three xdist groups (GROUPS), each
run by one worker, so that the three run side by side and no two workers share a volume the tests
change.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from imdbox import install
from tests.harness import boxes

RUNTIMES = ["claude", "codex", "grok"]
# Every module whose tests use the installed CLIs is in one of these, about a third of the time
# each. In two, each group was the longest thing a worker ran (some 660 s of a 690 s run on a
# 2-core machine): the whole run waited for it.
GROUPS = ("agent_clis", "agent_clis_2", "agent_clis_3")


def install_into(client, image: str, volume: str) -> None:
    """The three CLIs into `volume`, by install.sh in a walled box on `bridge`."""
    # box's own Engine on the test image and volume; the npm specs are install.sh's
    # defaults (@latest from npm), never a test feed: nothing is passed on to it.
    eng = boxes.engine_of(client, image=image, volume=volume)
    started = time.monotonic()
    install.run_install(eng, "agents", install.install_env(RUNTIMES, 2))
    seconds = time.monotonic() - started
    sizes = volume_sizes(client, image, volume)
    print(
        f"\n[agents] install.sh agents ({','.join(RUNTIMES)}) took {seconds:.0f} s; volume {sizes['total']}"
        f" (npm global {sizes['global']})"
    )


@contextlib.contextmanager
def installed(client, image: str) -> Iterator[str]:
    """A test volume with the three CLIs (install_into), removed on the way out: the bench's, and a
    run's one install where no workers share it."""
    with boxes.volume(client, "agents") as volume:
        install_into(client, image, volume)
        yield volume


def volume_sizes(client, image: str, volume: str) -> dict[str, str]:
    """`du` of the volume and its npm prefix, in a box with no network (the install box keeps its
    npm cache in a folder of its own, never the volume's)."""
    # One du each: given a folder and its parent at once, du counts the folder once and names only one.
    out = boxes.over_volume(client, image, volume, "for d in /v /v/.npm-global; do /usr/bin/du -sh $d; done")
    size = dict(reversed(line.split("\t")) for line in out.strip().splitlines())
    return {"total": size["/v"], "global": size["/v/.npm-global"]}
