"""The real agent CLIs, installed from npm by box's own install path, behind the walls.

The CLIs are the session's `agents` volume (tests/harness/agents.py). Everything after
the install runs in walled boxes on the harness's internal networks (no route off this
machine): each CLI answers --version as imd, and the real Claude
Code reads the image's managed settings (/etc/claude-code/managed-settings.json),
turns its sandbox on and takes the deny rules, or refuses to start when the sandbox
cannot, with breaking twins that remove the file or loosen it.
"""

from __future__ import annotations

import json
import shlex

import pytest

from imdbox.check.runner import run_check
from tests.harness import agents as agents_mod
from tests.harness import boxes, jobs
from tests.harness.checks import TEST_TARGETS, show
from tests.harness.claude_settings import MANAGED, managed_with
from tests.harness.twins import UNDEFENDED_LAUNCHER, jail_with, patched_image

# In a parallel run (-n) one worker runs every test of the installed CLIs: one install serves them.
pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group(agents_mod.GROUPS[1])]

DEBUG_LOG = "/tmp/claude-debug.log"
# The real Claude Code, unsigned in: `-p` prints its init line (with "sandbox_enabled")
# and a "Not logged in" answer, without asking any server (nor, OFFLINE, trying to).
# --debug-file keeps the settings it loaded, each source named ("policySettings" is the
# managed file).
CLAUDE_PROBE = (
    f"cd ~ && env {shlex.join(f'{k}={v}' for k, v in jobs.OFFLINE.items())} claude -p hi --output-format stream-json "
    f"--verbose --debug-file {DEBUG_LOG} </dev/null; echo claude-exit=$?; grep -F policySettings {DEBUG_LOG} || true"
)


def in_walled_box(client, image, topology, volume, script: str, mutate=None, timeout: float = 180) -> tuple[int, str]:
    """`script` as the worker, in a box with its walls on the internal networks."""
    box = boxes.create_walled(
        client, image, topology, volume=volume, command=["/bin/bash", "-c", script], mutate=mutate
    )
    try:
        box.start()
        return boxes.wait_exit(box, timeout=timeout)
    finally:
        box.remove(force=True)


def test_each_cli_answers_version_as_imd(docker_client, box_image, topology, agents):
    script = 'for c in claude codex grok; do echo "== $c $(id -un) $(command -v $c)"; $c --version; echo "rc=$?"; done'
    code, logs = in_walled_box(docker_client, box_image, topology, agents, script)
    assert code == 0, logs
    for cli in ("claude", "codex", "grok"):
        section = logs.split(f"== {cli} ", 1)[1].split("rc=", 1)
        header, version = section[0].split("\n", 1)
        assert header.startswith(f"imd /home/imd/.npm-global/bin/{cli}"), logs
        assert section[1].startswith("0"), f"{cli} --version failed:\n{logs}"
        assert any(ch.isdigit() for ch in version), f"{cli} printed no version:\n{logs}"
        print(f"[agents] {cli}: {version.strip()}")


def init_line(logs: str) -> dict:
    for line in logs.splitlines():
        if line.startswith('{"type":"system","subtype":"init"'):
            return json.loads(line)
    raise AssertionError(f"Claude Code printed no init line:\n{logs}")


def test_claude_code_loads_the_managed_settings(docker_client, box_image, topology, agents):
    code, logs = in_walled_box(docker_client, box_image, topology, agents, CLAUDE_PROBE)
    assert code == 0 and "claude-exit=" in logs, logs
    assert init_line(logs)["sandbox_enabled"] is True, logs
    deny = MANAGED["permissions"]["deny"]
    expected = (
        f"Adding {len(deny)} deny rule(s) to destination 'policySettings': {json.dumps(deny, separators=(',', ':'))}"
    )
    assert expected in logs, logs


def test_breaking_twin_without_the_managed_file_claude_runs_unsandboxed(docker_client, box_image, topology, agents):
    # An empty tmpfs over /etc/claude-code: the image without its managed settings.
    def no_managed_settings(kw):
        kw["tmpfs"] = {**kw["tmpfs"], "/etc/claude-code": "size=1m"}

    code, logs = in_walled_box(docker_client, box_image, topology, agents, CLAUDE_PROBE, mutate=no_managed_settings)
    assert code == 0 and "claude-exit=" in logs, logs
    assert init_line(logs)["sandbox_enabled"] is False, logs
    assert "destination 'policySettings'" not in logs, logs


