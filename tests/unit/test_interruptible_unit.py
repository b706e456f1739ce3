"""Ctrl-C while box waits on a silent engine stream (throwaway.interruptible).

CPython runs a signal's handler between bytecodes, in whichever thread the kernel
chose; a read already blocked in recv() wakes only if the signal hit that very
thread. A Ctrl-C that lands just before the read blocks is the same case, and is
seen only when the read returns. Here the signal is made to land in another thread
on purpose, so the race CI hit once in a while (test_faults_install's download
Ctrl-C) happens every time."""

from __future__ import annotations

import select
import subprocess
import sys

import pytest

from imdbox import names

PROGRAM = """
import signal, socket, sys, threading, time
from imdbox.throwaway import interruptible

# As box's main() does: a run started in the background (CI's) inherits SIGINT ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
silent, _other_end = socket.socketpair()  # an engine stream that sends nothing
reading = threading.Event()
sent = None

def stream():
    reading.set()
    while True:
        data = silent.recv(4096)
        if not data:
            return
        yield data

def ctrl_c_in_another_thread():
    global sent
    reading.wait()
    time.sleep(0.5)  # a few bytecodes from the read: the main thread is blocked by now
    sent = time.monotonic()
    print("sent", flush=True)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)

threading.Thread(target=ctrl_c_in_another_thread, daemon=True).start()
try:
    for _ in (interruptible(stream()) if sys.argv[1] == "interruptible" else stream()):
        pass
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - sent:.2f} s", flush=True)
"""
START = 60  # seconds for Python to start and reach the read, on cores other tests share
HEARD = 1.5  # seconds from the Ctrl-C to box hearing it


def _read_silent_stream(how: str) -> subprocess.Popen:
    """The program, once its Ctrl-C is sent (its first line)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, how], cwd=names.REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    ready, _, _ = select.select([proc.stdout], [], [], START)
    line = proc.stdout.readline() if ready else ""
    if line != "sent\n":
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the program did not reach its read in {START} s: {line}{out}{err}")
    return proc


def test_ctrl_c_ends_a_read_of_a_silent_stream_even_when_it_lands_elsewhere():
    proc = _read_silent_stream("interruptible")
    try:
        out, err = proc.communicate(timeout=HEARD + 5)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"Ctrl-C was not heard: {out}{err}")
    assert proc.returncode == 0 and out.startswith("interrupted after "), out + err
    assert float(out.split()[2]) < HEARD, out


def test_breaking_twin_the_plain_read_never_hears_it():
    proc = _read_silent_stream("plain")
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.communicate(timeout=3)
    finally:
        proc.kill()
        proc.communicate()
