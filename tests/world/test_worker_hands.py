"""The worker's own hands: what the released worker does with a code task's tree before and
after its agent (git, forge, its reads, findings and deletions: tests/harness/worker_steps.mjs)
runs on the attacker's input. A hostile job, played by the real Claude Code through the box's
launcher, plants every way the tree can steer those steps; the stand-in worker then does them,
as the worker runs them in the box (its PATH, its environment with tools.env's keys).

Nothing of the home may reach what the worker sends, a tool result or a file outside the
workspace. The breaking twin is the same job and the same steps without the box's defence (the
plain `claude`, git and forge): each vector leaks there.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import uuid
from pathlib import Path

import pytest

from imdbox import layout
from imdbox.browser import TOOLS as BROWSER_TOOLS
from tests.harness import agents as agents_mod
from tests.harness import hands, jobs
from tests.harness.boxes import as_imd
from tests.harness.jobs import HOME, WORK_ROOT

pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group(agents_mod.GROUPS[1])]

KEYED_JS = (Path(__file__).parents[1] / "harness" / "keyed_tool.mjs").read_text()
DEVICE_KEY = f"{HOME}/.identitymd/config.json"
TOOLS_ENV = f"{HOME}/.identitymd/tools.env"
TOOL_KEY = "IMDT_TOOL_KEY"
OTHER = f"{WORK_ROOT}/job-2/node-1"  # another job's workspace
SIBLING = "node-sibling"  # another node of the same job, beside the job's workspace


@pytest.fixture(scope="module")
def box(docker_client, box_image, agents):
    """A walled box on Docker's bridge, solc-js where forge looks."""
    with hands.contract_box(docker_client, box_image, agents) as container:
        yield container


@pytest.fixture
def marks(box):
    """The device key, a tool key (tools.env) and another node's work of the same job (seeded
    with its task), each a mark of its own, and another job's folder that the worker's
    deletions must not reach."""
    marks = {label: jobs.mark(label) for label in ("device key", "tool key", "sibling node")}
    jobs.seed(
        box,
        {
            DEVICE_KEY: json.dumps({"deviceKey": marks["device key"]}),
            TOOLS_ENV: f"{TOOL_KEY}={marks['tool key']}\n",
            f"{OTHER}/scratch/keep": "another job's",
        },
    )
    yield marks
    as_imd(box, f"pkill -f [i]mdt-swap; rm -rf {HOME}/.identitymd {HOME}/.npm-global/reads {HOME}/.claude/projects")


# What the job plants, each a way its tree steers the worker's steps; and what it tries for
# the tool key. A loop that outlives the CLI keeps a link to the worker's code in place.
NESTED = f"""set -e
git init -q vendor/sub && cd vendor/sub
git config core.fsmonitor 'cat {DEVICE_KEY} > ../../leak-fsmonitor.txt; env >> ../../leak-fsmonitor.txt; ln -sf {DEVICE_KEY} ../../../dep-planted.bundle; cat ../../../{SIBLING}/notes >> ../../leak-fsmonitor.txt; echo'
git config filter.imdt.clean 'cat {DEVICE_KEY} > ../../leak-filter.txt; cat'
echo '* filter=imdt' > .gitattributes && echo x > f
git -c user.name=j -c user.email=j@j add -A && git -c user.name=j -c user.email=j@j commit -qm sub
cd ../.. && git add vendor/sub && echo nested"""
PLANT = f"""ln -s {DEVICE_KEY} src/Leak.sol && ln -s {DEVICE_KEY} .imd-findings.json
ln -sfn {HOME}/.npm-global .imd && mv test test-was && ln -s {OTHER} test && echo planted"""
SWAP = f"setsid nohup sh -c 'while :; do ln -sfn {HOME}/.npm-global .imd; sleep 0.05; done; : imdt-swap' >/dev/null 2>&1 & echo swapping"


def hostile_steps() -> list:
    return [
        [jobs.bash(NESTED)],
        [jobs.tool("Write", file_path="plant.sh", content=PLANT)],
        [jobs.bash("bash plant.sh")],
        [jobs.bash(SWAP)],
        [jobs.bash(f"printenv {TOOL_KEY}; tr '\\0' '\\n' < /proc/self/environ | grep {TOOL_KEY}; echo env-done")],
        [jobs.tool("Read", file_path="/proc/self/environ")],
        [jobs.tool("mcp__browser__browser_navigate", url="file:///proc/self/environ")],
    ]


def codex_hostile() -> list[str]:
    """The same tree, planted by Codex's commands (one a turn)."""
    return [NESTED, PLANT, SWAP, f"printenv {TOOL_KEY}; echo env-done"]


