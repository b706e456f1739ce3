"""Building the box image from this checkout.

The build context is assembled here rather than sent as the whole folder: only
the files the Dockerfile uses (so a change elsewhere keeps the cache), plus any
extra CA certificates the user gave, split one per file as update-ca-certificates
wants them.
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Callable, Optional

from . import names
from .errors import BuildError
from .throwaway import interruptible

# What the Dockerfile COPYs; nothing else is sent to the engine.
CONTEXT_FILES = ("Dockerfile", "entrypoint.sh", "image", "firewall", "worker", "browser", "ca")

# The labels that say what an image was built on; with the CA certificates it
# keeps (layout.CA_DIR), the next build and update read them back, so they
# rebuild the same way.
BASE_LABEL = f"{names.LABEL}.base-image"
APT_LABEL = f"{names.LABEL}.apt-refresh"

_PEM = re.compile(r"-----BEGIN CERTIFICATE-----\s.*?-----END CERTIFICATE-----", re.S)


def split_certificates(text: str) -> list[str]:
    """Each PEM certificate in a file or bundle, in order."""
    return [m.group(0) + "\n" for m in _PEM.finditer(text)]


def read_ca_file(path: Path) -> list[str]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise BuildError(f"cannot read the CA certificate {path}: {exc.strerror}") from exc
    certs = split_certificates(text)
    if not certs:
        raise BuildError(f"{path} holds no PEM certificate (-----BEGIN CERTIFICATE----- ...)")
    return certs


def _filter(info: tarfile.TarInfo) -> Optional[tarfile.TarInfo]:
    # Reproducible context: owner and time must not change the layer cache.
    if "__pycache__" in info.name or info.name.endswith(".crt"):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def context_tar(root: Path = names.REPO_ROOT, ca_certs: Optional[list[str]] = None) -> io.BytesIO:
    """The build context as an in-memory tar: the Dockerfile's inputs and the CA files."""
    missing = [f for f in CONTEXT_FILES if not (root / f).exists()]
    if missing:
        raise BuildError(f"not a box checkout ({root}): missing {', '.join(missing)}. Run `box build` from a clone.")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in CONTEXT_FILES:
            tar.add(str(root / name), arcname=name, filter=_filter)
        for i, cert in enumerate(ca_certs or []):
            data = cert.encode()
            info = tarfile.TarInfo(f"ca/extra-{i:03d}.crt")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def git_revision(root: Path = names.REPO_ROOT) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


def build_args(base_image: str, version: str, revision: str, apt_refresh: str = "") -> dict[str, str]:
    return {"BASE_IMAGE": base_image, "VERSION": version, "REVISION": revision, "APT_REFRESH": apt_refresh}


def apt_refresh_stamp() -> str:
    """The APT_REFRESH value of an update: today (UTC). Debian's packages are fetched
    anew once a day at most; a second update the same day keeps the day's layers."""
    return time.strftime("%Y-%m-%d", time.gmtime())


def build_image(
    api,
    *,
    tag: str = names.DEFAULT_IMAGE,
    base_image: str = names.DEFAULT_BASE_IMAGE,
    ca_certs: Optional[list[str]] = None,
    apt_refresh: str = "",
    no_cache: bool = False,
    root: Path = names.REPO_ROOT,
    on_line: Callable[[str], None] = lambda line: None,
) -> str:
    """Build through the engine's API (`api` is a docker.APIClient); return the image id.

    `ca_certs`: extra PEM certificates (read_ca_file). `apt_refresh`: a new value
    rebuilds the Debian package layers. Every line the build prints goes to `on_line`;
    a failed step raises BuildError (failed_step), whose lines `on_line` has had already.
    """
    from . import __version__

    context = context_tar(root, ca_certs)
    stream: Iterator[dict] = api.build(
        fileobj=context,
        custom_context=True,
        tag=tag,
        nocache=no_cache,
        rm=True,
        forcerm=True,
        pull=False,
        buildargs=build_args(base_image, __version__, git_revision(root), apt_refresh),
        decode=True,
    )
    image_id = None
    step = ""
    for event in interruptible(stream):
        if "error" in event:
            raise failed_step(step, event["error"], base_image)
        text = event.get("stream", "")
        for line in text.splitlines():
            if line.strip():
                step = line if line.startswith("Step ") else step
                on_line(line)
        if "aux" in event and "ID" in event["aux"]:
            image_id = event["aux"]["ID"]
    if not image_id:
        raise BuildError("the engine finished the build without giving an image id")
    return image_id


def failed_step(step: str, error: str, base_image: str) -> BuildError:
    """The one line a failed build ends with: the step and the engine's word, then what to do.
    A FROM that failed is the base image, missing here and out of reach (no Docker Hub)."""
    error = " ".join(error.split())
    if step.partition(" : ")[2].startswith("FROM "):
        return BuildError(
            f"the base image {base_image} is not on this engine and could not be pulled ({error}): "
            "make one from Debian's archive with `scripts/make-base-image.sh` and build with `--base-image` "
            "and the name it prints, or name with `--base-image` a Debian trixie image this engine has"
        )
    at = f" at {step.split(' : ')[0].removeprefix('Step ')}" if step else ""
    return BuildError(f"the image build failed{at}: {error}: fix what its output above names, then build again")
