"""HACKING.md's map of the house has a line for each folder of the repository and names no
folder that is not there; under the rooms whose every file a newcomer looks for, it names each
file; and every path it names is there. No Docker."""

from __future__ import annotations

import re
import subprocess

from imdbox import names

ROOT = names.REPO_ROOT
# The rooms whose every file the map names: box's modules and what runs as imd in the box.
EVERY_FILE = ("imdbox", "imdbox/check", "worker")
# A path of the repository's, as the map writes it: relative, with a folder in it.
PATH = re.compile(r"^\.?[\w-][\w.-]*(/[\w.-]+)+/?$")


def tracked() -> list[str]:
    """The repository's files, from git's list (what a clone holds)."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return files.splitlines()


def folders() -> set[str]:
    return {line.rsplit("/", 1)[0] for line in tracked() if "/" in line}


def the_map() -> str:
    return (ROOT / "HACKING.md").read_text().split("## The house, a room a line", 1)[1].split("\n## ", 1)[0]


def rooms(map_: str) -> dict[str, str]:
    """Each room's line, and the lines under it, by the room's folder."""
    items = re.split(r"^- ", map_, flags=re.M)[1:]
    return {m.group(1): item for item in items if (m := re.match(r"`([^`]+)/`:", item))}


def out_of_step(tree: set[str], map_: set[str]) -> list[str]:
    return [f"no line for {f}" for f in sorted(tree - map_)] + [f"{f} is not there" for f in sorted(map_ - tree)]


def unnamed(files: list[str], by_room: dict[str, str]) -> list[str]:
    """The files of EVERY_FILE's rooms their room's lines do not name (by name or by path)."""
    missing = []
    for room in EVERY_FILE:
        named = set(re.findall(r"`([^`]+)`", by_room.get(room, "")))
        for f in files:
            folder, _, name = f.rpartition("/")
            if folder == room and not {name, f} & named:
                missing.append(f)
    return missing


def not_there(map_: str) -> list[str]:
    return sorted({t for t in re.findall(r"`([^`\s]+)`", map_) if PATH.match(t) and not (ROOT / t).exists()})


def test_the_map_has_a_line_for_each_folder_and_no_other():
    assert not out_of_step(folders(), set(rooms(the_map()))), (
        f"HACKING.md's map: {out_of_step(folders(), set(rooms(the_map())))}"
    )


def test_twin_a_new_folder_and_a_gone_one_are_named():
    tree = folders() | {"worker/new"}
    assert out_of_step(tree - {"docs"}, set(rooms(the_map()))) == ["no line for worker/new", "docs is not there"]


def test_the_map_names_every_file_of_its_rooms_and_only_paths_that_are_there():
    assert not unnamed(tracked(), rooms(the_map())), unnamed(tracked(), rooms(the_map()))
    assert not not_there(the_map()), not_there(the_map())


def test_twin_a_new_module_and_a_gone_path_are_named():
    files = [*tracked(), "imdbox/new.py", "worker/new"]
    assert unnamed(files, rooms(the_map())) == ["imdbox/new.py", "worker/new"]
    gone = the_map().replace("`worker/hands/git`", "`worker/hands/gone`")
    assert not_there(gone) == ["worker/hands/gone"]
