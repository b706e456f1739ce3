"""The worker's hands: its git and forge steps on a contract task, and on a Uniswap v4 hook job,
through the box's hands (git and forge in the job's jail) and without them."""

from __future__ import annotations

from bench.common import GOALS, Bench, cost_row, log, tail
from bench.report import Row
from tests.harness import boxes
from tests.harness import machine as test_machine


def _worker_steps(bench: Bench, jailed: Row, plain: Row, install, task, change) -> None:
    """The worker's own steps on a task (tests/harness/worker_steps.mjs: clone, checkout and
    reads before the agent; findings, forge config/fmt/build/test, the git package and bundle
    after it), through the box's hands (git and forge in the job's jail) and without them,
    alternately, in one walled box on the bench's network. `install(box)` readies the box,
    `task(box)` makes a task's origin (its workspace and spec), `change(box, space)` is the
    agent's change."""
    from tests.harness import hands

    log("waiting for the machine lock (a test run may hold it), then installing")
    with (
        test_machine.held(),
        boxes.volume(bench.client, "bench-hands") as volume,
        hands.contract_box(bench.client, bench.image, volume, install, bench.args.network) as box,
    ):
        for i in range(bench.args.runs):
            for row, defended in ((jailed, True), (plain, False)):
                log(f"{row.metric} {i + 1}/{bench.args.runs}")
                space, spec = task(box)
                before = hands.worker_steps(box, "before", space, spec, defended=defended)
                change(box, space)
                sent = hands.worker_steps(box, "after", space, spec, defended=defended)
                # The steps' own time, as the stand-in worker took it in the box.
                row.samples.append((before["ms"] + sent["ms"]) / 1000)
                if [c["passed"] for c in sent["localChecks"]] != [True, True]:
                    checks = [(c["name"], c["passed"], c["output"][-300:]) for c in sent["localChecks"]]
                    raise RuntimeError(f"the worker's forge build or test failed: {tail(str(checks))}")


def hands(bench: Bench) -> None:
    """The worker's steps on a contract and its test."""
    from tests.harness import hands

    jailed = Row(
        "worker's git and forge steps, jailed",
        note="a contract and its test: clone to bundle, forge build and test",
    )
    plain = Row("worker's git and forge steps, no jail", note="the same steps, the image's git and forge")
    _worker_steps(
        bench,
        jailed,
        plain,
        hands.install_solc,
        lambda box: hands.code_task(box, committed_link=False),
        # What the agent would have done: a change to the contract.
        lambda box, space: boxes.as_imd(box, f"cd {space} && echo '// changed' >> src/Counter.sol"),
    )
    cost = cost_row("the hands' jail cost (jailed / no jail)", jailed, plain, GOALS["hands"])
    bench.rows += [jailed, plain, cost]


def v4hook(bench: Bench) -> None:
    """The worker's steps on a v4 hook job: v4-core vendored, solc 0.8.26, v4-core's Deployers."""
    from tests.harness import v4hook

    jailed = Row(
        "worker's steps on a v4 hook job, jailed",
        note="a hook and its test on v4-core's Deployers: clone to bundle, forge build and test",
    )
    plain = Row("worker's steps on a v4 hook job, no jail", note="the same steps, the image's git and forge")
    _worker_steps(bench, jailed, plain, v4hook.install, v4hook.hook_task, v4hook.agent_change)
    cost = cost_row("the hands' jail cost on it (jailed / no jail)", jailed, plain, GOALS["v4hook"])
    bench.rows += [jailed, plain, cost]
