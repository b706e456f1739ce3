"""Ctrl-C on `box logs` ends it at once, every time, quietly.

The root cause of the hang CI saw: a job started in the background without job
control (`cmd &` in a non-interactive shell, as CI runners and scripts do)
inherits SIGINT as *ignored*, and Python keeps an inherited "ignore", so a
following `box logs` never heard Ctrl-C. The tests start `box` exactly that way.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest

from imdbox import names

ROUNDS = 20
GRACE = 2.0  # seconds from Ctrl-C to exit


@pytest.fixture
def chatty_box(docker_client, box_image):
    """A container `box` takes for its own (the label), printing a line every 0.2 s.
    No network at all: it only writes a log."""
    name = f"imdt-logs-{uuid.uuid4().hex[:8]}"
    container = docker_client.containers.run(
        box_image,
        entrypoint=["bash", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done"],
        command=[],
        name=name,
        network_mode="none",
        labels={names.LABEL: "1", "imd-test": "1"},
        detach=True,
    )
    try:
        yield name
    finally:
        container.remove(force=True)


def _ignore_sigint() -> None:  # what a shell without job control does to `cmd &`
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupt_following(argv: list[str], container: str, rng: random.Random) -> tuple[float, str]:
    """Start a following `box logs`, wait for a line, Ctrl-C it at a random moment;
    (seconds from the signal to exit, stderr). A process still running after GRACE is killed."""
    proc = subprocess.Popen(
        argv,
        cwd=str(names.REPO_ROOT),
        env={**os.environ, "IMD_BOX_CONTAINER": container, "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_ignore_sigint,
    )
    try:
        assert proc.stdout.readline().startswith(b"tick"), "box logs printed no line"
        time.sleep(rng.uniform(0, 0.6))
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=GRACE)
        except subprocess.TimeoutExpired:
            return float("inf"), ""
        return time.monotonic() - sent, proc.stderr.read().decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


BOX_LOGS = [sys.executable, "-m", "imdbox", "logs", "--tail", "0"]


def test_ctrl_c_ends_box_logs_at_once_every_time(chatty_box):
    rng = random.Random()
    for i in range(ROUNDS):
        took, stderr = _interrupt_following(BOX_LOGS, chatty_box, rng)
        assert took < GRACE, f"round {i + 1}: `box logs` still following {GRACE} s after Ctrl-C"
        assert stderr == "", f"round {i + 1}: not quiet: {stderr!r}"


def test_breaking_twin_without_the_fix_ctrl_c_is_lost(chatty_box):
    """The same command with box's SIGINT handling left out (typer's app called
    directly, not `main`): the inherited "ignore" wins and Ctrl-C does nothing."""
    without_fix = [
        sys.executable,
        "-c",
        "import sys; sys.argv = ['box', 'logs', '--tail', '0']\nfrom imdbox.cli import app\napp()",
    ]
    took, _ = _interrupt_following(without_fix, chatty_box, random.Random(0))
    assert took == float("inf")
