"""Every kind of job the released worker takes, its own steps played as it runs them in the box
(tests/harness/worker_steps.mjs: the facts, dist/cli.js fd511610): a code task in an empty
repository, on accepted dependencies and prior work, with submodules, a review, a task with
inputs and outputs, and a research task. Each runs with the real git and forge (a real
compiler, solc-js) through the box's hands, and the same steps without them are the control:
both must get the job done, and send the same.
"""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from tests.harness import agents as agents_mod
from tests.harness import boxes, hands, jobs
from tests.harness.boxes import as_imd
from tests.harness.jobs import WORK_ROOT

pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group(agents_mod.GROUPS[2])]

DEFENDED = pytest.mark.parametrize("defended", [True, False], ids=["through-the-hands", "without-them"])
SUB_PORT = 19419  # git's daemon, on the box's loopback: the submodule's forge
# What the stand-in agent changes (it runs as imd in the workspace, no git of its own).
CHANGE = "echo '// imdt-changed' >> src/Counter.sol"


@pytest.fixture(scope="module")
def box(docker_client, box_image, agents):
    """A walled box on Docker's bridge, solc-js where forge looks."""
    with hands.contract_box(docker_client, box_image, agents) as container:
        yield container


def agent(box, space: str, script: str) -> None:
    code, out = as_imd(box, f"cd {space} && {script}")
    assert code == 0, out


def task(box, space: str, spec: dict, agent_sh: str, *, defended: bool, env=None) -> tuple[dict, dict]:
    """The worker's steps before the agent, the agent's (`agent_sh`), the worker's after: what
    it sent each time. The steps before must have prepared the workspace."""
    before = hands.worker_steps(box, "before", space, spec, defended=defended, env=env)
    assert not {"failed", "readsFailed", "inputsFailed"} & set(before), before
    agent(box, space, agent_sh)
    after = hands.worker_steps(box, "after", space, {**spec, "start": before["start"]}, defended=defended, env=env)
    return before, after


def built(after: dict) -> bool:
    return [(c["name"], c["passed"]) for c in after["localChecks"]] == [("build", True), ("test", True)]


@pytest.fixture(scope="module")
def empty_base(box) -> str:
    """The base commit the network assigns a task with no repository: the worker's own empty
    commit, the same on every machine, learnt here from the steps without the hands."""
    sent = hands.worker_steps(box, "before", jobs.workspace(), {"repo": "empty", "base": ""}, defended=False)
    assert re.fullmatch(r"[0-9a-f]{40}", sent["empty"]), sent
    return sent["empty"]


@DEFENDED
def test_an_empty_repository_starts_from_the_networks_empty_commit(box, empty_base, defended):
    space = jobs.workspace()
    spec = {"repo": "empty", "base": empty_base, "reads": {".imd/reads/brief.md": "the brief"}}
    before, after = task(box, space, spec, hands.files_script(hands.COUNTER), defended=defended)
    assert before["empty"] == empty_base == before["start"], before
    assert built(after), after
    assert sorted(after["changed"]) == sorted(hands.COUNTER) and after["bundleCommits"] == 1, after
    assert after["bundleBytes"] > 0 and "contract Counter" in after["bundled"], after


A_SOL = "// SPDX-License-Identifier: MIT\npragma solidity ^0.8.20;\n\ncontract A {}\n"
B_SOL = "// SPDX-License-Identifier: MIT\npragma solidity ^0.8.20;\n\ncontract B {}\n"


