"""The view's wall from its other side: every program of the box that runs outside the worker's
view runs with the box's own environment (worker/own.env), none of its caller's, and reads no
configuration the worker can write. No Docker: the scripts and the door are held to it here, and
worker/own's switch is run by this machine's bash. tests/world/test_hostile_worker.py shows it in a box.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from imdbox import layout, names
from imdbox.runflags import SYSTEM_PATH

ROOT = names.REPO_ROOT
OWN_ENV = ROOT / "worker" / "own.env"
OWN = ROOT / "worker" / "own"

# How each program of the box that runs outside the worker's view (imdbox/layout.py OUTSIDE_VIEW,
# the product's list) keeps to the box's own environment, by the file it is written in.
LAUNCHERS = ("worker/claude", "worker/jail")  # the caller's environment moved to fd 3, as data
SWITCHED = ("worker/broker/start", "worker/broker/ask", "worker/healthy")  # the caller's dropped
HOW = {
    **dict.fromkeys(LAUNCHERS, 'given_or_again "$0" "$@"\n'),
    **dict.fromkeys(SWITCHED, 'own_or_again "$0" "$@"\n'),
    # Runs nothing but the jail, which switches.
    "worker/codex": 'exec "$JAIL" codex "$@"\n',
    # Its own part runs with the environment box gave the worker, which it passes on to the
    # worker; it starts the door with the box's own (the broker switches itself).
    "worker/door/view": '/usr/bin/env -i "${OWN[@]}" "$DOOR" serve',
    # The door: each launcher with the box's own environment, read once (door.c's OWN_ENV).
    "worker/door/door.c": "execve(rt->launcher, argv, own_env);",
    # The broker: only ever started by broker/start's loop.
    "worker/broker/broker.mjs": "process.env.NODE_EXTRA_CA_CERTS",
    # The install box (box setup, update, runtime): npm reads no user configuration, the worker's
    # release runs no install script, and the worker's commands run in its view.
    "worker/install.sh": "export NPM_CONFIG_USERCONFIG=/dev/null NPM_CONFIG_GLOBALCONFIG=/nonexistent/npmrc\n",
}


def written_in(program: str) -> str:
    """The repository's file a program of the image is written in (the door's is compiled)."""
    return "worker/door/door.c" if program == layout.DOOR else f"worker/{program.removeprefix(f'{layout.WORKER_DIR}/')}"


OUTSIDE = sorted(written_in(p) for p in layout.OUTSIDE_VIEW)


def own_env() -> dict[str, str]:
    lines = [line for line in OWN_ENV.read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


@pytest.mark.parametrize("program", OUTSIDE)
def test_each_program_outside_the_view_keeps_to_the_boxs_own_environment(program):
    assert program in HOW, f"{program} runs outside the view: say in HOW how it keeps to the box's own environment"
    text = (ROOT / program).read_text()
    assert HOW[program] in text, f"{program} no longer keeps to the box's own environment"
    if program in LAUNCHERS + SWITCHED:
        assert '. "$WORKER_DIR/own"\n' in text, program


def test_nothing_outside_the_view_reads_a_users_configuration():
    env = own_env()
    # HOME is nowhere the worker writes (the volume is all it writes, and /tmp).
    assert not env["HOME"].startswith((names.HOME, "/tmp", "/var/tmp")) and not Path(env["HOME"]).exists()
    assert env["PATH"] == SYSTEM_PATH
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    # npm's global file is its prefix's (the volume's) unless named: one that is not there.
    assert env["npm_config_userconfig"] == "/dev/null" and not Path(env["npm_config_globalconfig"]).exists()
    # curl reads its ~/.curlrc unless -q comes first.
    assert "exec curl -q " in (ROOT / "worker/broker/ask").read_text()
    door = (ROOT / "worker" / "door" / "door.c").read_text()
    paths_h = (ROOT / "worker" / "door" / "paths.h").read_text()
    assert '#include "paths.h"' in door and f'#define OWN_ENV "{layout.OWN_ENV}"' in paths_h
    assert f"{layout.WORKER_DIR}/own.env" == layout.OWN_ENV


def test_every_program_that_says_how_is_one_outside_the_view():
    assert set(HOW) == set(OUTSIDE), set(HOW) ^ set(OUTSIDE)


def switch(script: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    """`script` run by bash after worker/own, with `env` and own.env in a folder of the test's."""
    folder = tmp_path / "worker"
    folder.mkdir(exist_ok=True)
    (folder / "own.env").write_text(OWN_ENV.read_text())
    program = tmp_path / "program"
    program.write_text(f"#!/bin/bash\nset -euo pipefail\nWORKER_DIR={folder}\n. {OWN}\n{script}\n")
    program.chmod(0o755)
    return subprocess.run([str(program)], env=env, capture_output=True, text=True, timeout=10)


HOSTILE = {"NODE_OPTIONS": "--require /home/imd/x.js", "BASH_ENV": "/home/imd/x.sh", "CURL_HOME": "/home/imd"}


@pytest.mark.parametrize(
    "given",
    [{}, HOSTILE, {"HOME": "/home/imd"}, {"GIT_CONFIG_GLOBAL": "/home/imd/.gitconfig"}],
    ids=["own", "more", "another-home", "another-value"],
)
def test_a_script_runs_with_the_boxs_own_environment_whatever_it_was_given(given, tmp_path):
    env = {**own_env(), **given}
    r = switch('own_or_again "$0" "$@"\nenv -0', env, tmp_path)
    assert r.returncode == 0, r.stderr
    got = dict(e.split("=", 1) for e in r.stdout.split("\0") if e)
    assert {k: v for k, v in got.items() if k not in ("SHLVL", "PWD", "_")} == own_env()


def test_an_entry_bash_takes_for_no_variable_is_dropped_too(tmp_path):
    # An exported function (bash's own form) and a name no shell variable has: bash lists neither
    # among its variables, and the first would define `cd` in every script of the box.
    env = {**own_env(), "BASH_FUNC_cd%%": "() { echo hijacked; }", "A-B": "1"}
    r = switch('own_or_again "$0" "$@"\ncd / && env -0', env, tmp_path)
    assert r.returncode == 0 and "hijacked" not in r.stdout, r
    got = dict(e.split("=", 1) for e in r.stdout.split("\0") if e)
    assert {k: v for k, v in got.items() if k not in ("SHLVL", "PWD", "OLDPWD", "_")} == own_env()


def test_a_launcher_takes_its_callers_environment_as_data(tmp_path):
    env = {**own_env(), **HOSTILE, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    r = switch('given_or_again "$0" "$@"\necho "NODE_OPTIONS=${NODE_OPTIONS-none}"\ntr "\\0" "\\n" <&3', env, tmp_path)
    assert r.returncode == 0, r.stderr
    first, *given = r.stdout.splitlines()
    assert first == "NODE_OPTIONS=none", r.stdout
    assert {f"{k}={v}" for k, v in HOSTILE.items()} | {"ANTHROPIC_BASE_URL=http://127.0.0.1:9"} <= set(given)


def test_a_switch_that_cannot_take_ends_in_one_line_not_a_loop(tmp_path):
    # An own.env bash cannot hold as it says (bash counts SHLVL up itself): the script started
    # again with it still lacks it, and ends.
    r = switch('own_or_again "$0" "$@"', {**own_env()}, tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "worker" / "own.env").write_text("PATH=/usr/bin:/bin\nSHLVL=9\n")
    program = tmp_path / "program"
    r = subprocess.run([str(program)], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=10)
    assert r.returncode == 70 and r.stderr.count("\n") == 1, r
    assert "could not run with the box's own environment" in r.stderr, r.stderr
