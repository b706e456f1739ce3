"""What box says of the login broker (imdbox/broker.py), and the owner's choice it passes down."""

from __future__ import annotations

import json
from types import SimpleNamespace

import docker.errors
import pytest

from imdbox import broker, layout
from imdbox.config import Config


class Box:
    """A running box whose broker answers `out` (exit `code`)."""

    def __init__(self, out: str, code: int = 0):
        self.out, self.code, self.ran = out, code, []

    def exec_run(self, command, **_):
        self.ran.append(command)
        return SimpleNamespace(exit_code=self.code, output=self.out.encode())


def status(**said) -> str:
    return json.dumps({"mode": "broker", "login": "held", "runs": 0, "refreshes": 0, "problem": "", **said})


@pytest.mark.parametrize(
    "out, code, line, wrong",
    [
        (status(runs=3), 0, "held by the login broker; Claude jobs hold stand-ins (3 now)", False),
        (status(mode="jail"), 0, "in each Claude job's jail (IMD_BOX_LOGIN=jail: your choice)", False),
        (status(login="none"), 0, "none in the box (log in with `claude` in `box shell`)", False),
        ("", 7, "the login broker does not answer: run `box start` again", True),
        ("<html>", 0, "the login broker does not answer: run `box start` again", True),
    ],
)
def test_the_status_line(out, code, line, wrong):
    box = Box(out, code)
    assert broker.line(box) == (line, wrong)
    assert box.ran[0][-2:] == [layout.BROKER_ASK, "status"]


def test_a_problem_is_said_and_its_text_made_safe():
    said, wrong = broker.line(Box(status(problem="refused\x1b[2J (400 invalid_grant)")))
    assert wrong and said.startswith("held by the login broker") and "PROBLEM: refused" in said
    assert "\x1b" not in said, said


@pytest.mark.parametrize("value, jail", [("jail", True), ("broker", False), ("", False), ("JAIL", False)])
def test_the_owners_choice(value, jail):
    assert Config.from_env({"IMD_BOX_LOGIN": value}).login_in_jail is jail


def test_refused_paths_are_named():
    refused = [f"GET api.anthropic.com/api/imdt-{i}\x1b[2J" for i in range(7)]
    said, wrong = broker.line(Box(status(refused=refused)))
    assert wrong and "a run's login refused for GET api.anthropic.com/api/imdt-0" in said, said
    assert "/api/imdt-4" in said and "/api/imdt-5" not in said and "and 2 more" in said, said
    assert "\x1b" not in said and "not on the broker's list (docs/broker.md)" in said, said


class Restarting(Box):
    """A box Docker began restarting between `box status`'s look and its exec."""

    def exec_run(self, command, **_):
        raise docker.errors.APIError(
            "409", explanation="Container 2e6b is restarting, wait until the container is running"
        )


def test_a_box_that_restarts_meanwhile_is_a_line_not_a_crash():
    said, wrong = broker.line(Restarting(""))
    assert wrong and said == (
        "the login broker could not be asked (the engine: Container 2e6b is restarting, wait until the container is running)"
    )
