"""The worker's own hands on every kind of job, as the released worker does them in the box
(tests/harness/worker_steps.mjs: the facts; CAMPAIGN_SH: a fuzz campaign's), and what they
work on: a task's origin, and a box with a real compiler for its contract. Used by
tests/world/test_worker_hands.py, test_worker_kinds.py, test_v4_hook_job.py and the bench."""

from __future__ import annotations

import contextlib
import json
import shlex
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional

from imdbox.layout import HANDS_DIR
from tests.harness import boxes
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


def install_solc(box, version: str = SOLC) -> None:
    """solc-js of `version` where forge keeps the compilers it downloads (~/.svm/<v>/solc-<v>);
    npm must be in the box's reach."""
    svm = f"{HOME}/.svm/{version}"
    code, out = as_imd(
        box,
        f"mkdir -p {svm} && cd {svm} && npm install -s --no-audit --no-fund --no-update-notifier solc@{version} 2>&1"
        f" && printf %s {shlex.quote(SOLC_JS)} > solc-{version} && chmod 700 solc-{version}",
        timeout=180,
    )
    assert code == 0, out


@contextlib.contextmanager
def contract_box(
    client, image: str, volume: str, install: Callable = install_solc, network: str = "bridge"
) -> Iterator:
    """A walled box on `network` (Docker's bridge unless told: npm in reach for what `install`
    fetches, solc-js unless told), removed after, with the compilers it installed in the volume."""
    container = boxes.start_walled(client, image, None, volume=volume, alone_on=network)
    try:
        install(container)
        yield container
    finally:
        as_imd(container, f"rm -rf {HOME}/.svm")
        container.remove(force=True)


def files_script(files: dict[str, str]) -> str:
    """Shell that writes each file (path -> text) in the current folder, its folder made first."""
    return "\n".join(
        f"mkdir -p $(dirname {shlex.quote(p)}) && printf %s {shlex.quote(t)} > {shlex.quote(p)}"
        for p, t in files.items()
    )


COUNTER = {
    "src/Counter.sol": COUNTER_SOL,
    "test/Counter.t.sol": COUNTER_TEST_SOL,
    "foundry.toml": '[profile.default]\nsrc = "src"\n',
}


def origin_task(box, files: dict[str, str], *, also: str = ":") -> tuple[str, dict]:
    """A task's origin of `files` (and what the shell `also` adds), a bundle in its job's folder
    (where the worker's jail can clone it from, as it fetches the bundles the network sends):
    the node's workspace, and the task (origin, base commit, one read)."""
    job = f"{WORK_ROOT}/{uuid.uuid4()}"
    space = f"{job}/{uuid.uuid4()}"
    origin = f"{job}/origin.bundle"
    script = f"""set -e
mkdir -p {space} && g=$(mktemp -d) && cd $g && /usr/bin/git init -q -b main .
{files_script(files)}
{also}
/usr/bin/git add -A && /usr/bin/git -c user.name=t -c user.email=t@t commit -qm base
/usr/bin/git bundle create -q {origin} main && /usr/bin/git rev-parse HEAD && rm -rf $g"""
    code, out = as_imd(box, script)
    assert code == 0, out
    return space, {"repo": origin, "base": out.strip().splitlines()[-1], "reads": {".imd/reads/brief.md": "the brief"}}


def code_task(box, *, committed_link: bool) -> tuple[str, dict]:
    """A contract and its test's origin, optionally with a committed link `.imd` to the
    worker's code folder: the node's workspace, and the task."""
    return origin_task(box, COUNTER, also=f"ln -s {HOME}/.npm-global .imd" if committed_link else ":")


def net_bundle(box, spec: dict, files: dict[str, str]) -> str:
    """A bundle as the network sends a node's accepted work: one commit on the task's base that
    writes `files`, as `<base>..main`, in a folder of the network's own. Its path."""
    out = f"/tmp/imdt-net-{uuid.uuid4().hex}.bundle"
    script = f"""set -e
g=$(mktemp -d) && /usr/bin/git clone -q {spec["repo"]} $g && cd $g && /usr/bin/git checkout -q -B main {spec["base"]}
{files_script(files)}
/usr/bin/git add -A && /usr/bin/git -c user.name=n -c user.email=n@n commit -qm accepted
/usr/bin/git bundle create -q {out} {spec["base"]}..main && cd / && rm -rf $g"""
    code, got = as_imd(box, script)
    assert code == 0, got
    return out


def serve_script(base: str, port: int) -> str:
    """Shell that serves the bare repositories in `base` with git's own daemon on the box's
    loopback (the test world has no forge host) and waits until it answers; the daemon ends
    with the box."""
    return f"""PATH=/usr/bin:/bin setsid nohup /usr/bin/git daemon --reuseaddr --export-all --base-path={base} \\
  --listen=127.0.0.1 --port={port} >{base}/daemon.log 2>&1 < /dev/null &
for _ in $(seq 1 50); do /usr/bin/git ls-remote git://127.0.0.1:{port}/$(ls {base} | grep '[.]git$' | head -1) \\
  >/dev/null 2>&1 && break; sleep 0.1; done"""


