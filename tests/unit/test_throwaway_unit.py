"""How a throwaway box goes (imdbox.throwaway.throwaway): removed by box, or, when it removes
itself once it ends (auto_remove) and its block ran to the end, only asked to end."""

from __future__ import annotations

import pytest

from imdbox.throwaway import throwaway


class Engine:
    """The calls throwaway makes of the SDK, recorded."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.api = self
        self.containers = self

    def create(self, **kwargs):
        self.calls.append(("create", kwargs.get("auto_remove", False)))
        return object()

    def kill(self, name, signal=None):
        self.calls.append(("kill", signal))

    def remove_container(self, name, force=False):
        self.calls.append(("remove", force))


def test_a_box_that_removes_itself_is_only_asked_to_end_once_its_block_is_done():
    eng = Engine()
    with throwaway(eng, {"auto_remove": True}, "imdt"):
        pass
    # SIGTERM: the engine answers a SIGKILL only once the box is down, which box check does not wait for.
    assert eng.calls == [("create", True), ("kill", "SIGTERM")]


def test_twin_a_box_that_does_not_remove_itself_is_removed():
    eng = Engine()
    with throwaway(eng, {}, "imdt"):
        pass
    assert eng.calls == [("create", False), ("remove", True)]


def test_a_box_that_removes_itself_is_removed_when_its_block_fails():
    # It may never have started, and the engine removes only a box that ran.
    eng = Engine()
    with pytest.raises(RuntimeError), throwaway(eng, {"auto_remove": True}, "imdt"):
        raise RuntimeError("the block failed")
    assert eng.calls == [("create", True), ("remove", True)]
