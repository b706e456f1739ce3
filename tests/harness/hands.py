"""The worker's own hands on a code task, as the released worker does them in the box
(tests/harness/worker_steps.mjs: the facts), and what they work on: a code task's origin
and a real compiler for its contract. Used by tests/test_worker_hands.py and the bench."""

from __future__ import annotations

import json
import shlex
import uuid
from pathlib import Path

from imdbox.layout import HANDS_DIR
from tests.harness.boxes import as_imd
from tests.harness.jobs import HOME, WORK_ROOT

HERE = Path(__file__).parent
STEPS_JS = (HERE / "worker_steps.mjs").read_text()
SOLC_JS = (HERE / "solc.js").read_text()
SOLC = "0.8.37"  # solc-js from npm, behind solc's command line (solc.js)
COUNTER_SOL = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Counter {
    uint256 public number;

    function increment() public {
        number++;
    }
}
"""
# A test forge runs without forge-std (a public function named test...), as a contract job has.
COUNTER_TEST_SOL = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Counter} from "../src/Counter.sol";

contract CounterTest {
    function test_increment() public {
        Counter c = new Counter();
        c.increment();
        require(c.number() == 1, "one");
    }
}
"""


def install_solc(box) -> None:
    """solc-js where forge keeps the compilers it downloads (~/.svm/<v>/solc-<v>); npm must
    be in the box's reach."""
    svm = f"{HOME}/.svm/{SOLC}"
    code, out = as_imd(
        box,
        f"mkdir -p {svm} && cd {svm} && npm install -s --no-audit --no-fund --no-update-notifier solc@{SOLC} 2>&1"
        f" && printf %s {shlex.quote(SOLC_JS)} > solc-{SOLC} && chmod 700 solc-{SOLC}",
        timeout=180,
    )
    assert code == 0, out


def code_task(box, *, committed_link: bool) -> tuple[str, dict]:
    """A contract and its test's origin, a bundle in its job's folder (where the worker's jail can clone
    it from, as it fetches the bundles the network sends), optionally with a committed link
    `.imd` to the worker's code folder: the node's workspace, and the task (origin, base
    commit, one read)."""
    job = f"{WORK_ROOT}/{uuid.uuid4()}"
    space = f"{job}/{uuid.uuid4()}"
    origin = f"{job}/origin.bundle"
    link = f"ln -s {HOME}/.npm-global .imd" if committed_link else ":"
    script = f"""set -e
mkdir -p {space} && g=$(mktemp -d) && cd $g && /usr/bin/git init -q -b main .
mkdir src test && printf %s {shlex.quote(COUNTER_SOL)} > src/Counter.sol
printf %s {shlex.quote(COUNTER_TEST_SOL)} > test/Counter.t.sol
printf '[profile.default]\\nsrc = "src"\\n' > foundry.toml
{link}
/usr/bin/git add -A && /usr/bin/git -c user.name=t -c user.email=t@t commit -qm base
/usr/bin/git bundle create -q {origin} main && /usr/bin/git rev-parse HEAD && rm -rf $g"""
    code, out = as_imd(box, script)
    assert code == 0, out
    return space, {"repo": origin, "base": out.strip().splitlines()[-1], "reads": {".imd/reads/brief.md": "the brief"}}


def worker_steps(box, phase: str, space: str, spec: dict, *, defended: bool) -> dict:
    """The stand-in worker's steps ("before" or "after" the agent), as the worker runs them in
    the box: its PATH (the box's hands first; `defended=False`, without them), its environment.
    What it would send."""
    path = "" if defended else f"PATH=${{PATH#{HANDS_DIR}:}} "
    js = f"/tmp/imdt-steps-{uuid.uuid4().hex}.mjs"
    script = (
        f"printf %s {shlex.quote(STEPS_JS)} > {js} && cd {WORK_ROOT} && "
        f"{path}node {js} {phase} {space} {shlex.quote(json.dumps(spec))}; code=$?; rm -f {js}; exit $code"
    )
    code, out = as_imd(box, script, timeout=240)
    assert code == 0 and "\nsent " in f"\n{out}", out
    return json.loads(out.split("sent ", 1)[1].splitlines()[0])
