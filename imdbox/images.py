"""`box pull` and `box build`: the box image, with live progress."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import docker.errors
from docker.utils import parse_repository_tag

from . import build as build_mod
from . import names, ui
from .engine import BoxError


def pull(client, reference: str) -> None:
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
            for event in client.api.pull(repo, tag=tag, stream=True, decode=True):
                if "error" in event:
                    raise BoxError(f"could not pull {repo}:{tag}: {event['error'].strip()}")
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
        raise BoxError(f"could not pull {repo}:{tag}: {exc.explanation or exc}") from None
    image = client.images.get(f"{repo}:{tag}")
    box_repo, box_tag = parse_repository_tag(names.IMAGE)
    image.tag(box_repo, box_tag or "latest")
    ui.ok(f"pulled {repo}:{tag} ({image.short_id.split(':')[-1]}) and tagged it {names.IMAGE}")


def build(client, base_image: str, ca_file: Optional[Path], no_cache: bool) -> None:
    ui.step(f"building {names.IMAGE} from {names.REPO_ROOT} (base {base_image})")

    def on_line(line: str) -> None:
        if line.startswith("Step "):
            ui.say(line, style="bold")
        else:
            ui.dim("  " + line)

    try:
        image_id = build_mod.build_image(
            client.api,
            tag=names.IMAGE,
            base_image=base_image,
            ca_file=ca_file,
            no_cache=no_cache,
            on_line=on_line,
        )
    except build_mod.BuildError as exc:
        raise BoxError(str(exc)) from None
    except docker.errors.APIError as exc:
        raise BoxError(f"the image build failed: {exc.explanation or exc}") from None
    ui.ok(f"built {names.IMAGE} ({image_id.split(':')[-1][:12]})")