def job_and_steps(docker_client, box_image, box, marks, *, defended: bool, runtime: str = "claude"):
    space, spec = hands.code_task(box, committed_link=True)
    job = space.rsplit("/", 1)[0]
    jobs.seed(box, {f"{job}/{SIBLING}/notes": marks["sibling node"]})
    before = hands.worker_steps(box, "before", space, spec, defended=defended)
    worker_env = {TOOL_KEY: marks["tool key"]}  # the worker's environment holds tools.env's keys
    if runtime == "codex":
        run = jobs.codex_play(
            docker_client, box_image, box, codex_hostile(), cwd=space, jailed=defended, env=worker_env
        )
    else:
        run = jobs.play(
            docker_client,
            box_image,
            box,
            hostile_steps(),
            cwd=space,
            browser=BROWSER_TOOLS,
            jailed=defended,
            env=worker_env,
        )
    assert run.code == 0, str(run)
    after = hands.worker_steps(box, "after", space, spec, defended=defended)
    # The repair pass repeats them (its agent, which would come between, is left out): a
    # nested repository the worker's own `add -A` staged is looked into only then.
    repair = hands.worker_steps(box, "after", space, spec, defended=defended)
    # Every file of the job's folder but the other node's own notes, with any mark in it.
    marks_ = " ".join(f"-e {m}" for m in marks.values())
    _, files = as_imd(box, f"grep -rIl --exclude-dir={SIBLING} {marks_} {job}; true")
    # What the worker would write or delete through, outside the workspace; and a link the
    # job's fsmonitor left in the job's folder, where the worker writes and reads bundles.
    _, outside = as_imd(
        box,
        f"for p in {HOME}/.npm-global/reads {OTHER}/scratch; do [ -e $p ] && echo there $p || echo gone $p; done;"
        f" [ -L {job}/dep-planted.bundle ] && echo there link || echo gone link",
    )
    return run, before, (after, repair), files, outside


def found(text: str, marks: dict) -> set:
    return {label for label, mark in marks.items() if mark in text}


@pytest.mark.parametrize("runtime", ["claude", "codex"])
def test_a_hostile_jobs_tree_steers_the_worker_to_nothing_of_the_home(docker_client, box_image, box, marks, runtime):
    run, before, (after, repair), files, outside = job_and_steps(
        docker_client, box_image, box, marks, defended=True, runtime=runtime
    )
    assert found(json.dumps(run.results), marks) == set(), str(run)
    assert found(json.dumps([before, after, repair]), marks) == set(), (after, repair)
    assert files.strip() == "", files
    # Nothing written through a link, nothing deleted through one.
    assert outside.split("\n")[:3] == [f"gone {HOME}/.npm-global/reads", f"there {OTHER}/scratch", "gone link"], outside
    # The job still got its work done: the worker built its contract with a real compiler.
    assert [(c["name"], c["passed"]) for c in after["localChecks"]] == [("build", True), ("test", True)], after
    code, out = as_imd(box, "pgrep -f [i]mdt-swap || echo none")
    assert out.strip() == "none", out  # the loop that outlived the CLI went with it


def test_the_workers_steps_build_and_test_a_contract_and_bundle_the_change(box):
    # The jobs still get done: through the box's hands, a real compiler builds the contract,
    # its test runs, and the bundle carries what the agent changed.
    space, spec = hands.code_task(box, committed_link=False)
    before = hands.worker_steps(box, "before", space, spec, defended=True)
    assert "readsFailed" not in before, before
    code, out = as_imd(box, f"cd {space} && sed -i 's/number++;/number += 1; \\/\\/ imdt-changed/' src/Counter.sol")
    assert code == 0, out
    after = hands.worker_steps(box, "after", space, spec, defended=True)
    assert [(c["name"], c["passed"]) for c in after["localChecks"]] == [("build", True), ("test", True)], after
    assert "[PASS] test_increment()" in after["localChecks"][1]["output"], after
    assert after["changed"] == ["src/Counter.sol"] and "imdt-changed" in after["bundled"], after
    assert after["bundleBytes"] > 0, after


# A link a job leaves deep in its workspace, where it leads inside (so it stays), and a nested
# fsmonitor that moves it to the top, where it leads to the worker's code folder: no link is
# made under the worker's git, one is only moved. The fsmonitor waits for its moment (Claude
# Code's own git status runs it during the job): here, a file the test writes after the run.
DEEP = "deep/a/b/c/escape"
MOVED = f"""set -e
mkdir -p deep/a/b/c && ln -s ../../../../.npm-global {DEEP}
git init -q vendor/sub && git -C vendor/sub config core.fsmonitor '[ ! -e ../../armed ] || mv ../../{DEEP} ../../escape; echo'
git -C vendor/sub -c user.name=j -c user.email=j@j commit -q --allow-empty -m sub && git add vendor/sub && echo left"""


