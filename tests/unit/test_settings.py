"""settings.env: box's parser (imdbox/settings.py) and worker/run.sh's agree on every
case of tests/vectors/settings.json, and both refuse what box did not write, naming
the file and the fix, rather than start with guessed defaults. No Docker needed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from imdbox import errors, names, runflags, settings

RUN = names.REPO_ROOT / "worker" / "run.sh"
CASES = json.loads((Path(__file__).parents[1] / "vectors" / "settings.json").read_text())["cases"]


def _bytes(case):
    if "hex" in case:
        return bytes.fromhex(case["hex"])
    return None if case["text"] is None else case["text"].encode()


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_python_parser(case):
    data = _bytes(case)
    if "ok" in case:
        got = settings.parse(data)
        assert (",".join(got.runtimes), got.concurrency) == tuple(case["ok"])
        assert got.saved == (data is not None)
    else:
        with pytest.raises(errors.SettingsError) as caught:
            settings.parse(data)
        message = str(caught.value)
        assert case["error"] in message and "damaged" in message
        assert settings.PATH in message and "box runtime claude" in message  # the file and the fix
        assert "\n" not in message


@pytest.fixture(scope="module")
def stub_imd(tmp_path_factory):
    """An `imd` that prints how it was started; its help takes a runtime list."""
    bindir = tmp_path_factory.mktemp("bin")
    (bindir / "imd").write_text(
        '#!/bin/sh\nif [ "$1" = help ]; then echo "  --runtime <id,...>  which agents"; exit 0; fi\necho "imd $*"\n'
    )
    (bindir / "imd").chmod(0o755)
    return bindir


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_run_sh(case, stub_imd, tmp_path):
    data = _bytes(case)
    if data is not None:
        (tmp_path / ".imd-box").mkdir()
        (tmp_path / ".imd-box" / "settings.env").write_bytes(data)
    env = {"HOME": str(tmp_path), "PATH": f"{stub_imd}:/usr/bin:/bin", "LANG": os.environ.get("LANG", "C.UTF-8")}
    r = subprocess.run(["bash", str(RUN)], env=env, capture_output=True, text=True, errors="replace", timeout=20)
    if "ok" in case:
        runtimes, concurrency = case["ok"]
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == f"imd start --auto-update --runtime {runtimes} --concurrency {concurrency}"
    else:
        assert r.returncode == 1 and r.stdout == "", (r.stdout, r.stderr)
        line = r.stderr.strip()
        assert "\n" not in line, line
        assert case["error"] in line and "damaged" in line, line
        assert line.startswith("imd-box: ") and line.endswith("the worker was not started"), line
        assert "/.imd-box/settings.env" in line and "box runtime claude" in line, line


def test_run_sh_names_the_box_command_of_its_seat(stub_imd, tmp_path):
    """A seat's box tells the user the seat's command: a plain `box setup` would act on
    the seat without a name."""
    (tmp_path / ".imd-box").mkdir()
    (tmp_path / ".imd-box" / "settings.env").write_bytes(b"RUNTIMES=claude\n")
    env = {"HOME": str(tmp_path), "PATH": f"{stub_imd}:/usr/bin:/bin", runflags.BOX_COMMAND_ENV: "box --seat alice"}
    r = subprocess.run(["bash", str(RUN)], env=env, capture_output=True, text=True, timeout=20)
    assert r.returncode == 1, r.stderr
    assert "run 'box --seat alice runtime claude' (or 'box --seat alice setup') on your Mac" in r.stderr, r.stderr
    env["PATH"] = "/usr/bin:/bin"  # no imd
    r = subprocess.run(["bash", str(RUN)], env=env, capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and "not installed in the volume: run 'box --seat alice setup' first" in r.stderr, r.stderr


def test_the_file_box_writes_is_what_install_sh_writes():
    # install.sh: printf 'RUNTIMES=%s\nCONCURRENCY=%s\n'
    written = settings.Settings(("claude",), 2, True).text()
    assert written == b"RUNTIMES=claude\nCONCURRENCY=2\n"
    assert settings.parse(written) == settings.Settings(("claude",), 2, True)
    assert "printf 'RUNTIMES=%s\\nCONCURRENCY=%s\\n'" in (names.REPO_ROOT / "worker" / "install.sh").read_text()
