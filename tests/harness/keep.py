"""What a fault must never touch: the files in the volume that a user cannot get back
by running box again (the login, the device key) or that say how the worker runs.

    before = kept_files(client, env)
    ... the fault ...
    assert kept_files(client, env) == before
"""

from __future__ import annotations

from typing import Optional

import docker

KEPT = [
    "/home/imd/.claude/.credentials.json",  # the Claude Code login
    "/home/imd/.identitymd/config.json",  # the worker's device key (and its pairing)
    "/home/imd/.identitymd/tools.json",  # the tools the worker offers (the browser)
    "/home/imd/.imd-box/settings.env",  # the runtime(s) and concurrency
]


def kept_files(client: docker.DockerClient, env) -> dict[str, Optional[bytes]]:
    """The KEPT files of `env`'s volume, byte for byte (None: not there), read by a
    container that is created and never started."""
    from tests.fake_worker.fixtures import volume_files

    return volume_files(client, env, KEPT)
