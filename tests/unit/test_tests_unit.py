"""The tests' own house: tests/unit needs no Docker and tests/world the real engine; what tests
share lives in tests/harness (or tests/fake_worker), so no test module imports another; and
no test in tests/unit asks for a fixture of the world's (tests/conftest.py). No Docker: the
tests' source is read, not run."""

from __future__ import annotations

import ast
from pathlib import Path

from imdbox import names

TESTS = names.REPO_ROOT / "tests"
FOLDERS = ("unit", "world")
# tests/conftest.py's fixtures that make or attach to the engine, the image or the topology.
THE_WORLDS = {"docker_client", "box_image", "topology", "feed", "set_up", "registry", "test_volume", "agents"}


def modules() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (TESTS / folder).rglob("*.py"))


def imported(source: str, package: str) -> set[str]:
    """Every module a source names in an import, dotted from the repository's root (a relative
    import resolved against `package`), and for `from M import a`, `M.a` too (a may be a module)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found |= {module, *(f"{module}.{alias.name}" for alias in node.names)}
    return found


def imported_tests(source: str, package: str) -> set[str]:
    """The test modules (a `test_*` part under tests) a source imports."""
    named = imported(source, package)
    return {m for m in named if m.startswith("tests.") and any(p.startswith("test_") for p in m.split("."))}


def world_fixtures_asked(source: str) -> set[str]:
    """The world's fixtures a module's tests and fixtures take as arguments, or name in
    usefixtures or getfixturevalue, less those the module makes itself (a fixture of its own)."""
    asked, own = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and (node.name.startswith("test_") or node.decorator_list):
            asked |= {a.arg for a in node.args.args + node.args.kwonlyargs}
            own |= {node.name} if node.decorator_list else set()
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("usefixtures", "getfixturevalue"):
            asked |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return (asked - own) & THE_WORLDS


def package_of(path: Path) -> str:
    return ".".join(path.relative_to(names.REPO_ROOT).parent.parts)


def test_the_tests_are_in_unit_and_world_and_none_beside_them():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []
    assert all(p.name.startswith("test_") or p.name in ("__init__.py", "conftest.py") for p in modules()), modules()
    assert len([p for p in modules() if p.name.startswith("test_")]) > 50


def test_no_test_module_imports_another():
    found = {str(p.relative_to(TESTS)): imported_tests(p.read_text(), package_of(p)) for p in modules()}
    assert not {path: mods for path, mods in found.items() if mods}, "move what they share into tests/harness"


def test_twin_each_way_a_test_module_names_another_is_seen():
    package = "tests.world"
    assert imported_tests("from tests.world.test_check import patched_image", package)
    assert imported_tests("from tests.unit import test_lifecycle_unit as lifecycle", package)
    assert imported_tests("import tests.unit.test_cli_unit", package)
    assert imported_tests("from .test_check import jail_with", package) == {
        "tests.world.test_check",
        "tests.world.test_check.jail_with",
    }
    assert imported_tests("from ..unit import test_cli_unit", package)
    # The harness's and box's own modules are not tests.
    assert not imported_tests("from tests.harness.twins import patched_image\nimport imdbox.check", package)


def test_no_unit_test_asks_for_the_engine():
    unit = sorted((TESTS / "unit").rglob("test_*.py"))
    asked = {str(p.relative_to(TESTS)): world_fixtures_asked(p.read_text()) for p in unit}
    assert not {path: fixtures for path, fixtures in asked.items() if fixtures}, "it belongs in tests/world"


def test_twin_a_unit_test_that_asks_for_the_engine_is_seen():
    assert world_fixtures_asked("def test_x(docker_client, tmp_path): pass") == {"docker_client"}
    assert world_fixtures_asked('pytestmark = pytest.mark.usefixtures("box_image")') == {"box_image"}
    assert world_fixtures_asked("@pytest.fixture\ndef box(agents): pass") == {"agents"}
    assert world_fixtures_asked("def test_x(world, tmp_path): pass") == set()  # the fake engine's
    assert world_fixtures_asked("def helper(feed): pass") == set()  # not a test's nor a fixture's
    assert world_fixtures_asked("@pytest.fixture\ndef feed(tmp_path): pass\ndef test_x(feed): pass") == set()
