"""`box check`: the command itself, or with --harness its check (imdbox.check.runner.run_check) on
the test suite's internal networks."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from bench.common import GOALS, PREFIX, log, tail
from bench.report import Row
from tests.harness import boxes
from tests.harness import machine as test_machine  # the test topology: one per machine, under the tests' lock

if TYPE_CHECKING:
    from bench.run import Bench


def check(bench: Bench) -> None:
    label = "`box check` (all walls)"
    if bench.args.harness:
        _check_harness(bench, label)
        return
    extra = []
    if bench.args.check_url:
        extra += ["--url", bench.args.check_url]
    if bench.args.check_targets:
        extra += ["--targets", bench.args.check_targets]
    row = Row(label, goal=GOALS["check"], note="`box check --json`, wall time")
    fails: set[str] = set()
    for i in range(bench.args.runs):
        log(f"box check {i + 1}/{bench.args.runs}")
        t0 = time.perf_counter()
        res = bench.box.run("check", "--json", *extra, timeout=300)
        elapsed = time.perf_counter() - t0
        try:
            report = json.loads(res.stdout)
        except json.JSONDecodeError:
            row.skipped = f"`box check` gave no report (exit {res.returncode}): {tail(res.stdout + res.stderr)}"
            break
        fails |= (
            {r.get("wall") or r.get("id") for r in report if not r.get("ok")} if isinstance(report, list) else set()
        )
        row.samples.append(elapsed)
    if fails and not row.skipped:
        row.note += f"; FAIL lines: {', '.join(sorted(map(str, fails)))}"
    bench.rows.append(row)


def _check_harness(bench: Bench, label: str) -> None:
    from imdbox.check.runner import run_check
    from tests.harness import topology as topo_mod

    row = Row(label, goal=GOALS["check"], note="run_check (what `box check` runs) on the test networks")
    volume = f"{PREFIX}checkhome-{bench.run_id}"
    bench.client.volumes.create(volume, labels={"imd-bench": "1"})
    targets = topo_mod.check_targets()
    try:
        log("waiting for the test topology lock (a test run may hold it)")
        with test_machine.held():
            topo = topo_mod.build(bench.client, bench.image)
            try:
                fails: set[str] = set()
                for i in range(bench.args.runs):
                    log(f"check {i + 1}/{bench.args.runs}")
                    t0 = time.perf_counter()
                    report = run_check(
                        boxes.engine_of(bench.client, image=bench.image, volume=volume),
                        image=bench.image,
                        volume=volume,
                        networks=topo.network_names,
                        extra_hosts=topo.extra_hosts,
                        internet_url=topo.url("internet"),
                        targets=targets,
                        name_prefix=f"{PREFIX}check-",
                    )
                    row.samples.append(time.perf_counter() - t0)
                    fails |= set(report.failed())
                if fails:
                    row.note += f"; FAIL lines: {', '.join(sorted(fails))}"
            finally:
                topo_mod.teardown(bench.client, topo)
    except Exception as exc:  # the bench reports, it does not crash
        row.skipped = f"the test topology or the check failed: {str(exc)[:200]}"
    finally:
        bench.remove_volume(volume)
    bench.rows.append(row)
