"""The harness's zygote (tests/harness/zygote.py): a command forked from it answers as a
fresh `python -m imdbox` would, takes its own environment, and dies at its timeout."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from imdbox import names
from tests.harness import zygote
from tests.harness.cli import cli_env, run_box

RECORDER = """
import json, os, sys
read = set()
class Recording(dict):
    def __getitem__(self, key):
        read.add(key)
        return dict.__getitem__(self, key)
    def get(self, key, default=None):
        read.add(key)
        return dict.get(self, key, default)
    def __contains__(self, key):
        read.add(key)
        return dict.__contains__(self, key)
    def __iter__(self):
        read.add("*every variable*")
        return dict.__iter__(self)
os.environ = Recording(os.environ)
for module in sys.argv[1:]:
    __import__(module)
print(json.dumps(sorted(read)))
"""


def _read_when_imported(*modules: str) -> list[str]:
    """The environment variables these modules read while being imported."""
    out = subprocess.run([sys.executable, "-c", RECORDER, *modules], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_the_preloaded_libraries_read_no_variable_a_command_may_change():
    read = _read_when_imported(*zygote.PRELOAD)
    assert not [key for key in read if zygote.call_time(key) or key.startswith("*")], read


def test_the_recorder_sees_a_variable_read_at_import():
    # The twin: typer's rich help (not preloaded) reads TERMINAL_WIDTH when imported;
    # were it preloaded, a command could not change it, and the check above would say so.
    assert "TERMINAL_WIDTH" in _read_when_imported("typer.rich_utils")


def test_one_server_serves_every_test_of_a_process():
    # pytest gives each phase of each test a PYTEST_CURRENT_TEST of its own: keyed on it,
    # each test would start servers of its own, each importing the libraries again.
    cwd = str(names.REPO_ROOT)
    one = zygote.zygote_for(cli_env(PYTEST_CURRENT_TEST="tests/a.py::one (setup)"), cwd)
    assert zygote.zygote_for(cli_env(PYTEST_CURRENT_TEST="tests/b.py::two (call)"), cwd) is one
    # The control: a variable read at import (PYTHON*) still gets a server of its own.
    assert zygote.zygote_for(cli_env(PYTHONIOENCODING="utf-8"), cwd) is not one


def _both(*args: str, **env: str):
    fresh = run_box(*args, env=cli_env(**env), fresh=True)
    forked = run_box(*args, env=cli_env(**env))
    return fresh, forked


@pytest.mark.parametrize("args", [("--help",), ("nosuch",), ("start", "--nosuch")])
def test_a_forked_command_answers_as_a_fresh_one(args):
    fresh, forked = _both(*args)
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_each_forked_command_takes_its_own_environment(docker_client):
    # box reads these when imdbox is imported (names): a zygote that had imported it
    # would answer every command with the first one's names. The image is missing, so
    # `status` only looks: nothing is made.
    seen = []
    for name in ("imdt-zygote-a", "imdt-zygote-b"):
        env = {"IMD_BOX_CONTAINER": name, "IMD_BOX_IMAGE": f"{name}:missing"}
        fresh, forked = _both("status", **env)
        assert forked.returncode == fresh.returncode != 0
        assert forked.all == fresh.all
        seen.append(forked.all)
    assert "imdt-zygote-a: not created" in seen[0] and "imdt-zygote-b: not created" in seen[1], seen


def test_a_command_past_its_timeout_is_killed(tmp_path):
    # An engine that takes the connection and never answers: `box status` waits on it.
    path = tmp_path / "silent.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.bind(str(path))
        silent.listen(1)
        began = time.monotonic()
        with pytest.raises(subprocess.TimeoutExpired):
            run_box("status", env=cli_env(DOCKER_HOST=f"unix://{path}"), timeout=2)
        assert time.monotonic() - began < 10
        # Killed: its end of the connection is closed, so reading it comes to an end.
        silent.settimeout(5)
        conn, _ = silent.accept()
        with conn:
            conn.settimeout(5)
            while conn.recv(65536):
                pass
