"""A real contract job: a Uniswap v4 hook and its forge test against v4-core, vendored with its
own libraries, solc pinned (tests/harness/v4hook.py). The released worker's steps on it
(tests/harness/worker_steps.mjs), through the box's hands, build it and pass its tests, and the
bundle carries the agent's change; the control is the same steps with the image's git and forge.
"""

from __future__ import annotations

import pytest

from tests.harness import boxes, hands, v4hook

# In a parallel run (-n) one worker runs this module's tests: its installs and box are module fixtures.
pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group("v4_hook_job")]


@pytest.fixture(scope="module")
def box(docker_client, box_image):
    """A walled box on Docker's bridge (npm in reach for solc-js and v4-core), both installed."""
    with (
        boxes.volume(docker_client, "v4hook-home") as home,
        hands.contract_box(docker_client, box_image, home, v4hook.install) as container,
    ):
        yield container


def brief(sent: dict) -> dict:
    """What the worker would send, but for the bundle's every file (v4-core's included)."""
    return {k: v for k, v in sent.items() if k != "bundled"}


@pytest.mark.parametrize("defended", [True, False], ids=["hands", "no-hands"])
def test_the_workers_steps_build_and_test_a_v4_hook(box, defended):
    space, spec = v4hook.hook_task(box)
    before = hands.worker_steps(box, "before", space, spec, defended=defended)
    assert "readsFailed" not in before, before
    v4hook.agent_change(box, space)
    after = hands.worker_steps(box, "after", space, spec, defended=defended)
    assert [(c["name"], c["passed"]) for c in after["localChecks"]] == [("build", True), ("test", True)], brief(after)
    test_out = after["localChecks"][1]["output"]
    for name in ("test_swaps_are_counted()", "test_only_the_pool_manager_calls_it()"):
        assert f"[PASS] {name}" in test_out, test_out
    assert after["changed"] == [v4hook.HOOK] and "imdt-changed" in after["bundled"], brief(after)
    assert after["bundleBytes"] > 0, brief(after)
