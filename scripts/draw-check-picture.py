#!/usr/bin/env python3
"""Draws docs/check.svg, the picture of `box check` on a healthy box that docs/walls.md shows.

    python3 scripts/draw-check-picture.py            # docs/check.svg
    python3 scripts/draw-check-picture.py OUT.svg

It runs the whole check (every line, the browser's too) as the tests run it: on the tests'
image (tests/harness/image.py: IMD_BOX_TEST_IMAGE, built from this checkout), in the tests'
world (tests/harness/topology.py: internal networks and listeners, so nothing leaves this
machine), on a fresh volume, under the machine's test lock (it waits while a test run holds
it). A check with a FAIL line is no picture of a healthy box: it says which and draws nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import docker  # noqa: E402

from imdbox.check.report import Report, as_svg  # noqa: E402
from imdbox.check.runner import run_check  # noqa: E402
from tests.harness import boxes, machine, topology  # noqa: E402
from tests.harness.image import build_test_image  # noqa: E402


def healthy_check(client: docker.DockerClient) -> Report:
    log = Path(tempfile.mkdtemp(prefix="imdt-build-")) / "build.log"
    image = build_test_image(client, log)
    with machine.held():
        world = topology.build(client, image)
        try:
            with boxes.volume(client, "checkhome") as volume:
                return run_check(
                    boxes.engine_of(client, image=image, volume=volume),
                    networks=world.network_names,
                    extra_hosts=world.extra_hosts,
                    internet_url=world.url("internet"),
                    targets=topology.check_targets(),
                    name_prefix="imdt-check-",
                )
        finally:
            topology.teardown(client, world)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?", type=Path, default=ROOT / "docs" / "check.svg", help="default: docs/check.svg")
    out = p.parse_args(argv).out
    report = healthy_check(docker.from_env(timeout=300))
    if report.failed():
        print(f"draw-check-picture: line(s) {', '.join(report.failed())} FAIL; {out} left as it was", file=sys.stderr)
        return 1
    out.write_text(as_svg(report))
    print(f"draw-check-picture: wrote {out} ({report.seconds:.1f} s check)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
