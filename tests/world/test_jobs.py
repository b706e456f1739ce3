"""Jobs as the released worker runs them: the real Claude Code, started through the box's
launcher (IDENTITYMD_CLAUDE_BIN, worker/claude) with the worker's argv, env and cwd,
in a walled box, the scripted model playing each job's tool calls (tests/harness/jobs.py).

A job's tools must get their work done (the network, its own workspace) and read nothing
else of the home: every secret of tests/harness/jobs.py is seeded with a mark of its own,
and no tool result may hold one. The controls: the worker itself reads every seed, the
same tools reach the internet listener, and without the launcher (the breaking twin) the
same script reads another job's workspace.
"""

from __future__ import annotations

import json
import shlex
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from imdbox.browser import TOOLS as BROWSER_TOOLS
from imdbox.layout import CLAUDE_JAIL, CODEX_JAIL
from tests.harness import agents as agents_mod
from tests.harness import boxes, jobs, login
from tests.harness.boxes import as_imd
from tests.harness.claude_settings import managed_with
from tests.harness.jobs import HOME, SECRETS, WORK_ROOT
from tests.harness.twins import jail_with, patched_image

pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group(agents_mod.GROUPS[0])]

# The test world cannot reach claude.ai, where WebFetch asks whether a domain may be
# fetched: the owner's own settings (the launcher binds them read-only) skip that ask.
OWNER_SETTINGS = f"{HOME}/.claude/settings.json"


@pytest.fixture(scope="module")
def box(docker_client, box_image, topology, agents, tmp_path_factory):
    # The box trusts the internet listener's own certificate, as the real box trusts the web's
    # (a research job's WebFetch takes https alone).
    trusted = login.bundled(tmp_path_factory.mktemp("ca"), topology.tls_cert("internet"))
    container = boxes.start_walled(docker_client, box_image, topology, volume=agents, mutate=trusted)
    try:
        yield container
    finally:
        container.remove(force=True)


@pytest.fixture(scope="module")
def marks(box) -> dict[str, str]:
    """Each secret, seeded as imd with a mark of its own; removed again with the module, as
    the installed CLIs' volume serves other tests."""
    marks = {label: jobs.mark(label) for label in SECRETS}
    # Claude Code reads its state and login as JSON, Codex its login (an API key, as `codex
    # login --with-api-key` keeps it): those hold the mark as a value.
    as_json = {"claude state": "imdtMark", "login": "imdtMark", "codex login": "OPENAI_API_KEY"}
    files = {
        path: json.dumps({as_json[label]: marks[label]}) if label in as_json else marks[label]
        for label, path in SECRETS.items()
    }
    jobs.seed(box, {**files, OWNER_SETTINGS: json.dumps({"skipWebFetchPreflight": True})})
    yield marks
    seeded = [*SECRETS.values(), OWNER_SETTINGS, f"{HOME}/.identitymd", f"{HOME}/.claude/projects"]
    as_imd(box, f"rm -rf {shlex.join(seeded)}")


def leaked(run: jobs.Run, marks: dict[str, str], field: str = "text") -> dict[str, int]:
    """Which marks any tool result holds (label -> step); Codex's results hold it as "output"."""
    return {label: r["step"] for r in run.results for label, mark in marks.items() if mark in r[field]}


STEAL_SH = f"""
for f in {" ".join(SECRETS.values())}; do cat "$f"; done
grep -rs imdt- {HOME} /proc/*/cwd/ /proc/*/root{HOME}/ | head -50
find {HOME} -maxdepth 4 | head -100
echo planted > {WORK_ROOT}/job-2/node-1/planted
echo planted >> {HOME}/.bashrc
"""
STEAL_MJS = f"""
import fs from "node:fs";
for (const f of {json.dumps(list(SECRETS.values()))}) {{
  try {{ console.log(fs.readFileSync(f, "utf8")); }} catch (e) {{ console.log(e.code, f); }}
}}
"""


