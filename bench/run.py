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
projects (tests/harness/projects.py: a TypeScript tool's npm ci, build and test; a Foundry
project's forge build and its unit and invariant suites) are timed in the job's jail and
without it, each command's first run beside the rest.

`box check` probes the internet and the walls. --harness runs the same check
(imdbox.check.runner.run_check, what `box check` calls) on the test suite's
internal networks, aimed only at the harness's own listeners: use it on machines
that must send nothing off the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report import GB, MB, Row, layer_step, machine, table  # noqa: E402
from imdbox.layout import JAIL  # noqa: E402
from tests.harness import boxes  # noqa: E402
from tests.harness import machine as test_machine  # noqa: E402  (the test topology: one per machine, under the tests' lock)
from tests.harness.cli import cli_env, run_box, start_box  # noqa: E402

PREFIX = "imdbench-"

# The goals docs/performance.md states (seconds, or bytes for the image).
GOALS = {
    "image": 1.5 * GB,
    "warm": 15.0,
    "check": 10.0,
    "start": 5.0,
    "help": 0.3,
    "job": 20.0,
    "jail": 1.2,  # the jailed job's median over the unjailed one's
    "hands": 1.2,  # the worker's jailed git and forge steps over the plain ones
    "v4hook": 1.1,  # the same on a v4 hook job, whose compile outweighs the calls' own cost
    "commands": 1.1,  # a job's own npm and forge command in its jail over the same without it
    "net": 0.1,  # a job's jail with its own network, an empty run start to end
    "door": 0.010,  # a call through the door over the same call as the worker made it before the door
    "broker": 0.005,  # a request through the login broker over the same request straight to Anthropic
}


def log(msg: str) -> None:
    sys.stderr.write(f"bench: {msg}\n")
    sys.stderr.flush()


# --------------------------------------------------------------------------- the box command
class Box:
    """The `box` command as a user runs it (tests/harness/cli.py), pointed at the bench's own names."""

    def __init__(self, image: str, container: str, volume: str, network: str):
        launcher = ROOT / "box"
        self.has_launcher = launcher.is_file() and os.access(launcher, os.X_OK)
        self.env = cli_env(
            IMD_BOX_IMAGE=image, IMD_BOX_CONTAINER=container, IMD_BOX_VOLUME=volume, IMD_BOX_NETWORK=network
        )

    def run(self, *args: str, launcher: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        # fresh: the bench times what a user waits for, interpreter start included.
        return run_box(*args, env=self.env, timeout=timeout, launcher=launcher and self.has_launcher, fresh=True)

    def popen(self, *args: str, launcher: bool = True) -> subprocess.Popen:
        return start_box(*args, env=self.env, launcher=launcher and self.has_launcher, stderr=subprocess.STDOUT)


def tail(text: str, n: int = 3) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return " / ".join(lines[-n:])[:300] or "(no output)"


def cost_row(label: str, jailed: Row, plain: Row, goal: float) -> Row:
    """The jailed median over the plain one, against its goal."""
    ratio = statistics.median(jailed.samples) / statistics.median(plain.samples)
    cost = Row(label, goal=None, value_text=f"{ratio:.2f}×")
    cost.met, cost.note = ratio <= goal, f"goal ≤ {goal}×, medians of alternating runs"
    return cost


def added_row(label: str, through: Row, without: Row, goal: float) -> Row:
    """What `through` adds to `without` (their medians), against its goal in seconds."""
    added = statistics.median(through.samples) - statistics.median(without.samples)
    row = Row(label, value_text=f"{added * 1000:+.1f} ms")
    row.met, row.note = added <= goal, f"goal ≤ +{goal * 1000:.0f} ms, medians of alternating runs"
    return row


def timed_runs(box, command: str, runs: int, *, view: bool = False) -> list[float]:
    """`command` run `runs` times in one shell as imd, in a job's node of the bench's (in the
    worker's view, `view`): each run's seconds. The first run that fails ends it, said."""
    from tests.harness import jobs

    node = f"{jobs.WORK_ROOT}/bench/node"
    script = (
        f"mkdir -p {node} && cd {node} && for i in $(seq {runs}); do s=$EPOCHREALTIME; {command} || exit 1; "
        'echo "took $(( ${EPOCHREALTIME/./} - ${s/./} ))"; done'
    )
    code, out = boxes.as_imd(box, boxes.in_view(script) if view else script, timeout=120)
    if code != 0:
        raise RuntimeError(f"`{command}` did not run: {tail(out)}")
    return [int(line.split()[1]) / 1e6 for line in out.splitlines() if line.startswith("took ")]


def requests_timed(box, count: int, brokered: bool) -> list[float]:
    """`count` requests for the account's profile on one connection (curl's own timing of each):
    through the login broker with a sentinel minted for this shell, as a Claude job reaches it
    (Anthropic's name at the broker's TLS port, which its network has as 443), or straight to
    Anthropic with the owner's token."""
    from imdbox import layout
    from tests.harness import login

    url = "https://api.anthropic.com/api/oauth/profile"
    each = " ".join(f"-o /dev/null {url}" for _ in range(count))
    if brokered:
        ask = (
            f"r=$({layout.BROKER_ASK} runs --data pid=$$) && "
            f'a=$(sed -E \'s/.*"accessToken":"([^"]*)".*/\\1/\' {layout.BROKER_DIR}/runs/${{r#run }}.json) && '
            f"curl -sS --fail --connect-to api.anthropic.com:443:127.0.0.1:{layout.BROKER_TLS_PORT} "
            f"--cacert {layout.BROKER_DIR}/trust.pem"
        )
    else:
        ask = f"a={login.ACCESS} && curl -sS --fail"
    script = f"{ask} -H \"Authorization: Bearer $a\" -w '%{{time_total}}\\n' {each}"
    code, out = boxes.as_imd(box, script, timeout=120)
    times = [float(line) for line in out.split() if line.replace(".", "", 1).isdigit()]
    if code != 0 or len(times) != count:
        raise RuntimeError(f"the requests failed: {tail(out)}")
    return times


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# --------------------------------------------------------------------------- measurements
class Bench:
    def __init__(self, args: argparse.Namespace):
        import docker

        from imdbox import build, names

        self.args = args
        self.build = build
        self.names = names
        self.client = docker.from_env(timeout=900)
        self.client.ping()
        self.run_id = uuid.uuid4().hex[:8]
        self.image = args.image or f"{PREFIX}box:{self.run_id}"
        self.container = f"{PREFIX}box-{self.run_id}"
        self.own_volume: Optional[str] = None
        self.volume = args.volume or f"{PREFIX}home-{self.run_id}"
        self.made_images: set[str] = set()
        self.rows: list[Row] = []
        self.layers: list[list[str]] = []
        self.box = Box(self.image, self.container, self.volume, args.network)

    # ---------------------------------------------------------------- builds
    def _build(self, no_cache: bool) -> str:
        lines: list[str] = []
        image_id = self.build.build_image(
            self.client.api,
            tag=self.image,
            base_image=self.args.base_image,
            ca_certs=self.build.read_ca_file(Path(self.args.ca_cert)) if self.args.ca_cert else None,
            no_cache=no_cache,
            on_line=lines.append,
        )
        self.made_images.add(image_id)
        return image_id

    def base_available(self) -> Optional[str]:
        import docker.errors

        try:
            self.client.images.get(self.args.base_image)
            return None
        except docker.errors.ImageNotFound:
            pass
        if self.args.base_image == self.names.DEFAULT_BASE_IMAGE:
            try:
                log(f"pulling {self.args.base_image}")
                self.client.images.pull(self.args.base_image)
                return None
            except docker.errors.APIError as exc:
                return f"the base image {self.args.base_image} cannot be pulled ({str(exc)[:120]})"
        return f"the base image {self.args.base_image} is not on this machine (--base-image)"

    def builds(self) -> bool:
        """Cold and warm builds; False if there is no image to go on with."""
        reason = self.base_available()
        if reason:
            self.rows.append(Row("cold build (no cache)", skipped=reason))
            self.rows.append(Row("warm build (no change)", skipped=reason, goal=GOALS["warm"]))
            return False
        cold = Row("cold build (no cache)", note="imdbox.build.build_image(no_cache=True)")
        if self.args.cold_runs <= 0:
            cold.skipped = "--quick / --cold-runs 0"
        else:
            for i in range(self.args.cold_runs):
                log(f"cold build {i + 1}/{self.args.cold_runs} (minutes)")
                cold.samples.append(timed(lambda: self._build(no_cache=True)))
        self.rows.append(cold)
        warm = Row("warm build (no change)", goal=GOALS["warm"], note="same call, layer cache")
        try:
            log("build (primes the layer cache; not timed)")
            self._build(no_cache=False)
            for i in range(self.args.runs):
                log(f"warm build {i + 1}/{self.args.runs}")
                warm.samples.append(timed(lambda: self._build(no_cache=False)))
        except self.build.BuildError as exc:
            warm.skipped = f"the build failed: {tail(str(exc), 2)}"
            self.rows.append(warm)
            return False
        self.rows.append(warm)
        return True

    def use_existing_image(self) -> bool:
        import docker.errors

        try:
            self.client.images.get(self.image)
            return True
        except docker.errors.ImageNotFound:
            return False

    # ---------------------------------------------------------------- size
    def size(self) -> None:
        img = self.client.images.get(self.image)
        total = img.attrs["Size"]
        row = Row("image size (uncompressed)", goal=GOALS["image"], value_text=f"{total / GB:.2f} GB")
        row.met = total <= GOALS["image"]
        row.note = f"{self.image}, {len(img.history())} layers"
        self.rows.insert(0, row)
        history = [h for h in img.history() if h.get("Size", 0) > 0]
        history.sort(key=lambda h: h["Size"], reverse=True)
        for h in history[: self.args.layers]:
            self.layers.append([f"{h['Size'] / MB:,.1f} MB", f"{100 * h['Size'] / total:.0f}%", layer_step(h)])
        rest = history[self.args.layers :]
        if rest:
            size = sum(h["Size"] for h in rest)
            self.layers.append([f"{size / MB:,.1f} MB", f"{100 * size / total:.0f}%", f"({len(rest)} smaller layers)"])

    # ---------------------------------------------------------------- box --help
    def help(self) -> None:
        for launcher, label in ((True, "`box --help` (./box launcher)"), (False, "`python -m imdbox --help`")):
            if launcher and not self.box.has_launcher:
                self.rows.append(Row(label, skipped="no executable ./box in this checkout", goal=GOALS["help"]))
                continue
            first = self.box.run("--help", launcher=launcher)  # warm-up: the launcher makes its venv once
            if first.returncode != 0:
                self.rows.append(Row(label, skipped=f"exit {first.returncode}: {tail(first.stdout + first.stderr)}"))
                continue
            row = Row(label, goal=GOALS["help"] if launcher else None, note="warm (1 untimed run first)")
            for _ in range(max(self.args.runs, 5)):
                row.samples.append(timed(lambda launcher=launcher: self.box.run("--help", launcher=launcher)))
            self.rows.append(row)

    # ---------------------------------------------------------------- box check
    def check(self) -> None:
        label = "`box check` (all walls)"
        if self.args.harness:
            self._check_harness(label)
            return
        extra = []
        if self.args.check_url:
            extra += ["--url", self.args.check_url]
        if self.args.check_targets:
            extra += ["--targets", self.args.check_targets]
        row = Row(label, goal=GOALS["check"], note="`box check --json`, wall time")
        fails: set[str] = set()
        for i in range(self.args.runs):
            log(f"box check {i + 1}/{self.args.runs}")
            t0 = time.perf_counter()
            res = self.box.run("check", "--json", *extra, timeout=300)
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
        self.rows.append(row)

    def _check_harness(self, label: str) -> None:
        from imdbox.check.runner import run_check
        from tests.harness import topology as topo_mod

        row = Row(label, goal=GOALS["check"], note="run_check (what `box check` runs) on the test networks")
        volume = f"{PREFIX}checkhome-{self.run_id}"
        self.client.volumes.create(volume, labels={"imd-bench": "1"})
        targets = topo_mod.check_targets()
        try:
            log("waiting for the test topology lock (a test run may hold it)")
            with test_machine.held():
                topo = topo_mod.build(self.client, self.image)
                try:
                    fails: set[str] = set()
                    for i in range(self.args.runs):
                        log(f"check {i + 1}/{self.args.runs}")
                        t0 = time.perf_counter()
                        report = run_check(
                            boxes.engine_of(self.client, image=self.image, volume=volume),
                            image=self.image,
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
                    topo_mod.teardown(self.client, topo)
        except Exception as exc:  # the bench reports, it does not crash
            row.skipped = f"the test topology or the check failed: {str(exc)[:200]}"
        finally:
            self._remove_volume(volume)
        self.rows.append(row)

    # ---------------------------------------------------------------- a job
    def job(self) -> None:
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
        jailed = Row(
            "scripted job, jailed (6 tool calls)", goal=GOALS["job"], note="the real Claude Code, scripted model"
        )
        plain = Row("scripted job, no jail", note="the same script, the same box, IDENTITYMD_CLAUDE_BIN unset")
        jailed.note += "; from the worker's view, through the door"
        log("waiting for the machine lock (a test run may hold it), then installing the agent CLIs")
        with test_machine.held(), agents.installed(self.client, self.image) as volume:
            box = boxes.start_walled(self.client, self.image, None, volume=volume, alone_on=self.args.network)
            try:
                for i in range(self.args.runs):
                    for row, jail in ((jailed, True), (plain, False)):
                        log(f"job {i + 1}/{self.args.runs} ({'jailed' if jail else 'no jail'})")
                        t0 = time.perf_counter()
                        run = jobs.play(self.client, self.image, box, steps, jailed=jail, view=jail)
                        elapsed = time.perf_counter() - t0
                        if run.code != 0 or len(run.results) != len(steps):
                            raise RuntimeError(f"the scripted job failed: {tail(str(run))}")
                        row.samples.append(elapsed)
                net = Row(
                    "a job's jail with its own network (empty run)",
                    goal=GOALS["net"],
                    note="`jail claude --program /bin/true` in a job's workspace: the network made and gone",
                )
                net.samples += timed_runs(box, f"{JAIL} claude --program /bin/true", max(self.args.runs, 20))
                door, before = self._door(box)
            finally:
                box.remove(force=True)
        self.rows += [jailed, plain, cost_row("the jail's cost (jailed / no jail)", jailed, plain, GOALS["jail"]), net]
        self.rows += [door, before, added_row("the door's cost (through it − before it)", door, before, GOALS["door"])]

    def _door(self, box) -> tuple[Row, Row]:
        """A job's start through the door (the worker's git in its view: the stand-in, the door,
        the launcher, the job's jail) against the same start as the worker made it before the
        door (worker/hands/git, the launcher itself): `git --version` in a job's node, each
        alternating batch in one shell."""
        door = Row("a job's start through the door", note="`git --version` in a job's node, from the worker's view")
        before = Row("a job's start before the door", note="the same, the launcher run by the worker itself")
        for i in range(max(self.args.runs, 3)):
            for row, view in ((door, True), (before, False)):
                log(f"{row.metric} {i + 1}")
                row.samples += timed_runs(box, "git --version >/dev/null", 10, view=view)
        return door, before

    # ---------------------------------------------------------------- the login broker
    def broker(self) -> None:
        """A request through the login broker (worker/broker) against the same request straight to
        Anthropic, with the owner's token: the test world's Anthropic (tests/harness/login.py), the
        account's profile, each batch on one connection (Claude Code keeps its own), alternating."""
        from tests.harness import jobs, login

        ca, tls = login.certificates()
        through = Row("a request through the login broker", note="GET /api/oauth/profile with a run's sentinel")
        straight = Row("the same request straight to Anthropic", note="the owner's token, no broker")
        log("waiting for the machine lock (a test run may hold it)")
        with (
            test_machine.held(),
            tempfile.TemporaryDirectory() as folder,
            boxes.volume(self.client, "broker") as home,
            login.walled(
                self.client, self.image, None, volume=home, folder=Path(folder), ca=ca, alone_on=self.args.network
            ) as box,
        ):
            jobs.seed(box, {login.LOGIN: login.owner_login()})
            boxes.as_imd(box, boxes.in_view("true"))  # the worker's start, which starts the broker
            with jobs.model(self.client, self.image, box, [], login=login.anthropic(tls)):
                for i in range(max(self.args.runs, 3)):
                    for row, brokered in ((through, True), (straight, False)):
                        log(f"{row.metric} {i + 1}")
                        row.samples += requests_timed(box, 20, brokered)
        cost = added_row("the login broker's cost (through it − straight)", through, straight, GOALS["broker"])
        self.rows += [through, straight, cost]

    # ---------------------------------------------------------------- the worker's hands
    def _worker_steps(self, jailed: Row, plain: Row, install, task, change) -> None:
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
            boxes.volume(self.client, "bench-hands") as volume,
            hands.contract_box(self.client, self.image, volume, install, self.args.network) as box,
        ):
            for i in range(self.args.runs):
                for row, defended in ((jailed, True), (plain, False)):
                    log(f"{row.metric} {i + 1}/{self.args.runs}")
                    space, spec = task(box)
                    before = hands.worker_steps(box, "before", space, spec, defended=defended)
                    change(box, space)
                    sent = hands.worker_steps(box, "after", space, spec, defended=defended)
                    # The steps' own time, as the stand-in worker took it in the box.
                    row.samples.append((before["ms"] + sent["ms"]) / 1000)
                    if [c["passed"] for c in sent["localChecks"]] != [True, True]:
                        checks = [(c["name"], c["passed"], c["output"][-300:]) for c in sent["localChecks"]]
                        raise RuntimeError(f"the worker's forge build or test failed: {tail(str(checks))}")

    def hands(self) -> None:
        """The worker's steps on a contract and its test."""
        from tests.harness import hands

        jailed = Row(
            "worker's git and forge steps, jailed",
            note="a contract and its test: clone to bundle, forge build and test",
        )
        plain = Row("worker's git and forge steps, no jail", note="the same steps, the image's git and forge")
        self._worker_steps(
            jailed,
            plain,
            hands.install_solc,
            lambda box: hands.code_task(box, committed_link=False),
            # What the agent would have done: a change to the contract.
            lambda box, space: boxes.as_imd(box, f"cd {space} && echo '// changed' >> src/Counter.sol"),
        )
        cost = cost_row("the hands' jail cost (jailed / no jail)", jailed, plain, GOALS["hands"])
        self.rows += [jailed, plain, cost]

    def v4hook(self) -> None:
        """The worker's steps on a v4 hook job: v4-core vendored, solc 0.8.26, v4-core's Deployers."""
        from tests.harness import v4hook

        jailed = Row(
            "worker's steps on a v4 hook job, jailed",
            note="a hook and its test on v4-core's Deployers: clone to bundle, forge build and test",
        )
        plain = Row("worker's steps on a v4 hook job, no jail", note="the same steps, the image's git and forge")
        self._worker_steps(jailed, plain, v4hook.install, v4hook.hook_task, v4hook.agent_change)
        cost = cost_row("the hands' jail cost on it (jailed / no jail)", jailed, plain, GOALS["v4hook"])
        self.rows += [jailed, plain, cost]

    # ---------------------------------------------------------------- a job's own commands
    def commands(self) -> None:
        """A job's own commands on real projects (tests/harness/projects.py), in a walled box on
        the bench's network: a TypeScript tool's npm ci, build and test (its lock and the box's
        npm cache from the owner's install outside every job), and a Foundry project's forge
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
            boxes.volume(self.client, "bench-commands") as volume,
            hands.contract_box(self.client, self.image, volume, hands.install_solc, self.args.network) as box,
        ):
            projects.write(box, f"{WORK_ROOT}/bench/ts", projects.TS_TOOL)
            projects.owners_install(box, f"{WORK_ROOT}/bench/ts")
            projects.write(box, f"{WORK_ROOT}/bench/sol", projects.FOUNDRY_PROJECT)
            for node, steps in (("ts", projects.TS_STEPS), ("sol", projects.FORGE_STEPS)):
                self._commands(box, node, steps)

    def _commands(self, box, node: str, steps: tuple[str, ...]) -> None:
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
        for i in range(self.args.runs):
            for jailed in (True, False):
                log(f"{node}: {'jailed' if jailed else 'no jail'} {i + 1}/{self.args.runs}")
                code, out = boxes.as_imd(box, f"cd {jobs.WORK_ROOT}/bench/{node} && {shells[jailed]}", timeout=300)
                if code != 0:
                    raise RuntimeError(f"{node}'s commands did not run: {tail(out)}")
                for line in out.splitlines():
                    if line.startswith("took "):
                        _, pass_, k, us = line.split()
                        took.setdefault((jailed, int(pass_), int(k)), []).append(int(us) / 1e6)
                    elif line.startswith("start ") and jailed:
                        starts.append(int(line.split()[1]) / 1e6)
        self.rows.append(
            Row(f"{node}: a job's jail, made (until its first command)", starts, note="its own network too")
        )
        for k, step in enumerate(steps):
            first = Row(f"`{step}`, a job's first, jailed", took[True, 1, k])
            plain_first = statistics.median(took[False, 1, k])
            ratio = statistics.median(first.samples) / plain_first
            first.note = f"no jail, a shell's first: {plain_first:.2f} s ({ratio:.2f}×)"
            jailed = Row(f"`{step}`, jailed", took[True, 2, k], note="in the jail its first run was made in")
            plain = Row(f"`{step}`, no jail", took[False, 2, k], note="the same shell's second run")
            cost = cost_row(f"`{step}`: the jail's cost (jailed / no jail)", jailed, plain, GOALS["commands"])
            self.rows += [first, jailed, plain, cost]

    # ---------------------------------------------------------------- box start
    def prepare_fake_worker(self) -> Optional[str]:
        """Install tests/fake_worker (and its claude) into our own fresh volume and
        pair it (the worker will not start unpaired without a terminal); a reason if it cannot."""
        try:
            from tests.fake_worker import installed_home_tar
        except ImportError as exc:
            return f"no prepared volume (--volume) and no tests/fake_worker to install ({exc})"
        script = (
            "set -e; export HOME=/home/imd IDENTITYMD_HOME=/home/imd/.identitymd; "
            "/home/imd/.npm-global/bin/imd pair >/dev/null; "
            "chown -R 1000:1000 /home/imd; chmod 700 /home/imd /home/imd/.identitymd"
        )
        self.client.volumes.create(self.volume, labels={"imd-bench": "1"})
        self.own_volume = self.volume
        prep = self.client.containers.create(
            self.image,
            entrypoint=["bash", "-c", script],
            command=[],
            user="root",
            network_disabled=True,
            volumes={self.volume: {"bind": "/home/imd", "mode": "rw"}},
            name=f"{PREFIX}prep-{self.run_id}",
            labels={"imd-bench": "1"},
        )
        try:
            prep.put_archive("/", installed_home_tar())
            prep.start()
            code = prep.wait(timeout=120)["StatusCode"]
            if code != 0:
                return f"installing the fake worker failed: {tail(prep.logs().decode(errors='replace'))}"
        finally:
            prep.remove(force=True)
        return None

    def _remove_container(self) -> None:
        import docker.errors

        try:
            self.client.containers.get(self.container).remove(force=True)
        except docker.errors.NotFound:
            pass

    def _worker_seen(self, started: float, out: dict) -> None:
        """Poll until the worker process (`imd start`) runs in our container."""
        import docker.errors

        deadline = started + 120
        while time.perf_counter() < deadline and "stop" not in out:
            try:
                c = self.client.containers.get(self.container)
                top = c.top(ps_args="-eo pid,args")
                if any("imd start" in " ".join(map(str, p)) for p in top.get("Processes") or []):
                    out["seen"] = time.perf_counter() - started
                    return
            except docker.errors.APIError:
                pass  # not created yet, or not running yet
            time.sleep(0.05)

    def start(self) -> None:
        label = "`box start` → worker process running"
        if not self.args.volume:
            reason = self.prepare_fake_worker()
            if reason:
                self.rows.append(Row(label, skipped=reason, goal=GOALS["start"]))
                return
            note = "fake worker (tests/fake_worker)"
        else:
            note = f"the worker in {self.args.volume}"
        row = Row(label, goal=GOALS["start"], note=note)
        cmd_row = Row("`box start` command, until it returns", note="includes its 2 s settle check")
        for i in range(self.args.runs):
            log(f"box start {i + 1}/{self.args.runs}")
            self._remove_container()
            seen: dict = {}
            t0 = time.perf_counter()
            proc = self.box.popen("start")
            poller = threading.Thread(target=self._worker_seen, args=(t0, seen), daemon=True)
            poller.start()
            try:
                output, _ = proc.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                proc.kill()
                output = "(timed out after 180 s)"
            elapsed = time.perf_counter() - t0
            seen["stop"] = True
            poller.join(timeout=5)
            if proc.returncode != 0 or "seen" not in seen:
                row.skipped = f"`box start` exit {proc.returncode}: {tail(output)}"
                break
            row.samples.append(seen["seen"])
            cmd_row.samples.append(elapsed)
            stop = self.box.run("stop", timeout=120)
            if stop.returncode != 0:
                log(f"box stop said: {tail(stop.stdout + stop.stderr)}")
        self._remove_container()
        self.rows.append(row)
        if cmd_row.samples and not row.skipped:
            self.rows.append(cmd_row)

    # ---------------------------------------------------------------- clean-up
    def _remove_volume(self, name: str) -> None:
        import docker.errors

        try:
            for c in self.client.containers.list(all=True, filters={"volume": name}):
                if c.name.startswith(PREFIX):
                    c.remove(force=True)
            self.client.volumes.get(name).remove(force=True)
        except docker.errors.APIError as exc:
            log(f"could not remove the volume {name}: {exc}")

    def cleanup(self) -> None:
        import docker.errors

        self._remove_container()
        if self.own_volume:
            self._remove_volume(self.own_volume)
        if self.args.image or self.args.keep_image:
            return
        try:
            self.client.images.remove(self.image)  # our tag; layers others use stay
        except docker.errors.APIError:
            pass
        for image_id in self.made_images:  # cold builds' images nobody else tagged
            try:
                if not self.client.images.get(image_id).tags:
                    self.client.images.remove(image_id)
            except docker.errors.APIError:
                pass


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
            have_image = bench.use_existing_image()
            if not have_image:
                bench.rows.append(Row("image", skipped=f"--image {args.image} is not on this machine"))
        elif "build" in args.skip:
            bench.rows.append(Row("cold build (no cache)", skipped="--skip build"))
            bench.rows.append(Row("warm build (no change)", skipped="--skip build", goal=GOALS["warm"]))
            have_image = bench.use_existing_image()
        else:
            have_image = bench.builds()
        if "size" not in args.skip and have_image:
            bench.size()
        if "help" not in args.skip:
            bench.help()
        for name, fn, row_name, goal in (
            ("check", bench.check, "`box check` (all walls)", GOALS["check"]),
            ("start", bench.start, "`box start` → worker process running", GOALS["start"]),
            ("job", bench.job, "scripted job, jailed (6 tool calls)", GOALS["job"]),
            ("hands", bench.hands, "worker's git and forge steps, jailed", None),
            ("v4hook", bench.v4hook, "worker's steps on a v4 hook job, jailed", None),
            ("commands", bench.commands, "a job's own commands, jailed", None),
            ("broker", bench.broker, "a request through the login broker", None),
        ):
            if name in args.skip:
                bench.rows.append(Row(row_name, skipped=f"--skip {name}", goal=goal))
            elif not have_image:
                bench.rows.append(Row(row_name, skipped="no box image (the build did not run)", goal=goal))
            else:
                try:
                    fn()
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