@DEFENDED
def test_accepted_dependencies_and_prior_work_are_fetched_beside_the_workspace_and_merged(box, defended):
    space, spec = hands.code_task(box, committed_link=False)
    job, node = space.rsplit("/", 1)
    deps = [hands.net_bundle(box, spec, {"src/A.sol": A_SOL}), hands.net_bundle(box, spec, {"src/B.sol": B_SOL})]
    prior = hands.net_bundle(box, spec, {"docs/prior.md": "imdt-prior\n"})
    spec = {**spec, "deps": deps, "prior": prior}
    before, after = task(box, space, spec, CHANGE, defended=defended)
    assert before["start"] != spec["base"], before
    assert built(after), after
    # The submission is the agent's change on what was applied; the bundle from the base
    # carries both dependencies, their merge, the prior work, its merge and the change.
    assert after["changed"] == ["src/Counter.sol"] and "imdt-changed" in after["bundled"], after
    assert {"src/A.sol", "src/B.sol", "docs/prior.md"} <= set(after["bundledFiles"]), after
    assert after["bundleCommits"] == 6, after
    # The bundles the worker wrote beside the workspace are gone again.
    code, out = as_imd(box, f"ls -A {job}")
    assert sorted(out.split()) == sorted(["origin.bundle", node]), out


LIB_SOL = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

library Lib {
    function next(uint256 n) internal pure returns (uint256) {
        return n + 1;
    }
}
"""
# The contract takes its library from the submodule: the build proves it was checked out.
COUNTER_ON_LIB = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Lib} from "../lib/sub/src/Lib.sol";

contract Counter {
    uint256 public number;

    function increment() public {
        number = Lib.next(number);
    }
}
"""


@pytest.fixture(scope="module")
def sub_url(box) -> str:
    """The submodule's repository, served by git's daemon on the box's loopback."""
    base = "/tmp/imdt-sub"
    script = f"""set -e
g=$(mktemp -d) && cd $g && /usr/bin/git init -q -b main .
{hands.files_script({"src/Lib.sol": LIB_SOL})}
/usr/bin/git add -A && /usr/bin/git -c user.name=t -c user.email=t@t commit -qm lib
/usr/bin/git clone -q --bare $g {base}/sub.git && cd / && rm -rf $g
{hands.serve_script(base, SUB_PORT)}
/usr/bin/git ls-remote git://127.0.0.1:{SUB_PORT}/sub.git >/dev/null || {{ cat {base}/daemon.log; exit 1; }}"""
    code, out = as_imd(box, script)
    assert code == 0, out
    return f"git://127.0.0.1:{SUB_PORT}/sub.git"


@DEFENDED
def test_submodules_are_fetched_with_the_protocols_the_worker_allows(box, sub_url, defended):
    # The test world has no https forge: the worker is told to allow git's own protocol
    # (IDENTITYMD_SUBMODULE_PROTOCOLS), as an operator would for theirs.
    files = {**hands.COUNTER, "src/Counter.sol": COUNTER_ON_LIB}
    add = f"/usr/bin/git -c protocol.allow=never -c protocol.git.allow=always submodule add -q {sub_url} lib/sub"
    space, spec = hands.origin_task(box, files, also=add)
    env = {"IDENTITYMD_SUBMODULE_PROTOCOLS": "git"}
    before, after = task(box, space, spec, CHANGE, defended=defended, env=env)
    code, out = as_imd(box, f"cat {space}/lib/sub/src/Lib.sol")
    assert code == 0 and "library Lib" in out, (out, before)
    assert built(after), after
    assert after["changed"] == ["src/Counter.sol"], after


@DEFENDED
def test_a_submodule_of_a_protocol_the_worker_does_not_allow_fails_the_task(box, sub_url, defended):
    # The worker's own policy (https alone, unless told), not the hands, refuses it.
    add = f"/usr/bin/git -c protocol.allow=never -c protocol.git.allow=always submodule add -q {sub_url} lib/sub"
    space, spec = hands.origin_task(box, {**hands.COUNTER, "src/Counter.sol": COUNTER_ON_LIB}, also=add)
    before = hands.worker_steps(box, "before", space, spec, defended=defended)
    assert before["failed"] == "clone_failed: submodules did not fetch", before
    assert "transport 'git' not allowed" in json.dumps(before["log"]), before


FINDINGS = {"findings": [{"severity": "low", "title": "imdt-finding", "description": "d", "reproduction": "r"}]}