def hostile_steps(topology) -> list:
    """Every read of the home outside the job's workspace by every tool, writes outside
    it, the Mac and the LAN; each one a turn of its own. Claude Code's permission rules
    refuse a command that names a secret; a script the job wrote names none to them, so
    what stops it is the jail."""
    steps = [[jobs.bash(f"cat {shlex.quote(path)}")] for path in SECRETS.values()]
    steps += [[jobs.tool("Read", file_path=path)] for path in SECRETS.values()]
    steps += [
        [jobs.tool("Write", file_path="steal.sh", content=STEAL_SH)],
        [jobs.bash("bash steal.sh")],
        [jobs.tool("Write", file_path="steal.mjs", content=STEAL_MJS)],
        [jobs.bash("node steal.mjs")],
        [jobs.tool("Grep", pattern="imdt-", path=HOME, output_mode="content")],
        [jobs.tool("Grep", pattern="imdt-", path=WORK_ROOT, output_mode="content")],
        [jobs.tool("Glob", pattern="**/*", path=HOME)],
        [jobs.tool("Glob", pattern="*/*/*", path=WORK_ROOT)],
        [jobs.tool("mcp__browser__browser_navigate", url=f"file://{SECRETS['device key']}")],
        [jobs.tool("mcp__browser__browser_navigate", url=f"file://{SECRETS['other job']}")],
        [jobs.tool("Write", file_path=f"{WORK_ROOT}/job-2/node-1/planted-by-write", content="planted")],
        [jobs.bash(f"curl -sS -m 3 {topology.url('mac')}")],
        [jobs.bash(f"curl -sS -m 3 {topology.url('lan10')}")],
        [jobs.tool("mcp__browser__browser_navigate", url=topology.url("mac"))],
        [jobs.tool("mcp__browser__browser_navigate", url=topology.url("router"))],
        # The controls, in the same run: the job's own workspace and the internet.
        [jobs.bash("echo mine > index.html && cat index.html")],
        [jobs.bash(f"curl -sS -m 5 {topology.url('internet')}")],
        [jobs.tool("mcp__browser__browser_navigate", url=topology.url("internet"))],
    ]
    return steps


def test_the_worker_runs_claude_code_through_the_jail(box):
    code, out = as_imd(box, "printenv IDENTITYMD_CLAUDE_BIN")
    assert (code, out.strip()) == (0, CLAUDE_JAIL)


def test_the_worker_itself_reads_every_seed(box, marks):
    # The control for every refusal below: the files are there, and readable by imd.
    for label, path in SECRETS.items():
        code, out = as_imd(box, f"cat {shlex.quote(path)}")
        assert code == 0 and marks[label] in out, (label, out)


def test_a_hostile_job_reads_nothing_of_the_home_and_reaches_only_the_internet(
    docker_client, box_image, box, topology, marks
):
    steps = hostile_steps(topology)
    run = jobs.play(docker_client, box_image, box, steps, browser=BROWSER_TOOLS)
    assert run.code == 0 and run.final["subtype"] == "success", str(run)
    assert len(run.results) == len(steps), str(run)
    assert leaked(run, marks) == {}, str(run)

    by_step = {r["step"]: r for r in run.results}
    own, internet, browser_internet = (by_step[len(steps) - k] for k in (3, 2, 1))
    assert "mine" in own["text"] and not own["is_error"], str(run)
    assert "imd-test-listener:internet" in internet["text"], str(run)
    assert "Page Title: internet" in browser_internet["text"], str(run)
    for step, result in by_step.items():
        if step >= len(steps) - 3:
            continue
        assert "imd-test-listener" not in result["text"], (step, result)
    # What it wrote outside its workspace went to the jail's throwaway home.
    code, out = as_imd(box, f"ls {WORK_ROOT}/job-2/node-1; grep -s planted {HOME}/.bashrc")
    if not (code != 0 and out.split() == ["index.html"]):
        _, seen = as_imd(box, f"find {HOME}/.identitymd -maxdepth 3 -printf '%TT %p\\n' | sort | tail -40")
        pytest.fail(f"the other job's folder holds {out.split()} (exit {code}); the work root:\n{seen}")


