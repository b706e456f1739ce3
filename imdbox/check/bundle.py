"""The probe's parts (probe/*.mjs, ES modules of their own, each linted as one) as the one
script `box check` ships (`node --input-type=module -e <script>`): each part after the parts
it imports, as node would run them, its imports of the others gone, node's built-in modules
imported once at the top, `export` gone. The programs the probe hands to other processes
(probe/*.cjs, *.sh, the browser's page.html and page.js, line 17's connect.cjs: files of their own,
which the linters check) go in as strings where a part
says `const NAME = shipped("file");`. It reads these files, not any JS: what it does not know
how to put together it refuses, by name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

PROBE_DIR = Path(__file__).with_name("probe")
PROBE_MAIN = "main.mjs"
_IMPORT = re.compile(r'^import (?:(\w+)|\{ ([\w, ]+) \}) from "([^"]+)";$')
_PART = re.compile(r"^\./([\w-]+\.mjs)$")
_EXPORT = re.compile(r"^export (?:async function|function|const|let|class) (\w+)\b")
# A program the probe ships, by its file's name beside the parts (base.mjs `shipped` reads it
# when a part runs on its own).
_SHIPPED = re.compile(r'^((?:export )?const \w+ = )shipped\("([\w-]+\.(?:cjs|js|sh|html))"\);$')
_SHIPPED_CALL = re.compile(r"\bshipped\(")
# Each kind's whole-line comments, which the script leaves out (its size: see probe_source).
_COMMENT = {".cjs": "//", ".js": "//", ".sh": "#", ".html": None}


@dataclass(frozen=True)
class _Part:
    """One part: what it imports of the other parts ({file: names}) and of anything else
    ([(module, default or None, names)]), what it exports, and its lines less the imports."""

    parts: dict[str, list[str]]
    others: list[tuple[str, Optional[str], list[str]]]
    exports: set[str]
    body: list[str]


def _read_part(directory: Path, name: str) -> _Part:
    """A part's imports and body: its lines but its imports and the comment it opens with
    (what it is, for its reader: the script is for node), under a line that names it. An
    import over several lines or of another kind, a part imported but by its names, and an
    export but of a declaration are refused: this reads these files, not any JS."""
    parts: dict[str, list[str]] = {}
    others: list[tuple[str, Optional[str], list[str]]] = []
    exports: set[str] = set()
    body = [f"// {name}"]
    opening = True
    for n, line in enumerate((directory / name).read_text().splitlines(), 1):
        opening = opening and line.startswith("//")
        if opening:
            continue
        line = _inlined(directory, name, n, line)
        if line.startswith("export "):
            m = _EXPORT.match(line)
            if m is None:
                raise ValueError(f"{name}:{n}: an export of a declaration only (export const, function, ...): {line}")
            exports.add(m.group(1))
            body.append(line[len("export ") :])
            continue
        if not line.startswith("import "):
            body.append(line)
            continue
        m = _IMPORT.match(line)
        if m is None:
            raise ValueError(f"{name}:{n}: one import per line, of a default or of names: {line}")
        default, listed, module = m.groups()
        names_ = [x.strip() for x in (listed or "").split(",") if x.strip()]
        part = _PART.match(module)
        if part is None and module.startswith("."):
            raise ValueError(f'{name}:{n}: another part is imported as "./name.mjs": {line}')
        if part is None:
            others.append((module, default, names_))
        elif default or not all(re.fullmatch(r"\w+", x) for x in names_):
            raise ValueError(f"{name}:{n}: a part's own names only, not a default nor renamed: {line}")
        else:
            parts.setdefault(part.group(1), []).extend(names_)
    return _Part(parts, others, exports, body)


def _inlined(directory: Path, name: str, n: int, line: str) -> str:
    """The line, with a program it ships (`const X = shipped("file");`) as a string of the file's
    text, less its whole-line comments (a script's first line, its #!, stays; a page keeps every
    line). Any other call of `shipped` is refused: the script has no files beside it to read."""
    m = _SHIPPED.match(line)
    if m is None:
        said = line.lstrip().startswith(("//", "*", "/*")) or line.startswith("export const shipped")
        if _SHIPPED_CALL.search(line) and not said:
            raise ValueError(
                f'{name}:{n}: a program is shipped as its own line, `const NAME = shipped("file");`: {line}'
            )
        return line
    path = directory / m.group(2)
    if not path.is_file():
        raise ValueError(f"{name}:{n}: ships {m.group(2)}, which is not in {directory}")
    mark = _COMMENT[path.suffix]
    lines = path.read_text().splitlines()
    shebang = 1 if lines and lines[0].startswith("#!") else 0
    kept = lines[:shebang] + [x for x in lines[shebang:] if not (mark and x.lstrip().startswith(mark))]
    return f"{m.group(1)}{json.dumps(chr(10).join(kept) + chr(10))};"


def _read_parts(directory: Path, main: str) -> tuple[list[str], dict[str, _Part]]:
    """The parts `main` reaches by its imports of "./x.mjs", each after the parts it imports
    (in the order of its imports: as node would run them), and each part read. An import
    circle is refused, named; so is an import of a part that is not there, or of a name the
    part does not export."""
    order: list[str] = []
    read: dict[str, _Part] = {}
    within: list[str] = []  # the parts being read, each imported by the one before it

    def visit(name: str, by: str) -> None:
        if name in within:
            circle = " -> ".join([*within[within.index(name) :], name])
            raise ValueError(f"an import circle among the probe's parts: {circle}")
        if name in read:
            return
        if not (directory / name).is_file():
            raise ValueError(f"{by} imports {name}, which is not in {directory}")
        read[name] = part = _read_part(directory, name)
        within.append(name)
        for dep in part.parts:
            visit(dep, name)
        within.pop()
        order.append(name)

    visit(main, "the probe")
    for name in order:
        for dep, wanted in read[name].parts.items():
            missing = sorted(set(wanted) - read[dep].exports)
            if missing:
                raise ValueError(f"{name} imports from {dep} what it does not export: {', '.join(missing)}")
    return order, read


def probe_order(directory: Path = PROBE_DIR, main: str = PROBE_MAIN) -> list[str]:
    """The parts of the probe in the order they are put together: `main` last, every part
    after the parts it imports."""
    return _read_parts(directory, main)[0]


def probe_source(directory: Path = PROBE_DIR, main: str = PROBE_MAIN) -> str:
    """The parts as one script, each after those it imports (probe_order): each import of
    another part goes (its names are the script's own then), node's built-in modules are
    imported once at the top, `export` goes. A circle of imports is refused (node would
    run one, but a part could then meet another's names before they are set). Two parts
    that declare one name make a script node refuses: tests/unit/test_check_unit.py parses it."""
    order, read = _read_parts(directory, main)
    defaults: dict[str, str] = {}
    named: dict[str, list[str]] = {}
    for name in order:
        for module, default, names_ in read[name].others:
            if default and defaults.setdefault(module, default) != default:
                raise ValueError(f"{name} imports {module} as {default}, another part as {defaults[module]}: one name")
            if names_:
                have = named.setdefault(module, [])
                have += [x for x in names_ if x not in have]
    imports = [f'import {name} from "{module}";' for module, name in sorted(defaults.items())]
    imports += [f'import {{ {", ".join(names_)} }} from "{module}";' for module, names_ in sorted(named.items())]
    # Whole-line comments go: the script is one argument of node's, which Linux caps (128 KiB).
    body = (line for name in order for line in read[name].body if not line.lstrip().startswith("//"))
    return "\n".join([*imports, *body]) + "\n"