@DEFENDED
def test_a_review_sends_its_findings_and_leaves_the_tree_as_it_found_it(box, defended):
    space, spec = hands.code_task(box, committed_link=False)
    spec = {**spec, "role": "review"}
    review = f"{CHANGE} && printf %s '{json.dumps(FINDINGS)}' > .imd-findings.json && mkdir -p test/scratch && echo x > test/scratch/t"
    _, after = task(box, space, spec, review, defended=defended)
    assert json.loads(after[".imd-findings.json"]) == FINDINGS, after
    assert "bundleCreate" not in after and "localChecks" not in after, after  # a review sends no code
    # `checkout -- .` took the change back; the worker's own files are gone.
    code, out = as_imd(box, f"cd {space} && /usr/bin/git status --porcelain --untracked-files=all && ls -A")
    assert code == 0 and "imdt-changed" not in out, out
    assert sorted(out.split()) == sorted([".git", "foundry.toml", "src", "test", ".imd"]), out


@DEFENDED
def test_inputs_are_read_from_the_reads_and_outputs_go_apart_from_the_source(box, defended):
    space, spec = hands.code_task(box, committed_link=False)
    report = {"name": "report", "path": "artifacts/report.txt"}
    spec = {**spec, "inputs": {"spec.txt": "imdt-input\n"}, "outputs": [report]}
    work = f"mkdir -p artifacts && {{ cat .imd/reads/artifacts/spec.txt; echo reported; }} > artifacts/report.txt && {CHANGE}"
    before, after = task(box, space, spec, work, defended=defended)
    text = "imdt-input\nreported\n"
    [sent] = after["artifacts"]
    assert sent == {**report, "bytes": len(text), "hash": hashlib.sha256(text.encode()).hexdigest(), "text": text}, (
        after
    )
    assert built(after) and after["changed"] == ["src/Counter.sol"], after
    assert "artifacts/report.txt" not in after["bundledFiles"], after  # uploaded apart, not in the bundle
    # The output is gone once uploaded; the input is back for the repair pass, the worker's alone.
    code, out = as_imd(box, f"cd {space} && ls artifacts/report.txt 2>&1; stat -c %a .imd/reads/artifacts/spec.txt")
    assert "No such file" in out and out.split()[-1] == "600", out


@pytest.fixture(scope="module")
def world_box(docker_client, box_image, topology, agents):
    """A walled box in the test world, where the internet is a listener of its own."""
    container = boxes.start_walled(docker_client, box_image, topology, volume=agents)
    try:
        code, out = as_imd(container, f"mkdir -p {WORK_ROOT}")
        assert code == 0, out
        yield container
    finally:
        container.remove(force=True)


@DEFENDED
def test_a_research_answer_keeps_the_citations_the_worker_fetched_itself(
    docker_client, box_image, world_box, topology, defended
):
    # The agent answers in the work root; the worker fetches each cited page itself, keeps
    # the citations the page bears out, and names the rest. An ftp URL is not fetched.
    url = topology.url("internet")
    cited = [
        {"url": url, "quote": "IMD-test-listener:internet"},
        {"url": f"{url}elsewhere", "quote": "imdt-not-on-the-page"},
        {"url": "ftp://198.51.100.10/", "quote": "imdt-ftp"},
    ]
    final = f"The page names itself.\n\n```json\n{json.dumps({'citations': cited})}\n```"
    steps = [[jobs.tool("Glob", pattern="**/*")], [{"text": final}]]
    run = jobs.play(docker_client, box_image, world_box, steps, profile="research", cwd=WORK_ROOT, jailed=defended)
    assert run.code == 0 and run.final["subtype"] == "success", str(run)
    sent = hands.worker_steps(world_box, "research", WORK_ROOT, {"final": run.final["result"]}, defended=defended)
    assert sent["answer"] == "The page names itself.", sent
    [kept] = sent["citations"]
    assert kept["url"] == url and kept["quote"] == cited[0]["quote"], sent
    assert re.fullmatch(r"[0-9a-f]{64}", kept["contentHash"]), sent
    assert sent["dropped"] == [{"url": f"{url}elsewhere", "why": "does not contain the quoted text"}], sent
