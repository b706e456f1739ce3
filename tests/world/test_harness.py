"""The harness against the real engine (tests/harness/machine.py): the engine watch asks it and
is answered, and the worker box slots are as many as the engine takes boxes. Without an engine:
tests/unit/test_harness_unit.py."""

from __future__ import annotations

import os
import threading

import pytest

from tests.harness.machine import EngineWatch


def test_the_real_engine_answers_the_watch(docker_client):
    hung: list[str] = []
    watch = EngineWatch.of_engine(hung.append, every=0.01, misses=1, timeout=30).start()
    threading.Event().wait(0.5)
    watch.stop()
    assert hung == []


def test_worker_slots_are_as_many_as_the_engine_takes_boxes(docker_client, tmp_path, monkeypatch):
    from imdbox.runflags import EngineLimits
    from tests.harness import machine

    monkeypatch.setattr(machine, "SLOT_PATH", str(tmp_path / "slot-{}.lock"))  # not the run's own
    monkeypatch.setattr(machine, "SLOT_WAIT", 0.5)
    limits = EngineLimits.from_info(docker_client.info())
    count = machine.slot_count(docker_client)
    # As many boxes as `box start` lets run side by side (each cap, with the others', fits).
    assert count * limits.box_memory <= limits.memory < (count + 1) * limits.box_memory
    held = [machine.worker_slot(docker_client) for _ in range(count)]
    with pytest.raises(AssertionError, match="no worker box slot"):
        machine.worker_slot(docker_client)
    os.close(held.pop())
    held.append(machine.worker_slot(docker_client))  # a freed slot is taken again
    for slot in held:
        os.close(slot)


def test_a_tests_slots_are_one_per_box_and_freed_at_its_end(docker_client, tmp_path, monkeypatch):
    from tests.harness import machine

    monkeypatch.setattr(machine, "SLOT_PATH", str(tmp_path / "slot-{}.lock"))
    machine.hold_worker_slot(docker_client, ("volume", None))
    machine.hold_worker_slot(docker_client, ("volume", None))  # the same box again: no second slot
    machine.hold_worker_slot(docker_client, ("volume", "b"))  # a seat's box: one more
    assert len(machine._held) == 2
    machine.free_worker_slots()
    assert machine._held == {}
    # Freed: every slot can be taken again, without waiting.
    monkeypatch.setattr(machine, "SLOT_WAIT", 0)
    for _ in range(machine.slot_count(docker_client)):
        machine.hold_worker_slot(docker_client, object())
    machine.free_worker_slots()
