"""A hostile worker's calls of Codex, through the door: Codex runs only as the released worker calls it.

A Codex job's jail holds the Codex login (~/.codex/auth.json) for Codex itself, so every option
and `-c` setting that tells Codex what to run or where to sign its requests is the login's to
lose. The Codex room (worker/jail.d/codex) takes the released worker's calls alone (dist/cli.js
fd511610, written down in tests/harness/jobs.py) and refuses the rest in one line naming it.
Here the worker, in its view, calls `$IDENTITYMD_CODEX_BIN` as a hostile release would: each
call is refused and the login is printed nowhere; the twin, the room with its old gate (only a
first argument of `exec` or `sandbox` was looked at), prints the login for the call the issue
measured.
"""

from __future__ import annotations

import json
import shlex

import pytest

from tests.harness import agents as agents_mod
from tests.harness import boxes, jobs
from tests.harness.boxes import as_imd, in_view
from tests.harness.login import CODEX_LOGIN, CODEX_MARK, codex_login
from tests.harness.twins import jail_with, patched_image

pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group(agents_mod.GROUPS[0])]

SEIZE = ["sh", "-c", f"cat {CODEX_LOGIN}"]
# The worker's own exec options, a hostile call's start (its prompt last, as the worker gives it).
EXEC = ["exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "--ignore-user-config"]
# Each call (argv), and what the room's line names of it.
HOSTILE = {
    "config-before-sandbox": (["-c", "a=b", "sandbox", "--", "cat", CODEX_LOGIN], "the setting 'a=b'"),
    "mcp-server-command": (
        [*EXEC, "-c", 'mcp_servers.x.command="sh"', "-c", f"mcp_servers.x.args={json.dumps(SEIZE[1:])}", "hi"],
        "the setting 'mcp_servers.x.command=\"sh\"'",
    ),
    "mcp-server-as-the-worker-names-a-tool": (
        [*EXEC, "-c", f'mcp_servers={{"x"={{command="/bin/sh",args={json.dumps(SEIZE[1:])}}}}}', "hi"],
        'the setting \'mcp_servers={"x"={command="/bin/sh"',
    ),
    "notify": ([*EXEC, "-c", f"notify={json.dumps(SEIZE)}", "hi"], "the setting 'notify=["),
    "notify-glued": ([*EXEC, f"-cnotify={json.dumps(SEIZE)}", "hi"], "the setting 'notify=["),
    "notify-long-form": ([*EXEC, f"--config=notify={json.dumps(SEIZE)}", "hi"], "the setting 'notify=["),
    "bypass": ([*EXEC, "--dangerously-bypass-approvals-and-sandbox", "hi"], "the option '--dangerously-bypass"),
    "provider-of-the-workers": (
        [
            *EXEC,
            "-c",
            "model_provider=w",
            "-c",
            'model_providers.w={name="w",base_url="http://127.0.0.1:9/v1",requires_openai_auth=true,wire_api="responses"}',
            "hi",
        ],
        'the setting \'model_providers.w={name="w",base_url="http://127.0.0.1:9/v1",requires_openai_auth=true',
    ),  # fmt: skip
    "sandbox-mode": (["-c", 'sandbox_mode="danger-full-access"', *EXEC, "hi"], "the setting 'sandbox_mode="),
    "sandbox-full-access": (["exec", "--sandbox=danger-full-access", "hi"], "the sandbox 'danger-full-access'"),
    "profile": ([*EXEC, "--profile", "p", "hi"], "the option '--profile'"),
    "network-not-a-bool": (
        [*EXEC, "-c", "sandbox_workspace_write.network_access=1", "hi"],
        "the setting 'sandbox_workspace_write.network_access=1'",
    ),
    "folder-of-the-login": ([*EXEC, "-C", f"{jobs.HOME}/.codex", "hi"], f"the folder '{jobs.HOME}/.codex'"),
    "resume": (["exec", "resume", "--last"], "the argument 'resume'"),
    "login-status": (["login", "status"], "the argument 'login'"),
}


@pytest.fixture(scope="module")
def box(docker_client, box_image, topology, agents):
    container = boxes.start_walled(docker_client, box_image, topology, volume=agents)
    try:
        with codex_login(container):
            yield container
    finally:
        container.remove(force=True)


def through_the_door(box, argv: list[str]) -> tuple[int, str]:
    """`$IDENTITYMD_CODEX_BIN ARGV` from the worker's view, in a job's workspace, stdin closed."""
    space = jobs.workspace()
    call = f'mkdir -p {space} && cd {space} && "$IDENTITYMD_CODEX_BIN" {shlex.join(argv)} </dev/null 2>&1'
    return as_imd(box, in_view(call), timeout=120)


@pytest.mark.parametrize("call", HOSTILE)
def test_a_call_the_released_worker_never_makes_is_refused(box, call):
    argv, named = HOSTILE[call]
    code, out = through_the_door(box, argv)
    assert CODEX_MARK not in out, out
    assert code == 70 and out.strip().count("\n") == 0, out
    assert out.startswith(f"imd-box: codex was not started: the worker asked Codex for {named}"), out


def test_twin_the_old_gate_prints_the_login(docker_client, box_image, topology, agents):
    # The room before the allowlist: it looked only at a call whose first argument was exec or
    # sandbox, and passed every other on as it was.
    gate = '[ "$runtime" = codex ] && [ -n "$cli" ] || return 0'
    old = jail_with((gate, gate.replace(" ||", ' && [[ "${1:-}" =~ ^(exec|sandbox)$ ]] ||')))
    with patched_image(docker_client, box_image, old) as image:
        twin = boxes.start_walled(docker_client, image, topology, volume=agents)
        try:
            with codex_login(twin):
                code, out = through_the_door(twin, HOSTILE["config-before-sandbox"][0])
        finally:
            twin.remove(force=True)
    assert CODEX_MARK in out, (code, out)
