"""Claude's sandbox is the read jail: the image's managed settings, applied by the
sandbox library Claude Code is built on, keep the whole home from a job's commands
(secrets, other jobs, transcripts, other runtimes' logins) and leave the job's own
workspace readable and writable.

Claude Code wraps each Bash command with @anthropic-ai/sandbox-runtime (`srt`). These
tests run the image's own copy of it, as imd, in a box with the worker's walls on the
harness's internal networks, with the `sandbox` block of
/etc/claude-code/managed-settings.json (the file Claude Code reads) turned into srt's
settings exactly as `box check` line 16 does: srt takes the same keys and ignores
Claude's own. srt runs in the job's workspace, as Claude Code runs a job's command
(the managed file's allowRead "." is that folder). Each wall shows both sides (the
worker itself reads what the sandbox cannot), and the breaking twins take the home's
rule, or the workspace's, out of a copy of the settings.
"""

from __future__ import annotations

import shlex

import pytest

from imdbox.check.runner import CLAUDE_SETTINGS, TOOLS
from imdbox.layout import SANDBOX_BWRAP
from tests.harness import boxes
from tests.harness.boxes import as_imd
from tests.harness.claude_settings import DERIVE, MANAGED
from tests.harness.jobs import HOME, SECRETS, mark, seed

# In a parallel run (-n) one worker runs this module's tests: its installs and boxes are module fixtures.
pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group("claude_sandbox")]

WORKSPACE = f"{HOME}/.identitymd/work/job-1/node-1"  # the job srt runs for: its cwd
WORK_FILE = f"{WORKSPACE}/index.html"
JAIL_DIR = "/tmp/imdt-jail"  # srt's settings (the box's /tmp)


@pytest.fixture(scope="module")
def box(docker_client, box_image, topology):
    with boxes.volume(docker_client, "sandbox-home") as home:
        container = boxes.start_walled(docker_client, box_image, topology, volume=home)
        yield container


@pytest.fixture(scope="module")
def marks(box) -> dict[str, str]:
    """As imd: each of SECRETS and the job's own file, each with a mark of its own."""
    marks = {label: mark(label) for label in [*SECRETS, "work"]}
    seed(box, {**{SECRETS[k]: marks[k] for k in SECRETS}, WORK_FILE: marks["work"]})
    code, out = as_imd(box, f"mkdir -p {JAIL_DIR}")
    assert code == 0, out
    return marks


def derive(container, name: str, *drop: str) -> str:
    path = f"{JAIL_DIR}/{name}.json"
    cmd = ["/usr/local/bin/node", "-e", DERIVE, path, *drop]
    code, out = as_imd(container, f"MANAGED={CLAUDE_SETTINGS} {shlex.join(cmd)}")
    assert code == 0, out
    return path


def sandboxed(container, settings: str, command: str) -> tuple[int, str]:
    """`command` wrapped by srt with these settings, as Claude Code wraps a Bash command."""
    srt = ["/usr/local/bin/node", TOOLS["srt"], "--settings", settings, "--", "/bin/sh", "-c", command]
    return as_imd(container, f"cd {WORKSPACE} && {shlex.join(srt)}")


@pytest.fixture(scope="module")
def managed(box, marks):
    return derive(box, "managed")


def test_the_worker_cannot_change_the_managed_settings(box):
    # Owner, mode and content: tests/world/test_image_contents.py.
    code, out = as_imd(box, f"echo '{{}}' > {CLAUDE_SETTINGS}")
    assert code != 0 and "Read-only file system" in out, out