def test_without_the_jail_the_same_tools_read_another_jobs_workspace(docker_client, box_image, box, marks):
    # The breaking twin: the plain `claude` the worker runs when nothing names another.
    steps = [[jobs.tool("Read", file_path=SECRETS["other job"])]]
    run = jobs.play(docker_client, box_image, box, steps, jailed=False)
    assert marks["other job"] in run.result(0)["text"], str(run)


# A job's server on a port both jobs use: it answers once with its job's mark and ends (Claude
# Code's run waits for its background task), or ends after a while.
SAME_PORT = 18431
SAME_PORT_SERVER = (
    "const s = require('node:http').createServer((q, r) => r.end(process.argv[1], () => process.exit(0)));"
    f"s.listen({SAME_PORT}, '127.0.0.1'); setTimeout(() => process.exit(0), 10000);"
)
# The next command asks until the server answers: a node that starts slowly on a busy machine
# is no wall (a fixed half second was once too short).
SAME_PORT_CLIENT = (
    f"for _ in $(seq 1 80); do curl -sf --max-time 2 http://127.0.0.1:{SAME_PORT}/ && break; sleep 0.1; done"
)


def test_two_jobs_side_by_side_read_neither_the_others_work_nor_its_transcript(docker_client, box_image, box, marks):
    spaces = [jobs.workspace() for _ in range(2)]
    mine = [f"imdt-job{i}-{uuid.uuid4().hex}" for i in range(2)]
    prompts = [f"imdt-prompt-{uuid.uuid4().hex}" for _ in range(2)]

    def steps(i: int) -> list:
        other = spaces[1 - i]
        transcripts = f"{HOME}/.claude/projects/{jobs.project(other)}"
        return [
            [jobs.bash(f"echo {mine[i]} > notes.txt && sleep 3")],
            [jobs.tool("Read", file_path=f"{other}/notes.txt")],
            [jobs.bash(f"cat {other}/notes.txt")],
            [jobs.tool("Grep", pattern="imdt-job", path=transcripts, output_mode="content")],
            [jobs.bash(f"grep -rs imdt-job {transcripts} /proc/*/cwd/ | head")],
            [jobs.bash(LOOK_FOR_PROMPTS)],
            [jobs.bash("cat notes.txt")],
            # Both serve on the same port of their own loopback, and each reaches its own server.
            [jobs.bash(f"node -e {shlex.quote(SAME_PORT_SERVER)} {mine[i]}", run_in_background=True)],
            [jobs.bash(f"{SAME_PORT_CLIENT}; echo served-{i}")],
        ]

    with ThreadPoolExecutor(2) as pool:
        runs = list(
            pool.map(
                lambda i: jobs.play(docker_client, box_image, box, steps(i), cwd=spaces[i], prompt=prompts[i]), range(2)
            )
        )
    for i, run in enumerate(runs):
        assert run.code == 0, str(run)
        assert mine[i] in run.result(6)["text"], str(run)
        for r in run.results[:6]:
            assert mine[1 - i] not in r["text"] and prompts[1 - i] not in r["text"], (i, r)
        served = run.result(8)["text"]
        assert f"served-{i}" in served and mine[i] in served and mine[1 - i] not in served, (i, served)
    # The control: each transcript is there for the worker, and names its job's mark.
    for i in range(2):
        code, out = as_imd(box, f"cat {HOME}/.claude/projects/{jobs.project(spaces[i])}/*.jsonl")
        assert mine[i] in out, out[-2000:]


def test_a_research_job_fetches_the_internet_and_sees_no_workspace(docker_client, box_image, box, topology, marks):
    # WebFetch takes https only: the box trusts the listener's own certificate (box).
    # A research task runs in ~/.identitymd/work itself, where every job's workspace is.
    steps = [
        [jobs.tool("WebFetch", url=topology.url("internet", scheme="https"), prompt="What does the page say?")],
        [jobs.tool("Glob", pattern="**/*", path=WORK_ROOT)],
        [jobs.tool("Grep", pattern="imdt-", path=".", output_mode="content")],
    ]
    run = jobs.play(docker_client, box_image, box, steps, profile="research", cwd=WORK_ROOT)
    assert run.code == 0 and run.final["subtype"] == "success", str(run)
    assert "imd-test-listener:internet" in run.result(0)["text"], str(run)
    assert "No files found" in run.result(1)["text"], str(run)
    assert leaked(run, marks) == {}, str(run)


