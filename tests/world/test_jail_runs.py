"""A job's jail, run as the worker runs it: a run whose launcher is killed before it clears the
node (the worker's SIGKILL), whose leftovers go at the worker's next git call, as the launcher's
record of the node says (worker/jail); a network that cannot be made; and the worker's
~/.claude.json, which the jail binds only where it is a file of its own. No agent CLI is needed:
the jail runs one of the image's programs."""

from __future__ import annotations

import contextlib
import shlex

import pytest

from imdbox import layout
from tests.harness import boxes, hands
from tests.harness.boxes import as_imd
from tests.harness.jobs import HOME
from tests.harness.twins import jail_with, patched_image, script_with

pytestmark = pytest.mark.usefixtures("box_image")


@pytest.fixture(scope="module")
def box(docker_client, box_image, topology):
    with boxes.volume(docker_client) as volume:
        container = boxes.start_walled(docker_client, box_image, topology, volume=volume)
        try:
            yield container
        finally:
            container.remove(force=True)


# The twin takes the mark away, and the same leftovers stay. The link is put in place by a
# rename, so that it is there at every instant (`ln -sfn` unlinks, then links).
RELINK = f"ln -sfn {HOME}/.npm-global .imd.new && mv -Tf .imd.new .imd"
ORPHAN = f"setsid sh -c 'echo $$ > orphan.pid; while :; do {RELINK}; sleep 0.05; done' >/dev/null 2>&1 & sleep 60"


# The search for what a run left passes over the processes in the box's own mount namespace: the
# twin passes over every process, as a namespace test that took the jail's for the box's would.
EVERY_PROCESS_PASSED_OVER = ('[[ "${ns[device]}:${ns[inode]}" != "$box" ]] || continue\n', "continue\n")


def killed_run_then_git(box, forget: str) -> str:
    """A CLI run whose launcher is killed while its orphan keeps a link in place, then the worker's
    git on the node (`forget` run before it): whether the orphan and the link are still there."""
    space, _ = hands.code_task(box, committed_link=False)
    script = (
        f"cd {space} && {{ {layout.JAIL} claude --program /bin/sh -c {shlex.quote(ORPHAN)} & }} && sleep 1 && "
        f"kill -KILL $! && sleep 0.3 && {forget}git status --porcelain >/dev/null; sleep 0.2; "
        f"kill -0 $(cat orphan.pid) 2>/dev/null && echo orphan || echo no-orphan; [ -L .imd ] && echo link || echo no-link"
    )
    try:
        code, out = as_imd(box, script)
    finally:
        as_imd(box, f"kill -KILL $(cat {space}/orphan.pid)")
    assert code == 0, out
    return out


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "twin-mark-gone"])
def test_a_run_whose_launcher_was_killed_is_cleared_before_the_workers_git(box, marked):
    out = killed_run_then_git(box, "" if marked else f"rm -f {layout.RUNS}/*; ")
    assert out.split()[-2:] == (["no-orphan", "no-link"] if marked else ["orphan", "link"]), out


def test_twin_a_search_that_passes_over_every_process_leaves_the_orphan(docker_client, box_image, topology):
    patch = jail_with(EVERY_PROCESS_PASSED_OVER)
    with patched_image(docker_client, box_image, patch) as image, boxes.volume(docker_client) as volume:
        twin = boxes.start_walled(docker_client, image, topology, volume=volume)
        try:
            out = killed_run_then_git(twin, "")
        finally:
            twin.remove(force=True)
    assert out.split()[-2:] == ["orphan", "link"], out


# The network room's loop over /etc/hosts once overwrote the name the jail's one line says
# ("imd-box: ip6-allnodes was not started"): the twin puts that loop back.
OLD_LOOP = ('      for alias in "${names[@]}"; do\n        [[ "$taken" == *" $alias "* || ("$addr" == *:* && "$alias" == localhost) ]] || line+=" $alias" kept=1\n',
            '      for name in "${names[@]}"; do\n        [[ "$taken" == *" $name "* || ("$addr" == *:* && "$name" == localhost) ]] || line+=" $name" kept=1\n')  # fmt: skip
