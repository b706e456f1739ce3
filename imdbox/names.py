"""The names the box uses in Docker, in one place.

IMD_BOX_IMAGE, IMD_BOX_CONTAINER, IMD_BOX_VOLUME and IMD_BOX_NETWORK override them
(advanced; the tests use them so they never touch a user's own box).

A seat (`box --seat NAME`) is one more worker identity on the same engine: its own
container and volume (so its own settings, logins and pairing), `-NAME` after the
names above. Every box shares the one image.
"""

import os
import re
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parent.parent

IMAGE = os.environ.get("IMD_BOX_IMAGE") or "imd-box:latest"  # the local tag every command runs
PUBLISHED_IMAGE = "ghcr.io/identity-md/box:latest"  # what `box pull` fetches by default
DEFAULT_BASE_IMAGE = "debian:trixie-slim"
BASE_CONTAINER = os.environ.get("IMD_BOX_CONTAINER") or "imd-box"  # the long-running worker box
BASE_VOLUME = os.environ.get("IMD_BOX_VOLUME") or "imd-worker-home"  # logins, the worker, pairing; never in the image
# The seat this command acts on (None: the one without a name) and its names; use_seat sets them.
SEAT: Optional[str] = None
CONTAINER = BASE_CONTAINER
VOLUME = BASE_VOLUME
# Lower case, digits, `-` and `_`, as Docker names allow; short enough to read in a table.
SEAT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,23}")
# A user-defined bridge network to run every box on (default: Docker's own bridge).
NETWORK = os.environ.get("IMD_BOX_NETWORK") or "bridge"
HOSTNAME = "imd-box"
HOME = "/home/imd"
UID = 1000  # the worker user `imd`, as the Dockerfile makes it

# Every container the box command creates carries this label, so a container of
# someone else's that happens to be called `imd-box` is never touched.
LABEL = "io.identitymd.box"


def seat_names(seat: Optional[str]) -> tuple[str, str]:
    """A seat's container and volume."""
    return (f"{BASE_CONTAINER}-{seat}", f"{BASE_VOLUME}-{seat}") if seat else (BASE_CONTAINER, BASE_VOLUME)


def seat_of_volume(volume: str) -> tuple[bool, Optional[str]]:
    """Whether a volume is a seat's, and whose (None: the seat without a name)."""
    if volume == BASE_VOLUME:
        return True, None
    seat = volume[len(BASE_VOLUME) + 1 :] if volume.startswith(BASE_VOLUME + "-") else ""
    return bool(SEAT_NAME.fullmatch(seat)), seat or None


def use_seat(seat: Optional[str]) -> None:
    """Act on this seat from now on (the caller has checked the name against SEAT_NAME)."""
    global SEAT, CONTAINER, VOLUME
    SEAT = seat
    CONTAINER, VOLUME = seat_names(seat)


def box_command(*words: str) -> str:
    """A box command the user is told to run, for the seat this command acts on:
    `box start`, or `box --seat alice start` under `box --seat alice`."""
    return seat_command(SEAT, *words)


def seat_command(seat: Optional[str], *words: str) -> str:
    """A box command for a seat (None: the one without a name)."""
    return " ".join(["box", *(["--seat", seat] if seat is not None else []), *words])