def test_the_doctors_smoke_run_gets_its_answer(docker_client, box_image, box, marks):
    # `imd doctor` runs one prompt on each installed runtime, one turn, the default tool lists,
    # in a folder of its own in the work root (dist/cli.js fd511610).
    space = f"{WORK_ROOT}/doctor-{uuid.uuid4().hex[:6]}"
    run = jobs.play(docker_client, box_image, box, [[{"text": "ok"}]], profile="default", cwd=space)
    assert run.code == 0 and run.final["subtype"] == "success" and run.final["result"] == "ok", str(run)


def test_a_connected_jobs_commands_reach_the_internet(docker_client, box_image, box, topology, marks):
    steps = [[jobs.bash(f"curl -sS -m 5 {topology.url('internet')}")]]
    run = jobs.play(docker_client, box_image, box, steps)
    assert "imd-test-listener:internet" in run.result(0)["text"], str(run)


SITE_BUILD = """
import fs from "node:fs";
import escape from "escape-html";
fs.mkdirSync("dist", { recursive: true });
fs.writeFileSync("dist/index.html", `<html><head><title>${escape("imdt-site")}</title></head><body><h1>built</h1></body></html>`);
"""
# The site's preview server; it ends itself after 12 s, in case the job cannot reach it
# to end it (the breaking twin), so that Claude Code's run ends too.
SITE_SERVE = """
import http from "node:http";
import fs from "node:fs";
const server = http.createServer((req, res) => {
  if (req.url === "/quit") { res.end("bye"); server.close(); process.exit(0); }
  res.writeHead(200, { "content-type": "text/html" });
  res.end(fs.readFileSync("dist/index.html"));
});
server.listen(4173, "127.0.0.1", () => console.log("preview on 4173"));
setTimeout(() => process.exit(0), 12000);
"""


def preview_steps() -> list:
    """Serve dist/ in the background, then reach it from the next command and the browser."""
    return [
        [jobs.tool("Write", file_path="serve.mjs", content=SITE_SERVE)],
        [jobs.bash("node serve.mjs", run_in_background=True)],
        [jobs.bash("sleep 1; curl -sS -m 5 http://127.0.0.1:4173/")],
        [jobs.tool("mcp__browser__browser_navigate", url="http://127.0.0.1:4173/")],
        [jobs.tool("mcp__browser__browser_take_screenshot")],
        [jobs.bash("curl -sS -m 5 http://127.0.0.1:4173/quit")],
    ]


@pytest.fixture(scope="module")
def web_box(docker_client, box_image, agents, marks):
    """A walled box on Docker's bridge, where npm's registry is in reach (walls on)."""
    container = boxes.start_walled(docker_client, box_image, None, volume=agents, alone_on="bridge")
    try:
        yield container
    finally:
        container.remove(force=True)


def test_a_website_job_installs_builds_serves_and_looks_at_its_site(docker_client, box_image, web_box):
    steps = [
        [jobs.tool("Write", file_path="package.json", content='{"name": "site", "private": true, "type": "module"}')],
        [jobs.bash("npm install escape-html@1 --no-audit --no-fund --no-update-notifier 2>&1", timeout=120000)],
        [jobs.tool("Write", file_path="build.mjs", content=SITE_BUILD)],
        [jobs.bash("node build.mjs && cat dist/index.html")],
        *preview_steps(),
    ]
    run = jobs.play(docker_client, box_image, web_box, steps, browser=BROWSER_TOOLS, timeout=300)
    assert run.code == 0 and run.final["subtype"] == "success", str(run)
    assert "added 1 package" in run.result(1)["text"], str(run)
    assert "<title>imdt-site</title>" in run.result(3)["text"], str(run)
    assert "<title>imdt-site</title>" in run.result(6)["text"], str(run)  # the next command reaches the server
    assert "Page Title: imdt-site" in run.result(7)["text"], str(run)  # and so does the browser
    assert run.result(8)["images"] == 1, str(run)


