"""A job's own commands in its jail (`jail claude --program`, as the agent's commands run there):
npm asks the registry nothing a throwaway home alone makes it ask, and starts from the box's own
cache, read-only beneath a layer of the job's own, so that nothing one job writes there reaches
the next (worker/jail.d/environment and home), in Claude's sandbox too (the managed settings'
allowWrite); and real projects built and tested by their own commands there: a TypeScript tool
(npm ci, build, test) and a Foundry project's unit and invariant suites (the agent's forge, the
box's compiler). Each with its twin: the line changed back, or a test that fails."""

from __future__ import annotations

import contextlib
import re
import shlex
import uuid

import pytest

from imdbox import layout
from imdbox.check.runner import CLAUDE_SETTINGS, TOOLS
from tests.harness import boxes, hands, jobs, projects
from tests.harness.boxes import as_imd
from tests.harness.claude_settings import DERIVE
from tests.harness.jobs import WORK_ROOT
from tests.harness.twins import jail_with, patched_image

pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group("job_commands")]

# The one package the box's owner installs (a package install is all these tests send off the
# machine): no dependencies, so its tarball is all `npm ci` needs of the cache.
PACKAGE = "is-number@7.0.0"
# Where a job's npm would ask the registry: nowhere (nothing listens on the jail's own loopback).
NOWHERE = "npm_config_registry=http://127.0.0.1:9/"

NOTIFIER_ON = jail_with(("jail+=(--setenv npm_config_update_notifier false)", ":"))
NO_CACHES = jail_with(('for cache in "${caches[@]}"; do', "for cache in; do"))
CACHES_BOUND = jail_with(('jail+=(--overlay-src "$cache" --tmp-overlay "$cache")', 'jail+=(--bind "$cache" "$cache")'))


@contextlib.contextmanager
def owners_box(client, image: str, patch: dict):
    """A walled box on Docker's bridge (npm in reach) of the image with `patch`, where the
    owner has installed PACKAGE outside every job: its cache is warm. The folder of that
    install (package.json and its lock), to copy into a job."""
    with patched_image(client, image, patch) as patched, boxes.volume(client, "job-commands") as volume:
        box = boxes.start_walled(client, patched, None, volume=volume, alone_on="bridge")
        try:
            code, out = as_imd(
                box,
                f"mkdir -p ~/owner && cd ~/owner && npm install -s --no-audit --no-fund {PACKAGE} 2>&1",
                timeout=180,
            )
            assert code == 0, out
            yield box
        finally:
            box.remove(force=True)


@pytest.fixture(scope="module")
def box(docker_client, box_image):
    with owners_box(docker_client, box_image, {}) as container:
        yield container


def in_node(box, script: str) -> tuple[int, str]:
    """`script` as the worker, in a job's node of its own with the owner's package.json and lock."""
    node = f"{WORK_ROOT}/{uuid.uuid4()}/node"
    return as_imd(
        box,
        f"mkdir -p {node} && cp ~/owner/package.json ~/owner/package-lock.json {node} && cd {node} && {{ {script}; }} 2>&1",
        timeout=120,
    )


def job(box, script: str) -> tuple[int, str]:
    """`script` as a job's command in its jail, in a node of its own (in_node)."""
    return in_node(box, f"{layout.JAIL} claude --program /bin/bash -c {shlex.quote(script)}")


@contextlib.contextmanager
def variant_box(docker_client, box_image, box, variant: str, twin: dict):
    """The module's box as it is, or a box of its own for the twin's jail."""
    if variant == "as-it-is":
        yield box
    else:
        with owners_box(docker_client, box_image, twin) as container:
            yield container


# npm notes the day it asked in the home's ~/.npm, before it asks: the jail's home is new.
ASKED = f"{NOWHERE} npm ls >/dev/null 2>&1; [ -e ~/.npm/_update-notifier-last-checked ] && echo asked || echo quiet"


@pytest.mark.parametrize("variant", ["as-it-is", "twin-notifier-on"])
def test_a_jobs_npm_does_not_ask_for_a_newer_npm(docker_client, box_image, box, variant):
    with variant_box(docker_client, box_image, box, variant, NOTIFIER_ON) as there:
        code, out = job(there, ASKED)
    assert code == 0 and out.split()[-1] == ("quiet" if variant == "as-it-is" else "asked"), out


CI_OFFLINE = f"{NOWHERE} npm ci --offline --no-audit --no-fund && node -e 'require(\"is-number\")' && echo installed"


@pytest.mark.parametrize("variant", ["as-it-is", "twin-no-cache"])
def test_a_jobs_npm_ci_starts_from_the_boxs_cache(docker_client, box_image, box, variant):
    with variant_box(docker_client, box_image, box, variant, NO_CACHES) as there:
        code, out = job(there, CI_OFFLINE)
    if variant == "as-it-is":
        assert code == 0 and out.split()[-1] == "installed", out
    else:
        assert code != 0 and "ENOTCACHED" in out, out


