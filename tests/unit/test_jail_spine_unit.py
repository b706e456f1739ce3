"""worker/jail reads as its own table of contents: its rooms (worker/jail.d) define functions and
run nothing when sourced, the state they share is declared once in worker/jail, and every other
variable a room assigns is its own (`local`). A room's loop once overwrote the name the jail's
one line says (tests/world/test_jail_runs.py): this keeps that class of mistake out. No Docker."""

from __future__ import annotations

import re
import subprocess

import pytest

from imdbox import names

ROOT = names.REPO_ROOT
ROOMS = sorted((ROOT / "worker" / "jail.d").iterdir())
JAIL = (ROOT / "worker" / "jail").read_text()
# `name=value`, `name+=value`, `name[i]=value`, and what `read` and `for` assign.
ASSIGNED = re.compile(r"(?:^|[;&|(]\s*|\bthen\s+|\bdo\s+|\belse\s+)([A-Za-z_]\w*)(?:\[[^]]*\])?\+?=")
# read's options: those that take a value (-d, -t, -u, -n, -N, -p) take the next word.
READ = re.compile(r"\bread\b(?:\s+(?:-[a-zA-Z]*[dtunNp]\s+\S+|-[a-zA-Z]+))*((?:\s+[A-Za-z_]\w*)+)")
FOR = re.compile(r"\bfor\s+([A-Za-z_]\w*)\s+in\b")
FD = re.compile(r"\{([A-Za-z_]\w*)\}[<>]")


def setters() -> dict[str, set[str]]:
    """The state worker/jail declares, each with the rooms that may set it (in brackets)."""
    found = re.findall(r"^([a-z_]+)=.*?#[^\n]*?(?:\[([^]]*)\])?$", JAIL, re.M)
    return {var: {r.strip() for r in rooms.split(",") if r.strip()} for var, rooms in found}


def strays(room: str, text: str) -> set[str]:
    """What `room` assigns that is neither its own nor state the jail lets it set."""
    own = {word.split("=")[0] for line in re.findall(r"^\s*local\s+(.*)$", text, re.M) for word in line.split()}
    assigned = set()
    for line in code_lines(text):
        line = re.sub(r"'[^']*'", "''", line)  # a single-quoted text assigns nothing
        assigned |= set(ASSIGNED.findall(line)) | set(FOR.findall(line)) | set(FD.findall(line))
        for names_ in READ.findall(line):
            assigned |= set(names_.split())
    assigned -= {"_", "IFS"}  # read's throwaway, and IFS for one command
    allowed = {var for var, rooms in setters().items() if room in rooms}
    return assigned - own - allowed


def code_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@pytest.mark.parametrize("room", ROOMS, ids=[r.name for r in ROOMS])
def test_a_room_defines_functions_only(room):
    for line in code_lines(room.read_text()):
        if not line.startswith((" ", "\t")):
            assert re.fullmatch(r"[a-z_]+\(\) \{|\}", line), f"{room.name} runs {line!r} when sourced"


@pytest.mark.parametrize("room", ROOMS, ids=[r.name for r in ROOMS])
def test_what_a_room_assigns_is_its_own_or_the_jails(room):
    stray = strays(room.name, room.read_text())
    assert not stray, f"{room.name} assigns {sorted(stray)}: make each local, or let it set the jail's state"


def test_twin_the_network_rooms_old_loop_is_caught():
    # The loop that once overwrote die()'s name, put back: the check names it.
    text = (ROOT / "worker" / "jail.d" / "network").read_text()
    old = text.replace('for alias in "${names[@]}"', 'for name in "${names[@]}"')
    assert old != text and strays("network", old) == {"name"}


def test_sourcing_the_rooms_runs_nothing():
    # Each room sourced alone, with no variable set and every unset one an error: nothing runs,
    # and only functions are left behind.
    for room in ROOMS:
        script = f"set -euo pipefail; . {room}; declare -F | sed 's/^declare -f //'"
        r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10)
        assert r.returncode == 0 and r.stderr == "", f"{room.name}: {r.stderr}"
        assert r.stdout.split(), f"{room.name} defines no function"


def nested_functions(text: str) -> list[str]:
    """Functions defined inside another one: each becomes a global of the jail once it runs."""
    return re.findall(r"^[ \t]+([a-z_]+)\(\) \{", text, re.M)


def shadows(text: str) -> set[str]:
    """The jail's shared state a room declares `local`: the room would read and set its own."""
    declared = {word.split("=")[0] for line in re.findall(r"^\s*local\s+(.*)$", text, re.M) for word in line.split()}
    return declared & set(setters())


def set_again(jail: str) -> set[str]:
    """The jail's state its own lines (not the rooms) assign at their top level more than once."""
    top = re.findall(r"^([a-z_]+)=", jail, re.M)
    return {var for var in set(top) if top.count(var) > 1 and var in setters()}


@pytest.mark.parametrize("room", ROOMS, ids=[r.name for r in ROOMS])
def test_a_room_defines_no_function_inside_another_and_shadows_no_state(room):
    text = room.read_text()
    assert not nested_functions(text), f"{room.name} defines {nested_functions(text)} inside a function"
    assert not shadows(text), f"{room.name} makes {sorted(shadows(text))} its own: the jail's state by that name"


def test_the_jails_state_is_declared_once():
    assert not set_again(JAIL), f"worker/jail sets {sorted(set_again(JAIL))} again after declaring it"


def test_twins_the_rooms_old_leftovers_are_caught():
    # codex_room's local login, state() and model_port() inside their rooms, hands= twice.
    codex = (
        (ROOT / "worker" / "jail.d" / "codex")
        .read_text()
        .replace("local options mode network hidden", "local options mode network login")
    )
    assert shadows(codex) == {"login"}
    home = (ROOT / "worker" / "jail.d" / "home").read_text()
    assert nested_functions(home.replace("state() {\n", "  state() {\n", 1)) == ["state"]
    assert set_again(
        JAIL.replace('case "$runtime" in git | forge) hands=', 'hands=\ncase "$runtime" in git | forge) hands=')
    ) == {"hands"}