def test_a_codex_website_job_installs_builds_and_serves_its_site(docker_client, box_image, web_box):
    # A preview server is a session of Codex's own (exec_command that yields while it runs on):
    # Codex ends whatever else a command leaves running when it returns.
    serve = {"cmd": "node serve.mjs", "yield_time_ms": 1500}
    commands = [
        'printf \'{"name": "site", "private": true, "type": "module"}\' > package.json && '
        "npm install escape-html@1 --no-audit --no-fund --no-update-notifier 2>&1",
        f"printf %s {shlex.quote(SITE_BUILD)} > build.mjs && printf %s {shlex.quote(SITE_SERVE)} > serve.mjs && "
        "node build.mjs && cat dist/index.html",
        serve,
        "curl -sS -m 5 http://127.0.0.1:4173/",
        "curl -sS -m 5 http://127.0.0.1:4173/quit",
    ]
    run = jobs.codex_play(docker_client, box_image, web_box, commands, timeout=300)
    assert run.code == 0 and len(run.results) == len(commands), str(run)
    assert "added 1 package" in run.result(0)["output"], str(run)
    assert "<title>imdt-site</title>" in run.result(1)["output"], str(run)
    assert "<title>imdt-site</title>" in run.result(3)["output"], str(run)  # the next command reaches it


def test_with_a_network_namespace_per_command_no_preview_is_in_reach(docker_client, box_image, topology, agents, marks):
    # The breaking twin: the sandbox's own bubblewrap, as Claude Code runs it unless told.
    page = "<html><head><title>imdt-site</title></head></html>"
    steps = [[jobs.tool("Write", file_path="dist/index.html", content=page)], *preview_steps()]
    with patched_image(docker_client, box_image, managed_with(bwrapPath="/usr/bin/bwrap")) as image:
        box = boxes.start_walled(docker_client, image, topology, volume=agents)
        try:
            run = jobs.play(docker_client, image, box, steps, browser=BROWSER_TOOLS, timeout=300)
        finally:
            box.remove(force=True)
    assert "Failed to connect to 127.0.0.1 port 4173" in run.result(3)["text"], str(run)
    assert "ERR_CONNECTION_REFUSED" in run.result(4)["text"], str(run)


# Codex, as the worker starts it (IDENTITYMD_CODEX_BIN), driven by its scripted model
# (tests/harness/codex_model.mjs): each command a turn, run by Codex under its own sandbox.
CODEX_READS = "for f in " + " ".join(SECRETS.values()) + ' index.html; do cat "$f" 2>&1; done'


def test_the_worker_runs_codex_through_the_jail(box):
    code, out = as_imd(box, 'printenv IDENTITYMD_CODEX_BIN && cd "$(mktemp -d)" && "$IDENTITYMD_CODEX_BIN" --version')
    assert code == 0 and out.split("\n")[0] == CODEX_JAIL and out.split("\n")[1].startswith("codex-cli "), out


def codex_hostile(topology) -> list[str]:
    """Every secret of the home, the work root, the Mac, then the job's own work and the internet."""
    return [
        f"echo mine > index.html && {CODEX_READS}",
        f"grep -rs imdt- {HOME} /proc/*/cwd/ | head -50; ls {WORK_ROOT}",
        f"curl -sS -m 3 {topology.url('mac')} 2>&1",
        f"curl -sS -m 5 {topology.url('internet')} 2>&1",
    ]


