"""Containers that live only for one block, whatever ends it (an error, Ctrl-C), and
the engine's streams read so that Ctrl-C ends box at once.

The SDK layer (engine.py), the host-address lister and `box check` all make them.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Callable, Optional, TypeVar

import docker.errors

from . import names

# A box that removes itself (auto_remove) once it ends is gone within this.
LEAVING_S = 10
ASKING_S = 0.1  # what an ask of the engine takes to send
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
    removed with Ctrl-C held back. One made to remove itself (auto_remove), which the block
    started and ran to its end with, is only asked to end: the engine removes it."""
    kwargs = dict(kwargs)
    role = (kwargs.get("labels") or {}).get(f"{names.LABEL}.role", "oneoff")
    name = kwargs["name"] = kwargs.get("name") or f"{prefix}-{role}-{uuid.uuid4().hex[:8]}"

    def remove() -> None:
        try:
            client.api.remove_container(name, force=True)
        except docker.errors.APIError:  # never made, or already gone
            pass

    def let_go() -> None:
        # A box the block started that removes itself once it ends (auto_remove): asked to end
        # (SIGTERM: the engine answers a SIGKILL only once the box is down), and left to the
        # engine. The ask is waited for no longer than it takes to send: while the box goes
        # down, the engine holds every call on it until it is down.
        def ask() -> None:
            import requests.exceptions

            # It has ended, is gone, or the engine went: nothing of it is box's to say.
            with contextlib.suppress(docker.errors.APIError, requests.exceptions.RequestException):
                client.api.kill(name, signal="SIGTERM")

        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        asking.join(ASKING_S)

    def stop_then_remove() -> None:
        # SIGTERM first: an install box removes its staging folder from the volume
        # on it (worker/install.sh), which a SIGKILL would leave half-written.
        try:
            client.api.kill(name, signal="SIGTERM")
            client.api.wait(name, timeout=INTERRUPTED_TERM)
        except Exception:  # not running, gone, or still busy after INTERRUPTED_TERM
            pass
        remove()

    interrupted = done = False
    try:
        yield client.containers.create(**kwargs)
        done = True
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        with sigint_held():
            if done and kwargs.get("auto_remove"):
                let_go()
            elif interrupted:
                # Ctrl-C: box ends within 2 s. Killing a box whose sandboxes hold their
                # own namespaces can take longer; the engine finishes the removal on its
                # own once asked, so box asks and stops waiting after INTERRUPTED_WAIT.
                asking = threading.Thread(target=stop_then_remove, daemon=True)
                asking.start()
                asking.join(INTERRUPTED_WAIT)
            else:
                remove()


def once_free(remove: Callable[[], object], in_use: tuple[int, ...] = (409,)) -> None:
    """`remove` (of a volume, a network, an image), again while a box the engine is removing on
    its own holds it (`in_use`: the engine's answers then), for up to LEAVING_S; gone is fine."""
    deadline = time.monotonic() + LEAVING_S
    while True:
        try:
            remove()
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if exc.status_code not in in_use or time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def attached(container) -> Iterator[tuple[Optional[bytes], Optional[bytes]]]:
    """A box's stdout and stderr, as pieces: asked for before the box starts, nothing is missed
    (a box that has ended cannot be attached to, and one that removes itself keeps no logs)."""
    return container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)


def until_line(
    container, output: Iterator, mark: bytes, seconds: float, before: bytes = b""
) -> tuple[str, str, bool, Optional[int]]:
    """A started box's stdout and stderr (`output`: attached) until a whole line of its stdout
    starts with `mark` and its stderr holds `before`, or until it ends; whether that came within
    `seconds`, and the exit code of a box that ended (None while it runs, or once the engine has
    removed it). The engine reads the two streams apart: what a box wrote to stderr just before
    a line of stdout may come after it."""
    import requests.exceptions

    pieces: queue.SimpleQueue = queue.SimpleQueue()

    def read() -> None:  # a thread of its own: the wait below has a deadline, and Ctrl-C is seen
        try:
            for piece in output:
                pieces.put(piece)
        except (docker.errors.APIError, requests.exceptions.RequestException):
            pass
        pieces.put(None)

    threading.Thread(target=read, name="imd-box-output", daemon=True).start()
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            piece = pieces.get(timeout=min(left, STREAM_WAIT))
        except queue.Empty:
            continue
        if piece is None:  # the box ended
            try:
                code: Optional[int] = container.wait(timeout=10)["StatusCode"]
            except (docker.errors.APIError, requests.exceptions.RequestException):
                code = None
            return out.decode(errors="replace"), err.decode(errors="replace"), True, code
        out += piece[0] or b""
        err += piece[1] or b""
        if out.endswith(b"\n") and any(ln.startswith(mark) for ln in out.splitlines()) and before in err:
            return out.decode(errors="replace"), err.decode(errors="replace"), True, None
    return out.decode(errors="replace"), err.decode(errors="replace"), False, None
