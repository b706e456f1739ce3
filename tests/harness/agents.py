"""The real agent CLIs in a test volume, installed from npm by box's own install path.

`install.sh agents` (lifecycle.run_install, exactly as `box setup`/`box runtime` run it)
runs in a one-off box made from the product's RunFlags, on Docker's default bridge
network with every wall up, and installs the latest @anthropic-ai/claude-code,
@openai/codex and @vibe-kit/grok-cli. That box is the only one of these tests that reaches
off this machine, and only npm (package installs). Install time and the volume's size are
printed (pytest -s shows them). One install serves every test that asks for `agents`
(the tests that use it share one xdist group, so one worker).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from imdbox import lifecycle, names
from tests.harness import boxes

RUNTIMES = ["claude", "codex", "grok"]
XDIST_GROUP = "agent_clis"  # every module whose tests use the installed CLIs


@contextlib.contextmanager
def installed(client, image: str) -> Iterator[str]:
    """A test volume with the three CLIs, installed by install.sh in a walled box on `bridge`."""
    saved = (names.IMAGE, names.VOLUME, names.NETWORK)
    mp = pytest.MonkeyPatch()
    with boxes.volume(client, "agents") as volume:
        try:
            # The product's own names point at the test image and volume; the npm specs are
            # install.sh's defaults (@latest from npm), never a test feed.
            names.IMAGE, names.VOLUME, names.NETWORK = image, volume, "bridge"
            for key in lifecycle.PASSTHROUGH_ENV:
                mp.delenv(key, raising=False)
            started = time.monotonic()
            lifecycle.run_install(client, "agents", lifecycle.install_env(RUNTIMES, 2))
            seconds = time.monotonic() - started
            names.IMAGE, names.VOLUME, names.NETWORK = saved
            sizes = volume_sizes(client, image, volume)
            print(
                f"\n[agents] install.sh agents ({','.join(RUNTIMES)}) took {seconds:.0f} s; volume {sizes['total']}"
                f" (npm global {sizes['global']}, npm cache {sizes['cache']})"
            )
            yield volume
        finally:
            names.IMAGE, names.VOLUME, names.NETWORK = saved
            mp.undo()


def volume_sizes(client, image: str, volume: str) -> dict[str, str]:
    """`du` of the volume, its npm prefix and its npm cache, in a box with no network."""
    # One du each: given a folder and its parent at once, du counts the folder once and names only one.
    out = boxes.over_volume(client, image, volume, "for d in /v /v/.npm-global /v/.npm; do /usr/bin/du -sh $d; done")
    size = dict(reversed(line.split("\t")) for line in out.strip().splitlines())
    return {"total": size["/v"], "global": size["/v/.npm-global"], "cache": size["/v/.npm"]}