def worker_steps(box, phase: str, space: str, spec: dict, *, defended: bool, env: Optional[dict] = None) -> dict:
    """The stand-in worker's steps ("before" or "after" the agent, or a research task's), as the
    worker runs them in the box: in its view, its PATH (the box's hands first; `defended=False`,
    outside the view and without them), its environment (and `env`). What it would send."""
    path = "" if defended else f"PATH=${{PATH#{HANDS_DIR}:}} "
    path += "".join(f"{k}={shlex.quote(v)} " for k, v in (env or {}).items())
    js = f"/tmp/imdt-steps-{uuid.uuid4().hex}.mjs"
    script = (
        f"printf %s {shlex.quote(STEPS_JS)} > {js} && mkdir -p {WORK_ROOT} && cd {WORK_ROOT} && "
        f"{path}node {js} {phase} {space} {shlex.quote(json.dumps(spec))}; code=$?; rm -f {js}; exit $code"
    )
    code, out = as_imd(box, boxes.in_view(script) if defended else script, timeout=240)
    assert code == 0 and "\nsent " in f"\n{out}", out
    return json.loads(out.split("sent ", 1)[1].splitlines()[0])


# A fuzz campaign as the released worker runs it (dist/cli.js fd511610, executeCampaign): a
# folder of its own in os.tmpdir(), a clone into it from os.tmpdir() itself (git with the
# worker's environment, no global or system config), the base checked out, forge's preflight and
# build, the campaign's test written beside the harness in test/, forge's fuzz run (forge with
# the scrubbed environment, offline), and the folder removed. $1: the repository's URL, $2 the
# base commit, $3 the task's projectPath, joined to the folder unchecked (forge runs there, and
# the test is written under it, its test/ not made first). Prints forge's output and the
# folder's path; exits as the first step that failed.
CAMPAIGN_SH = """set -u
d=$(mktemp -d "${TMPDIR:-/tmp}/imd-campaign-XXXXXX") && echo "folder $d" || exit 9
trap 'rm -rf "$d"' EXIT
cd "${TMPDIR:-/tmp}" && GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \\
  git clone --no-checkout --filter=blob:none "$1" "$d" 2>&1 || exit 1
cd "$d" && GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git checkout --detach "$2" 2>&1 || exit 2
cd "$d/${3:-.}" || exit 2
forge_() { env -i PATH="$PATH" HOME="$HOME" TMPDIR="${TMPDIR:-/tmp}" CI=1 NO_COLOR=1 FOUNDRY_OFFLINE=true forge "$@"; }
forge_ config --json >/dev/null || exit 3
forge_ build --offline 2>&1 || exit 4
printf '%s\\n' '// SPDX-License-Identifier: MIT' 'pragma solidity ^0.8.0;' 'import {H} from "./H.sol";' \\
  'contract ImdFuzzCampaign { H harness = new H(); function testFuzz_prop_sum(uint8 a0) public { harness.prop_sum(a0); } }' \\
  > test/ImdFuzzCampaign.t.sol || exit 5
forge_ test --offline --match-contract ImdFuzzCampaign --fuzz-runs 64 --fuzz-seed 0x1 2>&1 || exit 6
"""
# The harness a campaign fuzzes: a prop_ function with an input, in test/ beside the test the worker writes.
HARNESS_SOL = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract H {
    function prop_sum(uint8 a) public pure {
        require(uint256(a) + 1 > a, "sum");
    }
}
"""


def campaign_origin(box, port: int, tree: str = ":") -> tuple[str, str]:
    """A campaign's repository, served by git's own daemon on the box's loopback (the test world
    has no forge host): its URL and base commit. The daemon ends with the box. `tree`: shell run
    in the tree before its commit (what a hostile poster adds)."""
    base = f"/tmp/imdt-origin-{uuid.uuid4().hex[:8]}"
    files = {"src/Counter.sol": COUNTER_SOL, "test/H.sol": HARNESS_SOL, "foundry.toml": COUNTER["foundry.toml"]}
    script = f"""set -e
g=$(mktemp -d) && cd $g && /usr/bin/git init -q -b main .
{files_script(files)}
{tree}
/usr/bin/git add -A && /usr/bin/git -c user.name=t -c user.email=t@t commit -qm base
/usr/bin/git clone -q --bare $g {base}/repo.git && /usr/bin/git rev-parse HEAD && cd / && rm -rf $g
{serve_script(base, port)}
/usr/bin/git ls-remote git://127.0.0.1:{port}/repo.git >/dev/null || {{ cat {base}/daemon.log; exit 1; }}"""
    code, out = as_imd(box, script)
    assert code == 0, out
    return f"git://127.0.0.1:{port}/repo.git", out.strip().splitlines()[0]


def campaign(box, url: str, base: str, *, defended: bool, project: str = ".") -> tuple[int, str]:
    """The worker's campaign steps in the box, in its view, through its hands (`defended=False`,
    outside the view and without them)."""
    path = "" if defended else f"PATH=${{PATH#{HANDS_DIR}:}} "
    args = " ".join(map(shlex.quote, (url, base, project)))
    script = f"{path}bash -c {shlex.quote(CAMPAIGN_SH)} campaign {args}"
    return as_imd(box, boxes.in_view(script) if defended else script, timeout=240)