@pytest.mark.parametrize("declared_clear", [False, True], ids=["searched", "twin-declared-clear"])
def test_a_link_the_job_left_and_a_call_moved_out_is_gone_with_the_call(
    docker_client, box_image, box, marks, declared_clear
):
    space, spec = hands.code_task(box, committed_link=False)
    hands.worker_steps(box, "before", space, spec, defended=True)
    run = jobs.play(docker_client, box_image, box, [[jobs.bash(MOVED)]], cwd=space)
    assert run.code == 0 and "left" in run.result(0)["text"], str(run)
    if declared_clear:
        # The twin: the launcher's record (worker/jail's RUNS) says the workspace holds no link,
        # so the launcher goes at once and nothing searches after the call.
        code, out = as_imd(box, f"echo clear > {layout.RUNS}/{space.replace('/', '%')}")
        assert code == 0, out
    code, out = as_imd(
        box, f"cd {space} && touch armed && git status --porcelain >/dev/null && {{ readlink -e escape || echo gone; }}"
    )
    assert code == 0, out
    assert out.strip() == (f"{HOME}/.npm-global" if declared_clear else "gone"), out


@pytest.mark.parametrize("runtime", ["claude", "codex"])
def test_without_the_defence_the_same_tree_leaks_each_way(docker_client, box_image, box, marks, runtime):
    run, before, (after, repair), files, outside = job_and_steps(
        docker_client, box_image, box, marks, defended=False, runtime=runtime
    )
    assert "tool key" in found(json.dumps(run.results), marks), str(run)
    # Written through .imd, deleted through test/, a link left beside the bundles.
    assert outside.split("\n")[:3] == [f"there {HOME}/.npm-global/reads", f"gone {OTHER}/scratch", "there link"], (
        outside
    )
    assert "device key" in found(after.get(".imd-findings.json", ""), marks), after
    checks = json.dumps(after.get("localChecks", [])) + after.get("fmt", "")
    assert "device key" in found(checks, marks), after  # forge followed src/Leak.sol
    assert "leak-fsmonitor.txt" in files or "leak-filter.txt" in files, files  # git ran the nested repo's config
    code, out = as_imd(box, f"cat {WORK_ROOT}/*/*/leak-fsmonitor.txt")
    assert "sibling node" in found(out, marks), out  # and read the job's other node


# Where an installed tool's command lives for the test: in the CLIs' folder, which the jail
# holds read-only.
KEYED = f"{HOME}/.npm-global/imdt-keyed-tool.mjs"
LOOK_FOR_THE_KEY = (
    f"printenv {TOOL_KEY}; cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a imdt-tool-key; "
    "for f in /proc/self/fd/*; do timeout 1 cat $f 2>/dev/null; done | grep -a imdt-tool-key; echo looked"
)


@pytest.mark.parametrize("jailed", [True, False], ids=["jailed", "twin-unjailed"])
def test_a_tool_gets_its_key_and_the_job_does_not(docker_client, box_image, box, marks, jailed):
    code, out = as_imd(box, f"printf %s {shlex.quote(KEYED_JS)} > {KEYED} && chmod 700 {KEYED}")
    assert code == 0, out
    digest = hashlib.sha256(marks["tool key"].encode()).hexdigest()
    steps = [[jobs.tool("mcp__keyed__key")], [jobs.bash(LOOK_FOR_THE_KEY)]]
    try:
        run = jobs.play(
            docker_client,
            box_image,
            box,
            steps,
            tools={"keyed": {"command": KEYED, "env": [TOOL_KEY], "methods": ["key"]}},
            jailed=jailed,
            env={TOOL_KEY: marks["tool key"]},  # the worker's environment holds tools.env's keys
        )
    finally:
        as_imd(box, f"rm -f {KEYED}")
    assert run.code == 0, str(run)
    assert run.result(0)["text"] == f"key sha256:{digest}", str(run)  # the tool has its key
    assert "looked" in run.result(1)["text"], str(run)
    # The breaking twin: without the jail, the job's own command reads it in its environment.
    assert (marks["tool key"] in run.result(1)["text"]) is not jailed, str(run)


CAMPAIGN_PORT = 19418  # git's daemon, on the box's loopback


@pytest.fixture(scope="module")
def origin(box):
    return hands.campaign_origin(box, CAMPAIGN_PORT)


@pytest.mark.parametrize("defended", [True, False], ids=["through-the-hands", "without-them"])
def test_a_fuzz_campaign_clones_builds_and_fuzzes_in_the_workers_tmpdir(box, origin, defended):
    # Its clone runs from os.tmpdir() into a folder there: the hands hold that folder for it.
    url, base = origin
    code, out = hands.campaign(box, url, base, defended=defended)
    assert code == 0, out
    assert "[PASS] testFuzz_prop_sum(uint8) (runs: 64" in out, out
    folder = out.split("folder ", 1)[1].split()[0]
    assert as_imd(box, f"ls -d {folder}")[0] != 0, out  # removed, as the worker removes it


