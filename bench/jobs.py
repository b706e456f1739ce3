"""The jail and the door: one scripted job through the box's jail and without it, a job's jail
with its own network (an empty run), and a job's start through the door and before it."""

from __future__ import annotations

import time

from bench.common import GOALS, Bench, added_row, cost_row, log, tail, timed_runs
from bench.report import Row
from imdbox.layout import JAIL
from tests.harness import machine as test_machine


def job(bench: Bench) -> None:
    """One scripted job (tests/harness/jobs.py: the real Claude Code, the scripted model),
    run as the worker runs it through the box's jail and without it, alternately, in one
    walled box on the bench's network: the jail's cost beside its own time."""
    from tests.harness import agents, boxes, jobs

    steps = [
        [jobs.tool("Write", file_path="index.html", content="<h1>bench</h1>")],
        [jobs.bash("ls -la && cat index.html")],
        [jobs.tool("Read", file_path="index.html")],
        [jobs.tool("Grep", pattern="bench", path=".")],
        [jobs.tool("Edit", file_path="index.html", old_string="bench", new_string="benched")],
        [jobs.bash('node -e \'console.log(require("fs").readFileSync("index.html", "utf8"))\'')],
    ]
    jailed = Row("scripted job, jailed (6 tool calls)", goal=GOALS["job"], note="the real Claude Code, scripted model")
    plain = Row("scripted job, no jail", note="the same script, the same box, IDENTITYMD_CLAUDE_BIN unset")
    jailed.note += "; from the worker's view, through the door"
    log("waiting for the machine lock (a test run may hold it), then installing the agent CLIs")
    with test_machine.held(), agents.installed(bench.client, bench.image) as volume:
        box = boxes.start_walled(bench.client, bench.image, None, volume=volume, alone_on=bench.args.network)
        try:
            for i in range(bench.args.runs):
                for row, jail in ((jailed, True), (plain, False)):
                    log(f"job {i + 1}/{bench.args.runs} ({'jailed' if jail else 'no jail'})")
                    t0 = time.perf_counter()
                    run = jobs.play(bench.client, bench.image, box, steps, jailed=jail, view=jail)
                    elapsed = time.perf_counter() - t0
                    if run.code != 0 or len(run.results) != len(steps):
                        raise RuntimeError(f"the scripted job failed: {tail(str(run))}")
                    row.samples.append(elapsed)
            net = Row(
                "a job's jail with its own network (empty run)",
                goal=GOALS["net"],
                note="`jail claude --program /bin/true` in a job's workspace: the network made and gone",
            )
            net.samples += timed_runs(box, f"{JAIL} claude --program /bin/true", max(bench.args.runs, 20))
            door, before = _door(bench, box)
        finally:
            box.remove(force=True)
    bench.rows += [jailed, plain, cost_row("the jail's cost (jailed / no jail)", jailed, plain, GOALS["jail"]), net]
    bench.rows += [door, before, added_row("the door's cost (through it − before it)", door, before, GOALS["door"])]


def _door(bench: Bench, box) -> tuple[Row, Row]:
    """A job's start through the door (the worker's git in its view: the stand-in, the door,
    the launcher, the job's jail) against the same start as the worker made it before the
    door (worker/hands/git, the launcher itself): `git --version` in a job's node, each
    alternating batch in one shell."""
    door = Row("a job's start through the door", note="`git --version` in a job's node, from the worker's view")
    before = Row("a job's start before the door", note="the same, the launcher run by the worker itself")
    for i in range(max(bench.args.runs, 3)):
        for row, view in ((door, True), (before, False)):
            log(f"{row.metric} {i + 1}")
            row.samples += timed_runs(box, "git --version >/dev/null", 10, view=view)
    return door, before