def test_claude_refuses_to_start_when_the_sandbox_cannot(docker_client, box_image, topology, agents):
    # The managed file names a bwrap that is not there: the sandbox cannot start.
    no_bwrap = managed_with(bwrapPath="/usr/bin/imdt-no-bwrap")
    with patched_image(docker_client, box_image, no_bwrap) as image:
        code, logs = in_walled_box(docker_client, image, topology, agents, CLAUDE_PROBE)
    assert "claude-exit=1" in logs, logs
    assert "Refusing to start without a working sandbox" in logs, logs
    assert '"subtype":"init"' not in logs, logs  # no session, so no command ever ran unsandboxed


def test_breaking_twin_without_fail_if_unavailable_claude_starts_unsandboxed(
    docker_client, box_image, topology, agents
):
    loose = managed_with(bwrapPath="/usr/bin/imdt-no-bwrap", failIfUnavailable=False)
    with patched_image(docker_client, box_image, loose) as image:
        code, logs = in_walled_box(docker_client, image, topology, agents, CLAUDE_PROBE)
    assert "Refusing to start without a working sandbox" not in logs, logs
    assert "Commands will run WITHOUT sandboxing" in logs, logs
    assert init_line(logs)["sandbox_enabled"] is False, logs


# box check line 16 where Codex is installed: Codex's sandbox as a job's commands get it (the
# jail asks Codex for it as for a job: worker/jail). The twin is the jail's own text with both
# parts of that ask broken, the login readable and the network off: each shows on its own.
CODEX_BREAKS = (
    ('hidden="\\"$HOME_DIR/.codex\\"=\\"none\\""', 'hidden="\\"$HOME_DIR/.codex\\"=\\"read\\""'),
    ('"permissions.imdbox.network.enabled=$network"', '"permissions.imdbox.network.enabled=false"'),
)
# The twin of the workspace's part: the profile also denies the job's working directory.
HIDE_WORKSPACE = (
    (
        'files="\\"$HOME_DIR\\"=\\"write\\",$hidden"',
        'files="\\"$HOME_DIR\\"=\\"write\\",$hidden,\\"$cwd\\"=\\"none\\""',
    ),
)


# Line 16 where Claude Code is installed: a job's repository names a hook and a helper command
# in its project settings; its twin is UNDEFENDED_LAUNCHER (tests/harness/twins.py).
@pytest.mark.parametrize(
    "broken",
    [None, "login-network", "workspace", "launcher"],
    ids=["as-a-job-gets-it", "twin-login-read-network-off", "twin-workspace", "twin-repository-settings"],
)
def test_check_line_16_runs_the_installed_agents_as_a_job_gets_them(docker_client, box_image, topology, agents, broken):
    changes = {"login-network": CODEX_BREAKS, "workspace": HIDE_WORKSPACE}.get(broken, ())
    patch = UNDEFENDED_LAUNCHER if broken == "launcher" else jail_with(*changes) if broken else {}
    with patched_image(docker_client, box_image, patch) as image:
        report = run_check(
            boxes.engine_of(docker_client, image=image, volume=agents),
            networks=topology.network_names,
            extra_hosts=topology.extra_hosts,
            internet_url=topology.url("internet"),
            targets=TEST_TARGETS,
            only=("read_jail",),
            name_prefix="imdt-check-",
        )
    r = report.by_id("read_jail")
    if broken is None:
        assert r.ok, show(report)
        assert (
            "Codex's sandbox (the volume's codex, as the jail asks for it for a job) reads none of them, "
            "the Codex login included" in r.detail
        ), r.detail
        assert "reaches http://198.51.100.10/ (200)" in r.detail, r.detail
        assert "on a job's repository, ran neither the hook nor the helper command" in r.detail, r.detail
        return
    assert not r.ok, show(report)
    if broken == "launcher":
        assert (
            "a job's repository made Claude Code run its hook and its helper command, outside its sandbox" in r.detail
        ), r.detail
        assert " READ " not in r.detail, r.detail
        return
    if broken == "workspace":
        assert "Codex's sandbox cannot read the job's own workspace either" in r.detail, r.detail
        assert " READ " not in r.detail, r.detail
        return
    assert "Codex's sandbox READ the Codex login (canary)" in r.detail, r.detail
    assert "device key" not in r.detail, r.detail  # the jail still holds nothing else
    assert "a command in Codex's sandbox cannot reach http://198.51.100.10/" in r.detail, r.detail