def test_the_settings_turn_the_sandbox_on_with_no_way_around_it():
    sb = MANAGED["sandbox"]
    assert sb["enabled"] is True and sb["failIfUnavailable"] is True and sb["allowUnsandboxedCommands"] is False
    assert sb["enableWeakerNestedSandbox"] is True  # Docker masks /proc: the sandbox cannot mount a fresh one
    # Each command on the jail's network, not in a namespace of its own (worker/bwrap).
    assert (sb["bwrapPath"], sb["socatPath"], sb["ripgrep"]) == (
        SANDBOX_BWRAP,
        "/usr/bin/socat",
        {"command": "/usr/bin/rg"},
    )
    # The whole home is denied, and only the job's own folder (the command's cwd) allowed again;
    # a settings file a job writes in its workspace cannot allow more. The caches a command may
    # also write are the jail's own layers (tests/world/test_job_commands.py), none a secret's folder.
    assert sb["filesystem"] == {
        "allowWrite": ["~/.npm/_cacache", "~/.svm"],
        "denyRead": ["~/"],
        "allowRead": ["."],
        "allowManagedReadPathsOnly": True,
    }
    for secret, path in SECRETS.items():
        assert not any(covers(p, f"~{path[len(HOME) :]}") for p in sb["filesystem"]["allowWrite"]), secret
    # The box's firewall is the network wall: a job's commands reach what the box reaches.
    assert sb["network"] == {"allowedDomains": ["*"]}
    # Claude's own Read/Edit tools run outside the sandbox: the secrets are permission rules too,
    # and no rule reaches the work root (~/.identitymd/work), where jobs read and write.
    ruled = [r[r.index("(") + 1 : -1] for r in MANAGED["permissions"]["deny"]]
    for secret, path in SECRETS.items():
        if secret != "other job":
            assert any(covers(p, f"~{path[len(HOME) :]}") for p in ruled), secret
    assert not any(covers(p, "~/.identitymd/work") for p in ruled), ruled


def covers(rule: str, path: str) -> bool:
    """Whether a path rule (a file, a folder, or a folder/** glob) reaches `path`."""
    base = rule.removesuffix("/**").rstrip("/")
    return path == base or path.startswith(base + "/")


@pytest.mark.parametrize("secret", sorted(SECRETS))
def test_a_sandboxed_read_of_each_secret_fails_and_the_worker_reads_it(box, managed, marks, secret):
    mark = marks[secret]
    code, out = as_imd(box, f"cat {SECRETS[secret]}")
    assert code == 0 and mark in out, f"control: the worker cannot read its own {secret}: {out}"
    code, out = sandboxed(box, managed, f"cat {SECRETS[secret]}")
    assert code != 0 and mark not in out, f"the sandbox read the {secret}: {out}"
    assert "Permission denied" in out or "No such file" in out, out


def test_a_sandboxed_command_reads_and_writes_its_own_workspace(box, managed, marks):
    code, out = sandboxed(box, managed, "cat index.html && echo built > dist.html && cat dist.html")
    assert code == 0 and marks["work"] in out and "built" in out, out


def test_a_sandboxed_command_has_a_home_to_write_in_that_the_next_one_never_sees(box, managed):
    # npm's cache, git's config, forge's ~/.svm: a throwaway home, gone with the command, so
    # nothing one job's command writes there is waiting for the next.
    code, out = sandboxed(box, managed, "mkdir -p ~/.npm && echo planted > ~/.npm/mark && cat ~/.npm/mark")
    assert code == 0 and "planted" in out, out
    code, out = sandboxed(box, managed, "cat ~/.npm/mark")
    assert code != 0 and "planted" not in out, out
    code, out = as_imd(box, f"test -e {HOME}/.npm/mark && echo leaked || echo kept-out")
    assert "kept-out" in out, out


def test_nor_through_proc_root_of_a_process_outside(box, managed, marks):
    pid = boxes.pid_of(box, "^sleep infinity")  # the worker's own process, outside the sandbox
    via_proc = f"/proc/{pid}/root{SECRETS['device key']}"
    code, out = as_imd(box, f"cat {via_proc}")
    assert code == 0 and marks["device key"] in out, f"control: {out}"
    code, out = sandboxed(box, managed, f"cat {via_proc}")
    assert code != 0 and marks["device key"] not in out, out


def test_a_sandboxed_command_cannot_make_a_user_namespace(box, managed):
    # Nested namespaces would let a command take the deny mounts out of its own view.
    code, out = as_imd(box, "unshare -U -r true && echo unshared")
    assert code == 0 and "unshared" in out, f"control: the box allows user namespaces: {out}"
    code, out = sandboxed(box, managed, "unshare -U -r true && echo unshared")
    assert code != 0 and "unshared" not in out, out


def test_breaking_twin_a_copy_without_the_homes_rule_reads_it(box, marks):
    broken = derive(box, "broken", "~/")
    for secret in ("device key", "other job"):
        code, out = sandboxed(box, broken, f"cat {SECRETS[secret]}")
        assert code == 0 and marks[secret] in out, out


def test_breaking_twin_a_copy_without_the_workspaces_rule_cannot_work(box, marks):
    broken = derive(box, "no-workspace", ".")
    code, out = sandboxed(box, broken, "cat index.html")
    assert code != 0 and marks["work"] not in out, out
