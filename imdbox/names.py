"""The names the box uses in Docker, in one place."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

IMAGE = "imd-box:latest"  # the local tag every command runs
PUBLISHED_IMAGE = "ghcr.io/identity-md/box:latest"  # what `box pull` fetches by default
DEFAULT_BASE_IMAGE = "debian:trixie-slim"
CONTAINER = "imd-box"  # the long-running worker box
VOLUME = "imd-worker-home"  # logins, the worker, pairing; never in the image
HOSTNAME = "imd-box"
HOME = "/home/imd"

# Every container the box command creates carries this label, so a container of
# someone else's that happens to be called `imd-box` is never touched.
LABEL = "io.identitymd.box"
