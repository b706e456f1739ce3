"""Containers that live only for one block, whatever ends it (an error, Ctrl-C), and
the engine's streams read so that Ctrl-C ends box at once.

The SDK layer (engine.py), the host-address lister and `box check` all make them.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import threading
import uuid
from collections.abc import Iterable, Iterator
from typing import TypeVar

import docker.errors

from . import names

INTERRUPTED_WAIT = 1.5  # seconds a Ctrl-C'd command waits for its box's removal
INTERRUPTED_TERM = 0.7  # of which its box gets this long to clean up after SIGTERM


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Ctrl-C waits until the block is done (it is delivered right after): clean-up
    that a second Ctrl-C cut short would leave a box behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


T = TypeVar("T")
STREAM_WAIT = 0.2  # seconds box waits at a time for the next piece of a stream


def interruptible(stream: Iterable[T]) -> Iterator[T]:
    """A stream from the engine (a box's output, a build's), read in a thread of its own.

    Python runs a signal's handler between bytecodes. A Ctrl-C that lands after the last
    such point and before the read blocks in recv() is seen only when recv returns: for a
    box that prints nothing more (a download held up), never. The main thread here never
    blocks in a read, only in waits of STREAM_WAIT, after which the Ctrl-C is seen."""
    pieces: queue.SimpleQueue = queue.SimpleQueue()
    end = object()

    def pump() -> None:
        try:
            for piece in stream:
                pieces.put((piece, None))
            pieces.put((end, None))
        except BaseException as exc:  # handed to the main thread, which raises it
            pieces.put((end, exc))

    threading.Thread(target=pump, name="imd-box-stream", daemon=True).start()
    while True:
        try:
            piece, error = pieces.get(timeout=STREAM_WAIT)
        except queue.Empty:
            continue
        if error is not None:
            raise error
        if piece is end:
            return
        yield piece


@contextlib.contextmanager
def throwaway(client, kwargs: dict, prefix: str) -> Iterator:
    """A container that lives only for this block, whatever ends it (an error, Ctrl-C).
    It gets a unique name first (`prefix`, the seat's container, then its role), so that
    even a Ctrl-C between the engine creating it and box hearing back finds it again; it is
    removed with Ctrl-C held back."""
    kwargs = dict(kwargs)
    role = (kwargs.get("labels") or {}).get(f"{names.LABEL}.role", "oneoff")
    name = kwargs["name"] = kwargs.get("name") or f"{prefix}-{role}-{uuid.uuid4().hex[:8]}"

    def remove() -> None:
        try:
            client.api.remove_container(name, force=True)
        except docker.errors.APIError:  # never made, or already gone
            pass

    def stop_then_remove() -> None:
        # SIGTERM first: an install box removes its staging folder from the volume
        # on it (worker/install.sh), which a SIGKILL would leave half-written.
        try:
            client.api.kill(name, signal="SIGTERM")
            client.api.wait(name, timeout=INTERRUPTED_TERM)
        except Exception:  # not running, gone, or still busy after INTERRUPTED_TERM
            pass
        remove()

    interrupted = False
    try:
        yield client.containers.create(**kwargs)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        with sigint_held():
            if interrupted:
                # Ctrl-C: box ends within 2 s. Killing a box whose sandboxes hold their
                # own namespaces can take longer; the engine finishes the removal on its
                # own once asked, so box asks and stops waiting after INTERRUPTED_WAIT.
                asking = threading.Thread(target=stop_then_remove, daemon=True)
                asking.start()
                asking.join(INTERRUPTED_WAIT)
            else:
                remove()
