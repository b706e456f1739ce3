#!/usr/bin/env python3
"""IMD Box benchmark: measures, on the machine it runs on, what a user waits for.

    python3 bench/run.py                 # a Mac with Docker Desktop: the defaults
    python3 bench/run.py --quick         # no cold build, 3 runs each
    python3 bench/run.py --skip build,size,help,check,start,hands,v4hook,commands   # only the scripted job
    python3 bench/run.py --harness --base-image imd-box-base:trixie \\
        --ca-cert /etc/ssl/certs/ca-certificates.crt    # the project's CI machine

Prints a Markdown table: the image size (uncompressed, and layer by layer, largest
first), cold build (no cache) and warm no-change build, `box check`, `box start`
until the worker process runs, and `box --help`. Every timing is several runs:
median, min and max. A piece that cannot run here is a "skipped: <reason>" row.

It goes through the product's own code: builds with imdbox.build.build_image,
everything else with the `box` command itself (the ./box launcher). It never
touches the user's box: its image, container and volume are `imdbench-*` names
(through IMD_BOX_IMAGE / IMD_BOX_CONTAINER / IMD_BOX_VOLUME), removed at the end.

`box start` needs a worker installed in a volume: by default the bench installs
the test suite's fake worker (tests/fake_worker) into a fresh volume of its own;
--volume NAME uses a volume you prepared instead (it is left as it was found,
apart from what the worker writes).

The scripted job (tests/harness/jobs.py) installs the agent CLIs from npm into a volume
of its own, then times one job of six tool calls with the real Claude Code, through the
box's jail and without it, alternately in one walled box: the jail's cost beside its time.
The worker's own steps on a contract task (clone to bundle, forge build and test) are timed
the same way, through the box's hands (git and forge in the job's jail) and without them;
and on a real contract job, a Uniswap v4 hook with v4-core and its libraries vendored
(tests/harness/v4hook.py: v4-core and solc 0.8.26 from npm). A job's own commands on real
projects (tests/harness/projects.py: a TypeScript tool's and a React web app's npm ci, build
and test, the app some 215 packages; a Foundry project's forge build and its unit and invariant
suites) are timed in the job's jail and
without it, each command's first run beside the rest.

`box check` probes the internet and the walls. --harness runs the same check
(imdbox.check.runner.run_check, what `box check` calls) on the test suite's
internal networks, aimed only at the harness's own listeners: use it on machines
that must send nothing off the machine. Its box is on one of them, as `box` makes a
box on one network; the same check on all six, as the tests make it, is a row beside.

This file is the runner: the options, the scenarios in their order, the table. Each scenario
is a module of its own: bench/build.py (the builds, the image's size, `box --help`, `box start`),
bench/check.py (`box check`), bench/jobs.py (the scripted job, a job's jail with its own network,
the door), bench/hands.py (the worker's git and forge steps, and the v4 hook job),
bench/projects.py (a job's own commands), bench/broker.py (the login broker); bench/common.py
holds what they and the runner share (`Bench`, the state, among it) and bench/report.py the rows
and the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
# Run as a script, Python puts bench/ itself first on the path, where the scenarios' modules
# (build, check, jobs, ...) would stand for any top-level module of the same name: the
# project's root goes in its place, and the bench is the package `bench`.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench import broker, build, check, hands, jobs, projects  # noqa: E402
from bench.common import GOALS, Bench  # noqa: E402
from bench.report import Row, machine, table  # noqa: E402


# --------------------------------------------------------------------------- main
def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--runs", type=int, default=5, help="runs per timing (default 5; --help gets at least 5)")
    p.add_argument("--cold-runs", type=int, default=1, help="no-cache builds (default 1: each takes minutes)")
    p.add_argument("--quick", action="store_true", help="no cold build and 3 runs per timing")
    p.add_argument(
        "--base-image",
        default=os.environ.get("IMD_BOX_BENCH_BASE", "debian:trixie-slim"),
        help="the base image to build on (env IMD_BOX_BENCH_BASE; default debian:trixie-slim)",
    )
    p.add_argument(
        "--ca-cert",
        default=os.environ.get("IMD_BOX_BENCH_CA") or None,
        help="extra CA certificates for the build, as `box build --ca-cert` (env IMD_BOX_BENCH_CA)",
    )
    p.add_argument(
        "--image",
        help="measure this existing image instead of building (no build rows; never removed)",
    )
    p.add_argument("--keep-image", action="store_true", help="keep the bench's image at the end")
    p.add_argument("--volume", help="a volume with the worker installed, for `box start` (default: the fake worker)")
    p.add_argument(
        "--network",
        default=os.environ.get("IMD_BOX_NETWORK", "bridge"),
        help="the network the box runs on, as IMD_BOX_NETWORK (default bridge)",
    )
    p.add_argument("--harness", action="store_true", help="run the check on the test suite's internal networks")
    p.add_argument("--check-url", help="`box check --url`")
    p.add_argument("--check-targets", help="`box check --targets FILE`")
    p.add_argument(
        "--skip",
        default="",
        help="comma list of: build, size, help, check, start, job, hands, v4hook, commands, broker",
    )
    p.add_argument("--layers", type=int, default=12, help="layers listed (default 12)")
    p.add_argument("--json", dest="json_out", help="also write the results to this JSON file")
    args = p.parse_args(argv)
    if args.quick:
        args.cold_runs = 0
        args.runs = min(args.runs, 3)
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    try:
        bench = Bench(args)
    except Exception as exc:
        print(f"bench: the Docker engine is not reachable: {exc}", file=sys.stderr)
        return 2
    when = dt.datetime.now().astimezone()
    host = machine(bench.client)
    have_image = False
    try:
        if args.image:
            have_image = build.use_existing_image(bench)
            if not have_image:
                bench.rows.append(Row("image", skipped=f"--image {args.image} is not on this machine"))
        elif "build" in args.skip:
            bench.rows.append(Row("cold build (no cache)", skipped="--skip build"))
            bench.rows.append(Row("warm build (no change)", skipped="--skip build", goal=GOALS["warm"]))
            have_image = build.use_existing_image(bench)
        else:
            have_image = build.builds(bench)
        if "size" not in args.skip and have_image:
            build.size(bench)
        if "help" not in args.skip:
            build.help(bench)
        for name, fn, row_name, goal in (
            ("check", check.check, "`box check` (all walls)", GOALS["check"]),
            ("start", build.start, "`box start` → worker process running", GOALS["start"]),
            ("job", jobs.job, "scripted job, jailed (6 tool calls)", GOALS["job"]),
            ("hands", hands.hands, "worker's git and forge steps, jailed", None),
            ("v4hook", hands.v4hook, "worker's steps on a v4 hook job, jailed", None),
            ("commands", projects.commands, "a job's own commands, jailed", None),
            ("broker", broker.broker, "a request through the login broker", None),
        ):
            if name in args.skip:
                bench.rows.append(Row(row_name, skipped=f"--skip {name}", goal=goal))
            elif not have_image:
                bench.rows.append(Row(row_name, skipped="no box image (the build did not run)", goal=goal))
            else:
                try:
                    fn(bench)
                except Exception as exc:  # one piece failing must not lose the others' numbers
                    bench.rows.append(Row(row_name, skipped=f"{type(exc).__name__}: {str(exc)[:200]}", goal=goal))
    finally:
        bench.cleanup()

    runs = f"{args.runs} runs per timing, {args.cold_runs} cold build(s)"
    print(f"IMD Box benchmark — {when:%Y-%m-%d %H:%M %Z}")
    print(f"Machine: {host}")
    print(f"Runs: {runs}; commit {bench.build.git_revision()[:12]}")
    print()
    headers = ["what", "runs", "median", "min – max", "goal", "met", "notes"]
    print(table(headers, [r.cells() for r in bench.rows]))
    if bench.layers:
        print()
        print("Layers, largest first:")
        print()
        print(table(["size", "share", "step"], bench.layers))
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {"when": when.isoformat(), "machine": host, "runs": runs, "rows": [r.as_json() for r in bench.rows]},
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