@pytest.mark.parametrize("defended", [True, False], ids=["through-the-hands", "twin-without-them"])
@pytest.mark.parametrize("where", ["another job's workspace", "the home"])
def test_a_campaign_cannot_clone_another_jobs_workspace_or_the_home(box, marks, defended, where):
    # The campaign's repoUrl is any URL: one that names a repository elsewhere in the box's home.
    other = f"{WORK_ROOT}/{uuid.uuid4()}/{uuid.uuid4()}" if where != "the home" else f"{HOME}/imdt-{uuid.uuid4()}"
    script = f"""set -e
mkdir -p {other} && cd {other} && /usr/bin/git init -q -b main . && echo {marks["sibling node"]} > notes
/usr/bin/git add -A && /usr/bin/git -c user.name=t -c user.email=t@t commit -qm other && /usr/bin/git rev-parse HEAD"""
    code, out = as_imd(box, script)
    assert code == 0, out
    try:
        code, out = hands.campaign(box, f"file://{other}", out.strip(), defended=defended)
    finally:
        as_imd(box, f"rm -rf {other}")
    if defended:
        assert code == 1 and "does not appear to be a git repository" in out, out
    else:
        # The clone and checkout read it (forge then finds no contract).
        assert code not in (1, 2), out


# A campaign's tree is the poster's, as a code task's is: a committed link for forge to read
# through, and one where the worker writes its test (test/), for the worker's own write to
# follow. (A tree that comes by a clone brings no git config: a nested repository's fsmonitor,
# hooks and filters are a code task's, where the job's agent plants them.)
READS_TREE = f"ln -s {DEVICE_KEY} src/Leak.sol"
WRITES_TREE = f"rm -rf test && ln -s {OTHER} test"


@pytest.fixture(scope="module")
def hostile_origins(box):
    return {
        "reads": hands.campaign_origin(box, CAMPAIGN_PORT + 1, READS_TREE),
        "writes": hands.campaign_origin(box, CAMPAIGN_PORT + 2, WRITES_TREE),
    }


@pytest.mark.parametrize("defended", [True, False], ids=["through-the-hands", "twin-without-them"])
def test_a_hostile_campaign_tree_reads_nothing_of_the_home(box, marks, hostile_origins, defended):
    code, out = hands.campaign(box, *hostile_origins["reads"], defended=defended)
    leaked = found(out, marks)
    if defended:
        assert code == 4 and leaked == set(), out  # forge found no contract it could read there
    else:
        assert leaked == {"device key"}, out  # the build's error quotes it


@pytest.mark.parametrize("defended", [True, False], ids=["through-the-hands", "twin-without-them"])
def test_a_hostile_campaign_tree_writes_nothing_into_another_job(box, marks, hostile_origins, defended):
    code, out = hands.campaign(box, *hostile_origins["writes"], defended=defended)
    _, there = as_imd(box, f"ls {OTHER}; rm -f {OTHER}/ImdFuzzCampaign.t.sol")
    if defended:
        # The link checked out as a plain file: the worker's write finds no folder there.
        assert code == 5 and "ImdFuzzCampaign.t.sol" not in there, (out, there)
    else:
        assert "ImdFuzzCampaign.t.sol" in there, (out, there)


@pytest.mark.parametrize("defended", [True, False], ids=["through-the-hands", "twin-without-them"])
def test_a_campaigns_project_path_out_of_its_folder_starts_no_forge(box, origin, defended):
    # projectPath is joined to the campaign's folder unchecked: '..' leads forge to the home.
    url, base = origin
    code, out = hands.campaign(box, url, base, defended=defended, project="../../home/imd")
    if defended:
        assert code == 3 and f"imd-box: forge was not started: {HOME} is no folder the box keeps" in out, out
    else:
        assert code != 3, out  # forge's preflight ran in the home


@pytest.mark.parametrize("tool", ["git", "forge"])
def test_the_hands_say_so_where_they_would_lose_the_work(box, tool):
    # In box shell (the worker's PATH) a call outside a job's folder would work in a throwaway
    # home: it is not made, in one line; the version probes the worker makes anywhere still run.
    args = "init proj" if tool == "git" else "build"
    code, out = as_imd(box, f"cd {HOME} && {tool} {args}; echo exit=$?; ls -d {HOME}/proj; {tool} --version")
    assert f"imd-box: {tool} was not started: {HOME} is no folder the box keeps for the worker's {tool}" in out, out
    assert "in box shell, run /usr/" in out and "exit=70" in out, out
    assert "Initialized" not in out and "No such file or directory" in out, out  # nothing claimed that is not there
    assert ("git version" if tool == "git" else "forge Version") in out, out
