"""HACKING.md's map of the house has a line for each folder of the repository, and names no
folder that is not there. No Docker."""

from __future__ import annotations

import re
import subprocess

from imdbox import names

ROOT = names.REPO_ROOT


def folders() -> set[str]:
    """The repository's folders, from git's list of its files (what a clone holds)."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {line.rsplit("/", 1)[0] for line in files.splitlines() if "/" in line}


def mapped() -> set[str]:
    section = (ROOT / "HACKING.md").read_text().split("## The house, a room a line", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([^`]+)/`:", section, re.M))


def out_of_step(tree: set[str], map_: set[str]) -> list[str]:
    return [f"no line for {f}" for f in sorted(tree - map_)] + [f"{f} is not there" for f in sorted(map_ - tree)]


def test_the_map_has_a_line_for_each_folder_and_no_other():
    assert not out_of_step(folders(), mapped()), f"HACKING.md's map: {out_of_step(folders(), mapped())}"


def test_twin_a_new_folder_and_a_gone_one_are_named():
    tree = folders() | {"worker/new"}
    assert out_of_step(tree - {"docs"}, mapped()) == ["no line for worker/new", "docs is not there"]
