"""`box check` through the command line, on one of the harness's --internal networks.

IMD_BOX_NETWORK/IMAGE/VOLUME put the check box on `imdt-internet` with the test
image and a test volume; --targets aims every network probe at the harness's own
listeners, --url at its "internet" listener.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid

import pytest

from tests.harness.boxes import remove_volume, until_gone
from tests.harness.cli import cli_env, run_box
from tests.harness.topology import MAC_ON_INTERNET, check_targets

pytestmark = pytest.mark.usefixtures("box_image")

# The harness's own listeners (tests/harness/topology.py), as --targets takes them.
TARGETS = dataclasses.asdict(check_targets())


def test_box_check_cli_json_and_svg(docker_client, box_image, topology, tmp_path):
    volume = f"imdt-clihome-{uuid.uuid4().hex[:8]}"
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps(TARGETS))
    svg = tmp_path / "check.svg"
    env = cli_env(
        IMD_BOX_IMAGE=box_image,
        IMD_BOX_NETWORK="imdt-internet",
        IMD_BOX_VOLUME=volume,
        IMD_BOX_CONTAINER=f"imdt-clibox-{uuid.uuid4().hex[:8]}",
    )
    args = ["check", "--json", "--svg", str(svg), "--url", "http://198.51.100.10/", "--targets", str(targets)]
    started = time.monotonic()
    try:
        out = run_box(*args, env=env, timeout=120)
        elapsed = time.monotonic() - started
        # The check box ended with its report, and the engine removed it: nothing of the run is
        # left behind but the volume.
        leftovers = until_gone(docker_client, volume=volume)
    finally:
        remove_volume(docker_client, volume)
    rows = json.loads(out.stdout)
    bad = [r for r in rows if not r["ok"]]
    assert out.returncode == (1 if bad else 0)
    assert len(rows) == 25 and set(rows[0]) == {"wall", "ok", "proved", "detail", "ms"}
    assert all(isinstance(r["ms"], int) for r in rows), rows  # where its time went, line by line
    assert bad == [], json.dumps(bad, indent=1) + out.stderr
    by_wall = {r["wall"].split(":")[0]: r["detail"] for r in rows}
    assert "GET http://198.51.100.10/ -> 200" in by_wall["the internet"]
    assert "imdt-listener-internet -> 198.51.100.10" in by_wall["DNS"]
    assert "gateway 198.51.100.1:80 EHOSTUNREACH" in by_wall["the Mac"]
    # Docker Desktop's name for the Mac, as this network's resolver answers it: refused too.
    assert f"host.docker.internal {MAC_ON_INTERNET}:80 EHOSTUNREACH" in by_wall["the Mac"]
    assert svg.read_text().startswith("<svg")
    assert elapsed < 30
    assert leftovers == []
