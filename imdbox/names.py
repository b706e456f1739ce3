"""The names and fixed facts the box uses, in one place. What a command may override
(the names in Docker, the seat) is its Config (config.py), made once in the CLI."""

import re
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parent.parent

DEFAULT_IMAGE = "imd-box:latest"
PUBLISHED_IMAGE = "ghcr.io/identity-md/box:latest"  # what `box pull` fetches by default
DEFAULT_BASE_IMAGE = "debian:trixie-slim"
DEFAULT_CONTAINER = "imd-box"
DEFAULT_VOLUME = "imd-worker-home"
# Lower case, digits, `-` and `_`, as Docker names allow; short enough to read in a table.
SEAT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,23}")
HOSTNAME = "imd-box"
# The IMD control plane's health URL (the worker's DEFAULT_SERVER, api.imd.fun): `box check`'s
# internet line's target unless `box check --url` names another.
DEFAULT_INTERNET_URL = "https://api.imd.fun/health"
HOME = "/home/imd"
UID = 1000  # the worker user `imd`, as the Dockerfile makes it

# Every container the box command creates carries this label, so a container of
# someone else's that happens to be called `imd-box` is never touched.
LABEL = "io.identitymd.box"


def seat_command(seat: Optional[str], *words: str) -> str:
    """A box command for a seat (None: the one without a name)."""
    return " ".join(["box", *(["--seat", seat] if seat is not None else []), *words])