def test_a_codex_job_reads_nothing_of_the_home_and_codex_still_signs_in(docker_client, box_image, box, topology, marks):
    run = jobs.codex_play(docker_client, box_image, box, codex_hostile(topology))
    assert run.code == 0 and len(run.results) == 4, str(run)
    assert "mine" in run.result(0)["output"], str(run)
    # Not even the Codex login the jail holds for Codex. Codex signs its requests to the test's
    # provider with the worker's key: the Codex room lets no provider of the worker's sign with
    # the login (OpenAI's own endpoint, where it does, cannot be reached here).
    assert leaked(run, marks, "output") == {}, str(run)
    assert run.login == f"Bearer {jobs.STAND_IN_KEY}", str(run)
    assert "imd-test-listener:mac" not in run.result(2)["output"], str(run)
    assert "imd-test-listener:internet" in run.result(3)["output"], str(run)


def test_without_the_jail_codexs_commands_read_another_jobs_workspace(docker_client, box_image, box, topology, marks):
    run = jobs.codex_play(docker_client, box_image, box, codex_hostile(topology)[:1], jailed=False)
    assert {"other job", "device key", "codex login"} <= set(leaked(run, marks, "output")), str(run)


def test_two_codex_jobs_side_by_side_see_neither_the_others_work_nor_its_prompt(docker_client, box_image, box, marks):
    spaces = [jobs.workspace() for _ in range(2)]
    mine = [f"imdt-job{i}-{uuid.uuid4().hex}" for i in range(2)]
    prompts = [f"imdt-prompt-{uuid.uuid4().hex}" for _ in range(2)]

    def commands(i: int) -> list[str]:
        return [
            f"echo {mine[i]} > notes.txt && sleep 3",
            f"cat {spaces[1 - i]}/notes.txt 2>&1; {LOOK_FOR_PROMPTS}",
            "cat notes.txt",
        ]

    with ThreadPoolExecutor(2) as pool:
        runs = list(
            pool.map(
                lambda i: jobs.codex_play(docker_client, box_image, box, commands(i), cwd=spaces[i], prompt=prompts[i]),
                range(2),
            )
        )
    for i, run in enumerate(runs):
        assert run.code == 0 and mine[i] in run.result(2)["output"], str(run)
        assert prompts[i] in run.prompt, str(run)
        for r in run.results[:-1]:
            assert mine[1 - i] not in r["output"] and prompts[1 - i] not in r["output"], (i, r)


# A job's commands read every process's command line in the box (no PID namespace can be
# had there): the jail hands Claude Code its prompt on stdin, on no command line.
LOOK_FOR_PROMPTS = "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -o 'imdt-prompt-[0-9a-f]*' | sort -u"


@pytest.mark.parametrize("jailed", [True, False], ids=["jailed", "twin-unjailed"])
def test_a_jobs_prompt_is_on_no_command_line(docker_client, box_image, box, marks, jailed):
    prompt = f"imdt-prompt-{uuid.uuid4().hex}"
    run = jobs.play(docker_client, box_image, box, [[jobs.bash(LOOK_FOR_PROMPTS)]], prompt=prompt, jailed=jailed)
    assert run.code == 0 and prompt in run.prompt, str(run)  # it reached the model
    # The breaking twin: the plain `claude -p <prompt>` shows it to every process.
    assert (prompt in run.result(0)["text"]) is not jailed, str(run)


@pytest.mark.parametrize("jailed", [True, False], ids=["jailed", "twin-unjailed"])
def test_a_codex_jobs_prompt_is_on_no_command_line(docker_client, box_image, box, marks, jailed):
    prompt = f"imdt-prompt-{uuid.uuid4().hex}"
    run = jobs.codex_play(docker_client, box_image, box, [LOOK_FOR_PROMPTS], prompt=prompt, jailed=jailed)
    assert run.code == 0 and prompt in run.prompt, str(run)  # it reached the model
    # The breaking twin: the plain `codex exec ... <prompt>` shows it to every process.
    assert (prompt in run.result(0)["output"]) is not jailed, str(run)


COUNTER_SOL = "// SPDX-License-Identifier: MIT\npragma solidity ^0.8.20;\ncontract Counter{uint256 public number;function increment()public{number++;}}\n"


