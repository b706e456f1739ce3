"""Ctrl-C while box waits on a silent engine stream (throwaway.interruptible).

CPython runs a signal's handler between bytecodes, in whichever thread the kernel
chose; a read already blocked in recv() wakes only if the signal hit that very
thread. A Ctrl-C that lands just before the read blocks is the same case, and is
seen only when the read returns. Here the signal is made to land in another thread
on purpose, so the race CI hit once in a while (test_faults_install's download
Ctrl-C) happens every time."""

from __future__ import annotations

import subprocess
import sys

import pytest

from imdbox import names

PROGRAM = """
import signal, socket, sys, threading, time
from imdbox.throwaway import interruptible

silent, _other_end = socket.socketpair()  # an engine stream that sends nothing

def stream():
    while True:
        data = silent.recv(4096)
        if not data:
            return
        yield data

def ctrl_c_in_another_thread():
    time.sleep(0.5)  # the main thread is blocked by now
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)

threading.Thread(target=ctrl_c_in_another_thread, daemon=True).start()
began = time.monotonic()
try:
    for _ in (interruptible(stream()) if sys.argv[1] == "interruptible" else stream()):
        pass
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - began:.2f} s")
"""


def _read_silent_stream(how: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, how], cwd=names.REPO_ROOT, capture_output=True, text=True, timeout=5
    )


def test_ctrl_c_ends_a_read_of_a_silent_stream_even_when_it_lands_elsewhere():
    r = _read_silent_stream("interruptible")
    assert r.returncode == 0 and r.stdout.startswith("interrupted after "), r.stdout + r.stderr
    assert float(r.stdout.split()[2]) < 1.5, r.stdout


def test_breaking_twin_the_plain_read_never_hears_it():
    with pytest.raises(subprocess.TimeoutExpired):
        _read_silent_stream("plain")