NO_PASTA = {"/usr/bin/pasta": (b"#!/bin/sh\necho 'imdt: no network today' >&2\nexit 1\n", 0o755)}


@pytest.mark.parametrize("loop", ["as-it-is", "twin-the-old-loop"])
def test_a_network_that_cannot_be_made_is_said_in_one_line(docker_client, box_image, topology, loop):
    patch = dict(NO_PASTA)
    if loop != "as-it-is":
        patch.update(script_with("worker/jail.d/network", f"{layout.JAIL_ROOMS}/network", OLD_LOOP))
    with patched_image(docker_client, box_image, patch) as image, boxes.volume(docker_client) as volume:
        box = boxes.start_walled(docker_client, image, topology, volume=volume)
        try:
            space = f"{HOME}/.identitymd/work/job-1/node-1"
            code, out = as_imd(box, f"mkdir -p {space} && cd {space} && {layout.JAIL} claude --program /bin/true")
        finally:
            box.remove(force=True)
    said = "imd-box: claude was not started: its own network could not be made (imdt: no network today)"
    assert (code, out.strip() == said) == (70, loop == "as-it-is"), out


# The worker's ~/.claude.json, which a Claude job's jail binds read-write for Claude Code's state:
# as the worker (or a job it was steered by) may leave it, a link to a file of the home a job must
# not read, or a second name of one. The jail binds it only where it is a regular file with one
# name, and the file it opened is the one at the path: each twin takes a check away, and the job
# reads the file behind it.
SECRET = f"{HOME}/.identitymd/imdt-secret"
STATE = f"{HOME}/.claude.json"
AS_LEFT = {
    "a-file-of-its-own": f"echo imdt-state > {STATE}",
    "a-link": f"ln -s {SECRET} {STATE}",
    "a-second-name": f"ln {SECRET} {STATE}",
}
NO_LINK_TEST = ('  [ -f "$f" ] && [ ! -L "$f" ] || return 0\n', '  [ -f "$f" ] || return 0\n')
ONE_NAME = (
    '  [[ "${path[type]:-}:${path[nlink]:-}" == "-:1" && "${path[device]}:${path[inode]}" == "${opened[device]}:${opened[inode]}" ]] || {\n',
    "  true || {\n",
)
STATE_CASES = {  # what the worker left, the checks taken away, whether the job reads the secret
    "a-file-of-its-own": ("a-file-of-its-own", (), False),
    "a-link": ("a-link", (), False),
    "a-link-past-the-link-test": ("a-link", (NO_LINK_TEST,), False),
    "twin-a-link-unchecked": ("a-link", (NO_LINK_TEST, ONE_NAME), True),
    "a-second-name": ("a-second-name", (), False),
    "twin-a-second-name-unchecked": ("a-second-name", (ONE_NAME,), True),
}


@pytest.mark.parametrize("case", list(STATE_CASES))
def test_the_workers_claude_json_is_bound_only_as_a_file_of_its_own(docker_client, box_image, topology, box, case):
    left, taken, leaks = STATE_CASES[case]
    with contextlib.ExitStack() as stack:
        if taken:
            image = stack.enter_context(patched_image(docker_client, box_image, jail_with(*taken)))
            volume = stack.enter_context(boxes.volume(docker_client))
            box = boxes.start_walled(docker_client, image, topology, volume=volume)
            stack.callback(box.remove, force=True)
        space = f"{HOME}/.identitymd/work/job-1/node-1"
        seed = f"mkdir -p {space} && rm -f {STATE} && echo imdt-secret-text > {SECRET} && {AS_LEFT[left]}"
        assert as_imd(box, seed)[0] == 0
        code, out = as_imd(box, f"cd {space} && {layout.JAIL} claude --program /bin/cat {STATE}")
        as_imd(box, f"rm -f {STATE} {SECRET}")
    assert ("imdt-secret-text" in out) == leaks, out
    if left == "a-file-of-its-own":  # bound: the job's Claude Code keeps its state there
        assert code == 0 and out.strip() == "imdt-state", out