def test_a_contract_job_runs_forge_in_its_workspace(docker_client, box_image, box, marks):
    # As far as the test world allows: no compiler can be downloaded here, so forge formats
    # and reads the project, writing in the workspace.
    steps = [
        [jobs.tool("Write", file_path="foundry.toml", content='[profile.default]\nsrc = "src"\nout = "out"\n')],
        [jobs.tool("Write", file_path="src/Counter.sol", content=COUNTER_SOL)],
        [jobs.bash("forge fmt && cat src/Counter.sol")],
        [jobs.bash("forge config --json")],
    ]
    run = jobs.play(docker_client, box_image, box, steps)
    assert run.code == 0 and run.final["subtype"] == "success", str(run)
    assert "contract Counter {" in run.result(2)["text"] and "function increment() public {" in run.result(2)["text"], (
        str(run)
    )
    assert '"src":"src"' in run.result(3)["text"].replace(" ", ""), str(run)


# A site as real jobs keep it: Vite with its defaults, whose preview listens on `localhost`.
VITE_PACKAGE = (
    '{"name": "site", "private": true, "type": "module", "scripts": {"build": "vite build", "preview": "vite preview"}}'
)
VITE_PAGE = "<!doctype html><html><head><title>imdt-vite</title></head><body><h1>built by vite</h1></body></html>"
VITE_FETCH = "for _ in $(seq 1 150); do curl -sf -m 2 {url} && break; sleep 0.2; done"


def test_a_vite_site_with_its_defaults_is_reached_at_127_0_0_1_and_at_localhost(docker_client, box_image, web_box):
    steps = [
        [jobs.tool("Write", file_path="package.json", content=VITE_PACKAGE)],
        [jobs.tool("Write", file_path="index.html", content=VITE_PAGE)],
        [jobs.bash("npm install vite@7 --no-audit --no-fund --no-update-notifier 2>&1 | tail -3", timeout=240000)],
        [jobs.bash("npm run build 2>&1 | tail -5 && cat dist/index.html")],
        # Its own end, so that Claude Code's run (which waits for its background tasks) ends too.
        [jobs.bash("timeout 60 npm run preview", run_in_background=True)],
        [jobs.bash(VITE_FETCH.format(url="http://127.0.0.1:4173/"))],
        [jobs.bash(VITE_FETCH.format(url="http://localhost:4173/"))],
        [jobs.tool("mcp__browser__browser_navigate", url="http://127.0.0.1:4173/")],
        [jobs.tool("mcp__browser__browser_navigate", url="http://localhost:4173/")],
        [jobs.bash("pkill -f 'vite preview'; echo stopped")],
    ]
    run = jobs.play(docker_client, box_image, web_box, steps, browser=BROWSER_TOOLS, timeout=420)
    assert run.code == 0 and run.final["subtype"] == "success", str(run)
    assert "<title>imdt-vite</title>" in run.result(3)["text"], str(run)
    for step in (5, 6):  # the next command, at 127.0.0.1 and at localhost
        assert "<title>imdt-vite</title>" in run.result(step)["text"], str(run)
    for step in (7, 8):  # and the browser
        assert "Page Title: imdt-vite" in run.result(step)["text"], str(run)


@pytest.mark.parametrize("broken", [False, True], ids=["jailed", "twin-box-hosts"])
def test_localhost_is_127_0_0_1_in_a_jobs_network(docker_client, box_image, topology, agents, broken):
    # What Vite's preview listens on when a site keeps its defaults (Node's lookup of
    # `localhost`). The twin: the box's own hosts file in the jail, whose ::1 is `localhost` too.
    patch = jail_with(('jail+=(--ro-bind-data "$known" /etc/hosts)', ":")) if broken else {}
    lookup = "node -e \"require('dns').lookup('localhost', (e, a) => console.log('localhost=' + a))\""
    with patched_image(docker_client, box_image, patch) as image:
        box = boxes.start_walled(docker_client, image, topology, volume=agents)
        try:
            run = jobs.play(docker_client, image, box, [[jobs.bash(lookup)]])
        finally:
            box.remove(force=True)
    assert run.code == 0, str(run)
    assert f"localhost={'::1' if broken else '127.0.0.1'}" in run.result(0)["text"], str(run)
