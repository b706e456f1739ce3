"""`box pull` and `box build`: the box image, with live progress."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import docker.errors
from docker.utils import parse_repository_tag

from . import build as build_mod
from . import engine, names, ui, volume
from .engine import Engine
from .errors import BoxError
from .layout import CA_DIR
from .throwaway import interruptible


def pull(eng: Engine, reference: str) -> None:
    """Pull `reference` with per-layer progress and tag it as the box image."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    repo, tag = parse_repository_tag(reference)
    tag = tag or "latest"
    if "@" in repo:
        raise BoxError(f"pull a tag, not a digest: {reference}", code=2)
    tasks: dict[str, int] = {}
    try:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), DownloadColumn(), console=ui.console(), transient=False
        ) as progress:
            for event in interruptible(eng.client.api.pull(repo, tag=tag, stream=True, decode=True)):
                if "error" in event:
                    raise BoxError(cannot_pull(eng, f"{repo}:{tag}", event["error"]))
                layer = event.get("id")
                status = event.get("status", "")
                if not layer or layer == tag:
                    continue
                detail = event.get("progressDetail") or {}
                if not tasks:
                    ui.step(f"downloading the layers of {repo}:{tag}")
                if layer not in tasks:
                    tasks[layer] = progress.add_task(f"{layer} {status}", total=None)
                task = tasks[layer]
                if detail.get("total"):
                    progress.update(task, total=detail["total"], completed=detail.get("current", 0))
                progress.update(task, description=f"{layer} {status}")
                if status in ("Pull complete", "Already exists"):
                    t = progress.tasks[task]
                    progress.update(task, completed=t.total or 1, total=t.total or 1)
    except docker.errors.APIError as exc:
        raise BoxError(cannot_pull(eng, f"{repo}:{tag}", str(exc.explanation or exc))) from None
    image = eng.client.images.get(f"{repo}:{tag}")
    box_repo, box_tag = parse_repository_tag(eng.cfg.image)
    image.tag(box_repo, box_tag or "latest")
    ui.ok(f"pulled {repo}:{tag} ({image.short_id.split(':')[-1]}) and tagged it {eng.cfg.image}")


def cannot_pull(eng: Engine, reference: str, error: str) -> str:
    """The one line a failed pull ends with: the engine's word, then the other way to the image."""
    return (
        f"could not pull {reference} ({' '.join(error.split())}): "
        f"build the image from this checkout instead: `{eng.cfg.command('build')}`"
    )


def build(
    eng: Engine, base_image: Optional[str], ca_file: Optional[Path], no_cache: bool, refresh_apt: bool = False
) -> None:
    """Build the box image. What is not given is taken from the current image (its
    base, its extra CA certificates), so rebuilds keep their cache and their trust;
    `refresh_apt` (box update) rebuilds the Debian package layers with today's packages."""
    current = engine.image(eng, required=False)
    labels = (current.labels or {}) if current else {}
    base_image = base_image or labels.get(build_mod.BASE_LABEL) or names.DEFAULT_BASE_IMAGE
    if ca_file:
        certs = build_mod.read_ca_file(ca_file)
    else:
        files = volume.image_files(eng, current.id, CA_DIR) if current else {}
        certs = [files[n].decode() for n in sorted(files) if n.endswith(".crt")]
        if certs:
            ui.say(f"with the {len(certs)} extra CA certificate(s) the current image was built with")
    # A first build fetches today's packages too, and says so in its label.
    last_refresh = labels.get(build_mod.APT_LABEL, "")
    apt_refresh = build_mod.apt_refresh_stamp() if refresh_apt or not last_refresh else last_refresh
    ui.step(f"building {eng.cfg.image} from {names.REPO_ROOT} (base {base_image})")
    if refresh_apt and apt_refresh != last_refresh:
        ui.say("with the newest Debian trixie packages (the package layers are rebuilt)")
    elif refresh_apt:
        ui.say(f"Debian's packages were fetched today ({apt_refresh}) already: their layers stay")

    def on_line(line: str) -> None:
        if line.startswith("Step "):
            ui.say(line, style="bold")
        else:
            ui.dim("  " + line)

    try:
        image_id = build_mod.build_image(
            eng.client.api,
            tag=eng.cfg.image,
            base_image=base_image,
            ca_certs=certs,
            apt_refresh=apt_refresh,
            no_cache=no_cache,
            on_line=on_line,
        )
    except docker.errors.APIError as exc:
        raise BoxError(
            f"the image build failed: {exc.explanation or exc}: try `{eng.cfg.command('build')}` again"
        ) from None
    ui.ok(f"built {eng.cfg.image} ({image_id.split(':')[-1][:12]})")