# Every tarball in the job's view of the cache made another's: what a job could leave for the next.
POISON = (
    'find ~/.npm/_cacache/content-v2 -type f | while read -r f; do rm -f "$f" && echo poisoned > "$f"; done; '
    "find ~/.npm/_cacache/content-v2 -type f | head -1 | xargs cat"
)


@pytest.mark.parametrize("variant", ["as-it-is", "twin-cache-bound"])
def test_a_job_that_poisons_its_cache_leaves_the_next_jobs_npm_ci_untouched(docker_client, box_image, box, variant):
    with variant_box(docker_client, box_image, box, variant, CACHES_BOUND) as there:
        code, out = job(there, POISON)
        assert code == 0 and out.split()[-1] == "poisoned", out
        code, out = job(there, CI_OFFLINE)
        _, owners = as_imd(there, "grep -rl poisoned ~/.npm/_cacache/content-v2 | wc -l")
    if variant == "as-it-is":
        assert code == 0 and out.split()[-1] == "installed", out
        assert owners.split()[-1] == "0", owners
    else:
        assert code != 0 and "seems to be corrupted" in out, out


# A command of a Claude Code job: in Claude's sandbox (srt, with the managed file's sandbox block,
# as tests/harness/claude_settings.py DERIVE makes it) in the job's jail. The twin's settings leave out
# the file's allowWrite of npm's cache: the denied home hides it.
def in_claudes_sandbox(script: str, *drop: str) -> str:
    """Shell that runs `script` in Claude's sandbox in the job's jail (its settings, less `drop`,
    in the working directory: the one folder of the home the jail holds)."""
    return (
        f"MANAGED={CLAUDE_SETTINGS} node -e {shlex.quote(DERIVE)} $PWD/srt.json {shlex.join(drop)} && "
        f"{layout.JAIL} claude --program /usr/local/bin/node {TOOLS['srt']} --settings $PWD/srt.json -- "
        f"/bin/bash -c {shlex.quote(script)}"
    )


@pytest.mark.parametrize("variant", ["as-it-is", "twin-no-allow-write"])
def test_a_claude_jobs_command_starts_from_the_boxs_cache_in_claudes_sandbox(box, variant):
    drop = () if variant == "as-it-is" else ("~/.npm/_cacache",)
    code, out = in_node(box, in_claudes_sandbox(CI_OFFLINE, *drop))
    if variant == "as-it-is":
        assert code == 0 and out.split()[-1] == "installed", out
    else:
        assert code != 0 and "ENOTCACHED" in out, out


# ---------------------------------------------------------------- real projects (tests/harness/projects.py)
OWNERS_TS = "/home/imd/owner-ts"
BROKEN_TEST = ("test/tool.test.ts", '"6")', '"7")')  # the twin's: a test that fails


def owners_lock(box, folder: str, files: dict) -> str:
    """A project's lock, as the owner's install outside every job wrote it (the box's cache warm
    with its packages)."""
    projects.write(box, folder, files)
    projects.owners_install(box, folder)
    return f"{folder}/package-lock.json"


def npm_steps_in_a_jail(
    box, files: dict, lock: str, broken: tuple | None, more: str = "", node: str = ""
) -> tuple[int, str]:
    """The project's TS_STEPS (and `more`) in a job's node (a new one by default), in its jail,
    from the owner's cache alone and with no audit: the test asks the registry nothing.
    `broken`: the twin's (path, old, new) change to one of its files."""
    files = dict(files)
    if broken:
        path, old, new = broken
        files[path] = files[path].replace(old, new)
    node = node or f"{WORK_ROOT}/{uuid.uuid4()}/node"
    projects.write(box, node, files)
    steps = "export npm_config_offline=true npm_config_audit=false && " + " && ".join(projects.TS_STEPS) + more
    assert as_imd(box, f"cp {lock} {node}")[0] == 0
    return jobs.in_jail(box, steps, node=node, timeout=300)


@pytest.fixture(scope="module")
def ts_lock(box) -> str:
    return owners_lock(box, OWNERS_TS, projects.TS_TOOL)


@pytest.mark.parametrize("variant", ["as-it-is", "twin-a-failing-test"])
def test_a_typescript_tool_is_built_and_tested_by_its_own_scripts_in_a_jobs_jail(box, ts_lock, variant):
    code, out = npm_steps_in_a_jail(box, projects.TS_TOOL, ts_lock, None if variant == "as-it-is" else BROKEN_TEST)
    if variant == "as-it-is":
        assert code == 0 and "ℹ pass 2" in out and "ℹ fail 0" in out, out
    else:
        assert code != 0 and "ℹ fail 1" in out, out


