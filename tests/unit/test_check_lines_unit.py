"""Every line of `box check` (imdbox/check/walls.py WALLS) has a test that breaks it, found as
the tests name the line they break: a test named for its number (`test_7_...`, `test_7_13_22_...`,
`test_check_line_16_...`), a parametrized case named so (`"7_the_mac"`), or an
`expect_failed(report, {"mac", ...}, ...)` naming its id. A new line gets its breaking twin
with it. No Docker: the tests' source is read, not run."""

from __future__ import annotations

import ast
import re

from imdbox import names
from imdbox.check.walls import WALLS, Wall

TESTS = names.REPO_ROOT / "tests"
NUMBERED = re.compile(r"^(?:test_(?:\w+_)?line_|test_)?((?:\d+_)+)")


def numbers(name: str) -> set[int]:
    """The line numbers a test's or a case's name starts with (`test_7_13_...`, `7_the_mac`)."""
    found = NUMBERED.match(name)
    return {int(n) for n in found.group(1).split("_") if n} if found else set()


def strings(node: ast.AST | None) -> set[str]:
    """The string constants of a literal set, list, tuple or dict's keys."""
    if isinstance(node, ast.Dict):
        return strings(ast.List(elts=[k for k in node.keys if k is not None]))
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def case_names(test: ast.FunctionDef, module: dict[str, ast.AST]) -> set[str]:
    """The ids of a test's parametrized cases: its `ids=`, or the keys or strings it is
    parametrized over (named at the module's top, or written in place)."""
    cases: set[str] = set()
    for mark in test.decorator_list:
        if not (isinstance(mark, ast.Call) and getattr(mark.func, "attr", "") == "parametrize"):
            continue
        values = mark.args[1] if len(mark.args) > 1 else None
        cases |= strings(module.get(values.id) if isinstance(values, ast.Name) else values)
        cases |= set().union(*(strings(k.value) for k in mark.keywords if k.arg == "ids"))
    return cases


def named_as_broken(source: str) -> tuple[set[int], set[str]]:
    """The line numbers and ids one test module names as the lines its tests break."""
    tree = ast.parse(source)
    module = {
        t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
    }
    nums: set[int] = set()
    ids: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            nums |= numbers(node.name).union(*(numbers(c) for c in case_names(node, module)))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "expect_failed" and len(node.args) > 1:
            ids |= strings(node.args[1])
    return nums, ids


def unbroken(walls: list[Wall], sources: list[str]) -> list[str]:
    """The lines no test names as one it breaks, as `N id`."""
    nums: set[int] = set()
    ids: set[str] = set()
    for source in sources:
        more_nums, more_ids = named_as_broken(source)
        nums, ids = nums | more_nums, ids | more_ids
    return [f"{w.number} {w.id}" for w in walls if w.number not in nums and w.id not in ids]


def test_every_check_line_has_a_test_that_breaks_it():
    sources = [p.read_text() for p in sorted(TESTS.rglob("test_*.py"))]
    missing = unbroken(WALLS, sources)
    assert not missing, f"box check lines no test breaks: {missing}"


def test_twin_a_line_no_test_names_is_named():
    new = Wall(99, "new_wall", "a new wall", "a new wall")
    one = "def test_9_x(check):\n    expect_failed(report, {'mac'}, True)\n"
    cases = "C = {'8_lan': 1}\n@pytest.mark.parametrize('case', C)\ndef test_opened(case): pass\n"
    walls = [w for w in WALLS if w.number in (7, 8, 9, 10)] + [new]
    assert unbroken(walls, [one, cases]) == ["10 metadata", "99 new_wall"]
