"""The box's settings, one room: the file in the volume that says how the worker runs
(~/.imd-box/settings.env, written by worker/install.sh), its strict parser, and the
rules for runtimes and concurrency.

The file is two lines, `RUNTIMES=claude` (a comma list only for a worker that takes
one) and `CONCURRENCY=2` (1 to 4). Anything else in it is an error that names the
file and the fix, never a guess: worker/run.sh refuses the same texts
(tests/vectors/settings.json holds the cases both are held to).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from . import names
from .config import Config
from .errors import BoxError, SettingsError

PATH = f"{names.HOME}/.imd-box/settings.env"
# The runtimes box knows how to install a CLI for (worker/install.sh has the packages;
# worker/run.sh names the same three). Which of them the installed worker runs, and how
# many at once, its own help says.
RUNTIMES = ("claude", "codex", "grok")
DEFAULT_RUNTIME = "claude"
DEFAULT_CONCURRENCY = 2
KEYS = ("RUNTIMES", "CONCURRENCY")
_RUNTIMES_VALUE = re.compile(r"[a-z]+(,[a-z]+)*")
_CONCURRENCY_VALUE = re.compile(r"[1-4]")


@dataclass(frozen=True)
class Settings:
    runtimes: tuple[str, ...] = (DEFAULT_RUNTIME,)
    concurrency: int = DEFAULT_CONCURRENCY
    saved: bool = False  # False: there is no file yet (before setup), these are the defaults

    def text(self) -> bytes:
        """The file as worker/install.sh writes it."""
        return f"RUNTIMES={','.join(self.runtimes)}\nCONCURRENCY={self.concurrency}\n".encode()


def fix(cfg: Config) -> str:
    return f"run `{cfg.command('runtime', 'claude')}` (or `{cfg.command('setup')}`) to write it again"


def parse(data: Optional[bytes], cfg: Config = Config()) -> Settings:
    """The settings from the file's bytes (None: no file, the defaults). Raises
    SettingsError, naming the file (in the seat's volume), the line and the fix, for
    anything else."""
    if data is None:
        return Settings()

    def bad(why: str) -> SettingsError:
        return SettingsError(f"{PATH} in the volume {cfg.volume} is damaged ({why}): {fix(cfg)}")

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise bad("it is not UTF-8 text") from None
    values: dict[str, str] = {}
    # Lines end at \n only: a \r or another separator is part of the line, hence an error.
    for number, line in enumerate(text.split("\n"), start=1):
        if line == "":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise bad(f"line {number} has no `=`")
        if key not in KEYS:
            raise bad(f"line {number}: unknown key {_shown(key)}")
        if key in values:
            raise bad(f"line {number}: {key} is given twice")
        values[key] = value
    missing = [k for k in KEYS if k not in values]
    if missing:
        raise bad(f"no {' or '.join(missing)}")
    runtimes = values["RUNTIMES"]
    if not _RUNTIMES_VALUE.fullmatch(runtimes):
        raise bad(f"bad RUNTIMES {_shown(runtimes)}")
    listed = runtimes.split(",")
    unknown = [r for r in listed if r not in RUNTIMES]
    if unknown:
        raise bad(f"unknown runtime {_shown(unknown[0])}")
    if len(set(listed)) != len(listed):
        raise bad("a runtime is named twice")
    if not _CONCURRENCY_VALUE.fullmatch(values["CONCURRENCY"]):
        raise bad(f"bad CONCURRENCY {_shown(values['CONCURRENCY'])}, not 1 to 4")
    return Settings(tuple(listed), int(values["CONCURRENCY"]), saved=True)


def _shown(value: str, limit: int = 24) -> str:
    """A value from the file, printable and short, for the one error line."""
    shown = value if len(value) <= limit else value[:limit] + "…"
    return repr(shown)


def read(eng) -> Settings:
    """The saved settings, read from the seat's volume; a damaged file is a BoxError."""
    from . import volume

    return parse(volume.read_file(eng, PATH), eng.cfg)


def read_or_defaults(eng) -> Settings:
    """For commands that rewrite the file (setup, `box runtime NAME`): a damaged file
    counts as none, and its defaults fill in what the command does not say."""
    from . import ui, volume

    try:
        return parse(volume.read_file(eng, PATH), eng.cfg)
    except SettingsError as exc:
        ui.dim(f"({exc.args[0].removesuffix(': ' + fix(eng.cfg))}; box writes it again)")
        return Settings()


def parse_runtimes(text: str, cfg: Config = Config()) -> list[str]:
    wanted = [r.strip().lower() for r in text.split(",") if r.strip()]
    if not wanted:
        raise BoxError(f"name at least one runtime, e.g. `{cfg.command('runtime', 'claude')}`", code=2)
    unknown = [r for r in wanted if r not in RUNTIMES]
    if unknown:
        raise BoxError(f"unknown runtime {', '.join(unknown)}: choose from {', '.join(RUNTIMES)}", code=2)
    return list(dict.fromkeys(wanted))


def check_concurrency(value: int) -> int:
    if not 1 <= value <= 4:
        raise BoxError(f"concurrency must be 1 to 4 (got {value})", code=2)
    return value