OWNERS_APP = "/home/imd/owner-app"
BROKEN_APP_TEST = ("src/App.test.tsx", 'toBe("coffee")', 'toBe("tea")')  # the twin's: a test that fails


@pytest.fixture(scope="module")
def app_lock(box) -> str:
    return owners_lock(box, OWNERS_APP, projects.TS_APP)  # its ~215 packages in the box's cache


@pytest.fixture(scope="module")
def app_run(box, app_lock) -> tuple[str, int, str]:
    """The web app's steps in a job's node and jail: the node, the exit code, what they printed
    (Vitest's colours taken out). Its last line: the packages npm ls lists (and the app's own)."""
    node = f"{WORK_ROOT}/{uuid.uuid4()}/node"
    more = " && ls dist/assets/*.js && npm ls --all --parseable | wc -l"
    code, out = npm_steps_in_a_jail(box, projects.TS_APP, app_lock, None, more, node=node)
    return node, code, re.sub(r"\x1b\[[0-9;]*m", "", out)


def test_a_web_app_is_built_linted_and_tested_by_its_own_toolchain_in_a_jobs_jail(app_run):
    # A real framework's toolchain in the jail: Vite's native bundler, ESLint, Vitest's workers in jsdom.
    _, code, out = app_run
    assert code == 0 and projects.APP_PASSED in out and int(out.split()[-1]) > 200, out


def test_twin_the_web_apps_failing_test_fails_its_run(box, app_run):
    # The same node, one of its tests made to fail: `npm test` alone again, in a job's jail (its
    # install and build are the run's above, which the test needs not repeat).
    node = app_run[0]
    path, old, new = BROKEN_APP_TEST
    assert as_imd(box, f"sed -i 's/{old}/{new}/' {node}/{path}")[0] == 0
    code, out = jobs.in_jail(box, "npm_config_offline=true npm test", node=node, timeout=300)
    assert code != 0 and "Tests  1 failed | 3 passed (4)" in re.sub(r"\x1b\[[0-9;]*m", "", out), out


@pytest.fixture(scope="module")
def compilers(box) -> None:
    """The box's compiler, where box setup keeps them (~/.svm): solc-js behind solc's command line."""
    hands.install_solc(box)


@pytest.mark.parametrize("variant", ["as-it-is", "twin-no-allow-write"])
def test_a_foundry_projects_unit_and_invariant_suites_pass_under_the_agents_forge(box, compilers, variant):
    # The agent's forge as the agent runs it: a command in Claude's sandbox in the job's jail,
    # offline (foundry.toml), so it builds with the box's compiler or not at all.
    node = f"{WORK_ROOT}/{uuid.uuid4()}/node"
    projects.write(box, node, projects.FOUNDRY_PROJECT)
    drop = () if variant == "as-it-is" else ("~/.svm",)
    steps = " && ".join(projects.FORGE_STEPS)
    code, out = as_imd(box, f"cd {node} && {{ {in_claudes_sandbox(steps, *drop)}; }} 2>&1", timeout=300)
    if variant == "as-it-is":
        assert code == 0 and all(passed in out for passed in projects.FORGE_PASSED), out
    else:
        assert code != 0 and "no compiler versions are available" in out, out


# A job that makes the box's compiler another program: what the next job's forge would run. It
# reads what forge writes it first: one that did not could end before forge had written, and
# forge would fail on the broken pipe instead of on its answer.
POISON_SOLC = 'for f in ~/.svm/*/solc-*; do rm -f "$f" && printf \'#!/bin/sh\\ncat >/dev/null\\necho poisoned\\n\' > "$f" && chmod 755 "$f"; done; cat ~/.svm/*/solc-*'


@pytest.mark.parametrize("variant", ["as-it-is", "twin-cache-bound"])
def test_a_job_that_replaces_the_boxs_compiler_leaves_the_next_jobs_forge_its_own(
    docker_client, box_image, box, compilers, variant
):
    with variant_box(docker_client, box_image, box, variant, CACHES_BOUND) as there:
        if there is not box:  # the twin's box has no compiler yet
            hands.install_solc(there)
        code, out = job(there, POISON_SOLC)
        assert code == 0 and "poisoned" in out, out
        node = f"{WORK_ROOT}/{uuid.uuid4()}/node"
        projects.write(there, node, projects.FOUNDRY_PROJECT)
        steps = " && ".join(projects.FORGE_STEPS)
        code, out = jobs.in_jail(there, steps, node=node, timeout=300)
    if variant == "as-it-is":
        assert code == 0 and all(passed in out for passed in projects.FORGE_PASSED), out
    else:  # forge read the poisoned compiler's answer as its output
        assert code != 0 and "expected value at line 1 column 1" in out, out
