"""Containers that live only for one block, whatever ends it (an error, Ctrl-C).

The SDK layer (engine.py), the host-address lister and `box check` all make them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import uuid
from collections.abc import Iterator

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


@contextlib.contextmanager
def throwaway(client, kwargs: dict) -> Iterator:
    """A container that lives only for this block, whatever ends it (an error, Ctrl-C).
    It gets a unique name first, so that even a Ctrl-C between the engine creating it
    and box hearing back finds it again; it is removed with Ctrl-C held back."""
    kwargs = dict(kwargs)
    role = (kwargs.get("labels") or {}).get(f"{names.LABEL}.role", "oneoff")
    name = kwargs["name"] = kwargs.get("name") or f"{names.CONTAINER}-{role}-{uuid.uuid4().hex[:8]}"

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
