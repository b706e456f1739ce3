"""`box check`: the command itself, or with --harness its check (imdbox.check.runner.run_check) on
the test suite's internal networks."""

from __future__ import annotations

import json
import statistics
import time

from bench.common import GOALS, PREFIX, Bench, added_row, cost_row, log, tail
from bench.report import Row
from imdbox import engine
from imdbox.check.runner import BOX_PREFIX
from imdbox.throwaway import LEAVING_S, throwaway
from tests.harness import boxes
from tests.harness import machine as test_machine  # the test topology: one per machine, under the tests' lock


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
    slowest: dict[str, list[int]] = {}
    for i in range(bench.args.runs):
        log(f"box check {i + 1}/{bench.args.runs}")
        t0 = time.perf_counter()
        res = bench.box.run("check", "--json", *extra, timeout=300)
        elapsed = time.perf_counter() - t0
        gone(bench, BOX_PREFIX)  # the engine removes the check's box after the report
        try:
            report = json.loads(res.stdout)
        except json.JSONDecodeError:
            row.skipped = f"`box check` gave no report (exit {res.returncode}): {tail(res.stdout + res.stderr)}"
            break
        lines = report if isinstance(report, list) else []
        fails |= {r.get("wall") or r.get("id") for r in lines if not r.get("ok")}
        # Each line's time, as `box check --json` gives it beside the line.
        for r in lines:
            if isinstance(r.get("ms"), int):
                slowest.setdefault(str(r.get("wall")), []).append(r["ms"])
        row.samples.append(elapsed)
    if slowest:
        row.note += slowest_lines(slowest)
        row.parts_ms = slowest  # every line's ms, run by run, in the bench's --json
    if fails and not row.skipped:
        row.note += f"; FAIL lines: {', '.join(sorted(map(str, fails)))}"
    bench.rows.append(row)


def slowest_lines(ms: dict[str, list[int]], n: int = 4) -> str:
    """The row's note on where the check's time goes: its `n` slowest lines, each its median."""
    lines = sorted(ms.items(), key=lambda kv: -statistics.median(kv[1]))[:n]
    return "; slowest lines: " + ", ".join(f"{w} {statistics.median(t):.0f} ms" for w, t in lines)


def _check_harness(bench: Bench, label: str) -> None:
    """The check as `box check` makes its box, on one network (the engine's: here the test world's
    internet network, whose gateway is this machine), beside the same check on all six of the test
    world's networks, which the tests use so that a control without the walls reaches a listener
    at each target: a box the product never makes. Each alternates with bare starts."""
    from imdbox.check.runner import run_check
    from tests.harness import topology as topo_mod

    row = Row(
        label, goal=GOALS["check"], note="run_check (what `box check` runs) on one test network, as `box` makes a box"
    )
    six = Row(
        "`box check` on the test world's six networks",
        note="the same, its box on every network of the test world, attached one by one, with its hosts",
    )
    bare = Row(
        "a bare walled start",
        note="`box start`'s flags (engine.flags) on the default network: the entrypoint, the walls set and verified, `true`",
    )
    on_test_networks = Row(
        "a bare walled start on the test networks",
        note="the same, made as the six-network check makes its box: its networks attached one by one, its hosts",
    )
    volume = f"{PREFIX}checkhome-{bench.run_id}"
    bench.client.volumes.create(volume, labels={"imd-bench": "1"})
    targets = topo_mod.check_targets()
    try:
        log("waiting for the test topology lock (a test run may hold it)")
        with test_machine.held():
            topo = topo_mod.build(bench.client, bench.image)
            try:
                eng = boxes.engine_of(bench.client, image=bench.image, volume=volume)
                one_network = [topo.targets["internet"].network]
                failed: dict[str, set[str]] = {row.metric: set(), six.metric: set()}
                for i in range(bench.args.runs):
                    for this, networks, hosts in (
                        (row, one_network, None),
                        (six, topo.network_names, topo.extra_hosts),
                    ):
                        log(f"check {i + 1}/{bench.args.runs} ({len(networks)} network(s))")
                        t0 = time.perf_counter()
                        report = run_check(
                            eng,
                            networks=networks,
                            extra_hosts=hosts,
                            internet_url=topo.url("internet"),
                            targets=targets,
                            name_prefix=f"{PREFIX}check-",
                        )
                        this.samples.append(time.perf_counter() - t0)
                        # The engine removes the check's box after the report (auto_remove): not
                        # timed, and not left to slow what comes next.
                        gone(bench, f"{PREFIX}check-")
                        failed[this.metric] |= set(report.failed())
                        for wall, ms in report.probe_ms.items():
                            this.parts_ms.setdefault(wall, []).append(ms)
                    # Side by side with the check, a box started bare as `box start` makes the
                    # user's: what a start costs.
                    log(f"bare start {i + 1}/{bench.args.runs}")
                    bare.samples.append(bare_start(bench, eng))
                    on_test_networks.samples.append(bare_start(bench, eng, topo))
                for this in (row, six):
                    this.note += slowest_lines(this.parts_ms)  # every line's ms, run by run, in --json
                    if failed[this.metric]:
                        this.note += f"; FAIL lines: {', '.join(sorted(failed[this.metric]))}"
            finally:
                topo_mod.teardown(bench.client, topo)
    except Exception as exc:  # the bench reports, it does not crash
        row.skipped = f"the test topology or the check failed: {str(exc)[:200]}"
    finally:
        bench.remove_volume(volume)
    bench.rows.append(row)
    if bare.samples and row.samples:
        bench.rows += [bare, cost_row("`box check` / a bare walled start", row, bare, GOALS["check_starts"])]
        # What the test world adds to a box, which a user's never has.
        bench.rows += [six, on_test_networks, added_row("the test networks' share of a start", on_test_networks, bare)]


def gone(bench: Bench, prefix: str) -> None:
    """Once the engine has removed the check's box (boxes.until_gone), whose name starts with `prefix`."""
    if boxes.until_gone(bench.client, name=prefix):
        raise RuntimeError(f"the engine left a box of {prefix}* for more than {LEAVING_S} s")


def bare_start(bench: Bench, eng, topo=None) -> float:
    """The seconds of a walled box made as `box start` makes the user's (engine.flags: the
    product's flags, on the engine's network, the default bridge; no test network, no extra
    host), whose command is `true`: its entrypoint sets and verifies the walls, and it ends.
    The check's own box runs on the test networks (--harness: nothing leaves the machine); a
    user's box never has those, so they are no part of what a start costs. With `topo`, the
    same box made as run_check makes the check's on them: what the harness adds to a start."""
    networks = topo.network_names if topo else [None]  # None: the engine's own, as box start's
    flags = engine.flags(eng, "check", ["/bin/true"], name=f"{PREFIX}bare-{bench.run_id}", network_name=networks[0])
    kwargs = flags.sdk_kwargs()
    if topo:
        kwargs["extra_hosts"] = dict(topo.extra_hosts)
    t0 = time.perf_counter()
    with throwaway(bench.client, kwargs, kwargs["name"]) as box:
        for extra in networks[1:]:
            bench.client.networks.get(extra).connect(box)
        box.start()
        code = box.wait(timeout=120)["StatusCode"]
        if code != 0:
            raise RuntimeError(f"a bare walled start failed: {tail(box.logs().decode(errors='replace'))}")
    return time.perf_counter() - t0
