"""The one way tests (and the bench) run `box`: as a user would, a process of
`python -m imdbox` of its own from the checkout, never a shell, stdin closed. `run_box`
forks it from a Python with box's libraries already imported (zygote.py: the same
command, without 0.3 s of imports each); `start_box` and `fresh` start a new one."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Optional

from imdbox import names
from tests.harness.zygote import zygote_for

BOX = [sys.executable, "-m", "imdbox"]
LAUNCHER = [str(names.REPO_ROOT / "box")]  # what users run: makes its own virtualenv on first use
PLAIN = {"NO_COLOR": "1", "COLUMNS": "200"}  # output the tests can match on one line


def cli_env(**overrides: str) -> dict[str, str]:
    """This process's environment, plain output, and `overrides` (the test-only names)."""
    return {**os.environ, **PLAIN, **overrides}


def run_box(
    *args: str, env: Optional[dict[str, str]] = None, timeout: float = 300, launcher: bool = False, fresh: bool = False
) -> subprocess.CompletedProcess:
    """`box ARGS` to the end (through ./box with `launcher`); `.all` is stdout then stderr.
    It runs forked from a Python that has box's libraries imported (zygote.py), or, with
    `fresh` or `launcher`, as a new process (the bench times what a user waits for)."""
    env = env if env is not None else cli_env()
    if launcher or fresh:
        result = subprocess.run(
            [*(LAUNCHER if launcher else BOX), *args],
            cwd=str(names.REPO_ROOT),
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    else:
        result = zygote_for(env, str(names.REPO_ROOT)).run(list(args), env, str(names.REPO_ROOT), timeout)
    result.all = result.stdout + result.stderr  # type: ignore[attr-defined]
    return result


def start_box(*args: str, env: Optional[dict[str, str]] = None, launcher: bool = False, **popen) -> subprocess.Popen:
    """`box ARGS` left running (a follower, or a command to interrupt), output piped."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(
        [*(LAUNCHER if launcher else BOX), *args],
        cwd=str(names.REPO_ROOT),
        env=env if env is not None else cli_env(),
        stdin=subprocess.DEVNULL,
        text=True,
        **popen,
    )
