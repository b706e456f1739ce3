"""The names the box uses in Docker, in one place.

IMD_BOX_IMAGE, IMD_BOX_CONTAINER, IMD_BOX_VOLUME and IMD_BOX_NETWORK override them
(advanced; the tests use them so they never touch a user's own box).
"""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

IMAGE = os.environ.get("IMD_BOX_IMAGE") or "imd-box:latest"  # the local tag every command runs
PUBLISHED_IMAGE = "ghcr.io/identity-md/box:latest"  # what `box pull` fetches by default
DEFAULT_BASE_IMAGE = "debian:trixie-slim"
CONTAINER = os.environ.get("IMD_BOX_CONTAINER") or "imd-box"  # the long-running worker box
VOLUME = os.environ.get("IMD_BOX_VOLUME") or "imd-worker-home"  # logins, the worker, pairing; never in the image
# A user-defined bridge network to run every box on (default: Docker's own bridge).
NETWORK = os.environ.get("IMD_BOX_NETWORK") or "bridge"
HOSTNAME = "imd-box"
HOME = "/home/imd"
UID = 1000  # the worker user `imd`, as the Dockerfile makes it

# Every container the box command creates carries this label, so a container of
# someone else's that happens to be called `imd-box` is never touched.
LABEL = "io.identitymd.box"
