"""Real projects: a job's own commands (a TypeScript tool's and a React web app's npm ci, build
and test; a Foundry project's forge build and its suites) in the job's jail and without it."""

from __future__ import annotations

import shlex
import statistics

from bench.common import GOALS, Bench, cost_row, log, tail
from bench.report import Row
from imdbox.layout import JAIL
from tests.harness import boxes
from tests.harness import machine as test_machine


def commands(bench: Bench) -> None:
    """A job's own commands on real projects (tests/harness/projects.py), in a walled box on
    the bench's network: a TypeScript tool's and a React web app's (~215 packages) npm ci,
    build and test (their locks and the box's npm cache from the owner's install outside every
    job), and a Foundry project's forge
    build and its unit and invariant suites (the box's compiler, solc-js). A job's commands
    run in its one jail, which is made once, as an agent's run makes it: each batch is one
    shell, in a job's jail (`jail claude --program`) or not, that runs the commands twice;
    the batches alternate. The second pass is a command's cost in the jail; the first pass
    and the jail's start are what a job's first command pays."""
    from tests.harness import hands, projects
    from tests.harness.jobs import WORK_ROOT

    log("waiting for the machine lock (a test run may hold it), then installing")
    with (
        test_machine.held(),
        boxes.volume(bench.client, "bench-commands") as volume,
        hands.contract_box(bench.client, bench.image, volume, hands.install_solc, bench.args.network) as box,
    ):
        for node, files in (("ts", projects.TS_TOOL), ("app", projects.TS_APP)):
            projects.write(box, f"{WORK_ROOT}/bench/{node}", files)
            projects.owners_install(box, f"{WORK_ROOT}/bench/{node}")
        projects.write(box, f"{WORK_ROOT}/bench/sol", projects.FOUNDRY_PROJECT)
        for node, steps in (("ts", projects.TS_STEPS), ("app", projects.TS_STEPS), ("sol", projects.FORGE_STEPS)):
            _commands(bench, box, node, steps)


def _commands(bench: Bench, box, node: str, steps: tuple[str, ...]) -> None:
    from tests.harness import jobs

    # Each command's seconds, by pass, as "took <pass> <step> <µs>"; the jail's start as
    # "start <µs>" (from the launcher's call to the first line run in the jail).
    inner = (
        "echo start $(( ${EPOCHREALTIME/./} - $1 )); for p in 1 2; do "
        + " ".join(
            f's=$EPOCHREALTIME; {step} >/dev/null 2>&1 || exit 1; echo "took $p {k} $(( ${{EPOCHREALTIME/./}} - ${{s/./}} ))";'
            for k, step in enumerate(steps)
        )
        + " done"
    )
    shells = {
        True: f"{JAIL} claude --program /bin/bash -c {shlex.quote(inner)} bench ${{EPOCHREALTIME/./}}",
        False: f"/bin/bash -c {shlex.quote(inner)} bench ${{EPOCHREALTIME/./}}",
    }
    took: dict = {}
    starts: list[float] = []
    for i in range(bench.args.runs):
        for jailed in (True, False):
            log(f"{node}: {'jailed' if jailed else 'no jail'} {i + 1}/{bench.args.runs}")
            code, out = boxes.as_imd(box, f"cd {jobs.WORK_ROOT}/bench/{node} && {shells[jailed]}", timeout=300)
            if code != 0:
                raise RuntimeError(f"{node}'s commands did not run: {tail(out)}")
            for line in out.splitlines():
                if line.startswith("took "):
                    _, pass_, k, us = line.split()
                    took.setdefault((jailed, int(pass_), int(k)), []).append(int(us) / 1e6)
                elif line.startswith("start ") and jailed:
                    starts.append(int(line.split()[1]) / 1e6)
    bench.rows.append(Row(f"{node}: a job's jail, made (until its first command)", starts, note="its own network too"))
    for k, step in enumerate(steps):
        first = Row(f"{node}: `{step}`, a job's first, jailed", took[True, 1, k])
        plain_first = statistics.median(took[False, 1, k])
        ratio = statistics.median(first.samples) / plain_first
        first.note = f"no jail, a shell's first: {plain_first:.2f} s ({ratio:.2f}×)"
        jailed = Row(f"{node}: `{step}`, jailed", took[True, 2, k], note="in the jail its first run was made in")
        plain = Row(f"{node}: `{step}`, no jail", took[False, 2, k], note="the same shell's second run")
        cost = cost_row(f"{node}: `{step}`: the jail's cost (jailed / no jail)", jailed, plain, GOALS["commands"])
        bench.rows += [first, jailed, plain, cost]
