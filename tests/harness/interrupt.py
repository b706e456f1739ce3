"""Ctrl-C as a user gives it to `box`, started as CI runners and scripts start a command in the
background (SIGINT inherited as ignored): how long it took to end, and what it left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from imdbox import names

GRACE = 2.0  # seconds from Ctrl-C to exit


def _ignore_sigint() -> None:  # what a shell without job control does to `cmd &`
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def interrupt(argv: list[str], env: dict, until, delay: float) -> tuple[float, str]:
    """Start `box`, wait for a line holding `until` (or, given a function, until it says
    True), wait `delay` s, Ctrl-C it; (seconds from the signal to exit, stderr). A process
    still running after GRACE is killed."""
    proc = subprocess.Popen(
        argv,
        cwd=str(names.REPO_ROOT),
        # PYTHONFAULTHANDLER: a box that hangs prints every thread's stack on SIGABRT (below).
        env={**os.environ, "NO_COLOR": "1", "PYTHONFAULTHANDLER": "1", **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_ignore_sigint,
    )
    try:
        if callable(until):
            deadline = time.monotonic() + 60
            while not until():
                assert proc.poll() is None and time.monotonic() < deadline, f"{argv[3:]} ended before the moment"
                time.sleep(0.1)
        else:
            for line in iter(proc.stdout.readline, b""):
                if until.encode() in line:
                    break
            else:
                raise AssertionError(f"{argv[3:]} never printed {until!r}: {proc.stderr.read().decode()[-500:]}")
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=GRACE)
        except subprocess.TimeoutExpired:
            # Where it was: faulthandler's stacks, as the failure's message.
            proc.send_signal(signal.SIGABRT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                return float("inf"), ""
            return float("inf"), proc.stderr.read().decode(errors="replace")
        return time.monotonic() - sent, proc.stderr.read().decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def left_after(find, seconds: float = 20) -> list:
    """What `find` still sees once the engine had time to finish removing what box asked it to
    (after a Ctrl-C, box stops waiting for that after 1.5 s)."""
    deadline = time.monotonic() + seconds
    while (left := find()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left
