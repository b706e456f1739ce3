"""The `box` command without an engine: help and its speed, bad input, parsing,
the ./box bootstrap, and the installable package."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

import pytest

from imdbox import diagnose, engine, errors, inspection, install, names, settings, worker
from imdbox.config import Config
from imdbox.endpoint import Endpoint
from imdbox.errors import BoxError
from tests import fake_worker
from tests.harness.cli import cli_env, run_box
from tests.harness.fake_engine import REAL_HELP

ROOT = names.REPO_ROOT
COMMANDS = (
    "pull",
    "build",
    "setup",
    "check",
    "start",
    "stop",
    "logs",
    "status",
    "update",
    "shell",
    "runtime",
    "remove",
)


def box(*args: str, **env: str) -> subprocess.CompletedProcess:
    return run_box(*args, env=cli_env(**env), timeout=60)


def test_help_lists_every_command():
    r = box("--help")
    assert r.returncode == 0
    for cmd in COMMANDS:
        assert f"\n  {cmd} " in r.stdout, cmd


def test_help_does_not_import_docker_or_rich():
    code = (
        "import sys; sys.argv=['box','--help']\n"
        "from imdbox.cli import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "bad=[m for m in ('docker','rich','requests') if m in sys.modules]\n"
        "sys.stderr.write('LOADED:'+','.join(bad))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True, text=True, timeout=60)
    assert r.stderr.strip().endswith("LOADED:"), r.stderr


def test_help_is_fast():
    # Goal 0.3 s on a Mac; this machine is shared and loaded, so the bound here is loose
    # and the import-time measurement above is the real guard.
    best = min(_timed_help() for _ in range(3))
    assert best < 1.0, best


def _timed_help() -> float:
    started = time.monotonic()
    run_box("--help", timeout=60)
    return time.monotonic() - started


def test_an_engine_that_is_not_there_is_one_line_naming_it():
    for cmd in (["start"], ["stop"], ["status"], ["logs"], ["setup", "--no-shell"], ["pull"], ["remove", "--yes"]):
        r = box(*cmd, DOCKER_HOST="unix:///tmp/imdt-no-docker.sock")
        assert r.returncode == 1, (cmd, r.stdout, r.stderr)
        assert r.stderr.strip().splitlines() == [
            "box: Docker is not running at unix:///tmp/imdt-no-docker.sock (DOCKER_HOST) — start Docker Desktop, "
            "wait for it to say it is running, and try again"
        ], cmd


def test_unknown_runtime_and_bad_concurrency_need_no_engine():
    r = box("runtime", "claude,gemini", DOCKER_HOST="unix:///tmp/imdt-no-docker.sock")
    assert r.returncode == 2 and r.stderr.strip() == "box: unknown runtime gemini: choose from claude, codex, grok"
    r = box("runtime", "--concurrency", "0", DOCKER_HOST="unix:///tmp/imdt-no-docker.sock")
    assert r.returncode == 2 and "concurrency must be 1 to 4" in r.stderr


class _Nets:
    def __init__(self, driver):
        self.driver = driver

    def get(self, name):
        import docker.errors

        if self.driver is None:
            raise docker.errors.NotFound("no")
        return type("N", (), {"attrs": {"Driver": self.driver}})()


class _Client:
    def __init__(self, driver="bridge"):
        self.networks = _Nets(driver)


def _engine(client, network: str) -> engine.Engine:
    return engine.Engine(client, Config(network=network), Endpoint("unix:///nowhere", "a test"))


@pytest.mark.parametrize("value", ["host", "none", "container:imd-box"])
def test_network_override_refuses_host_namespaces(value):
    with pytest.raises(BoxError, match="is refused"):
        engine.network(_engine(_Client(), value))


def test_network_override_must_be_an_existing_bridge():
    assert engine.network(_engine(_Client("bridge"), "imdt-x")) == "imdt-x"
    with pytest.raises(BoxError, match="no such Docker network"):
        engine.network(_engine(_Client(None), "imdt-x"))
    with pytest.raises(BoxError, match="must be a bridge"):
        engine.network(_engine(_Client("macvlan"), "imdt-x"))


def test_parsers():
    assert settings.parse_runtimes("Claude, grok,claude") == ["claude", "grok"]
    with pytest.raises(BoxError):
        settings.parse_runtimes(" , ")
    assert settings.parse(b"RUNTIMES=claude,grok\nCONCURRENCY=3\n") == settings.Settings(("claude", "grok"), 3, True)
    assert settings.parse(None) == settings.Settings()  # no file yet: the defaults
    with pytest.raises(errors.SettingsError, match="bad CONCURRENCY '9'"):
        settings.parse(b"RUNTIMES=claude\nCONCURRENCY=9\n")
    since = inspection.parse_since("10m")
    assert since.tzinfo is not None
    with pytest.raises(BoxError):
        inspection.parse_since("soon")
    logs = "imd-box firewall: walls up\nimd-box: bad CONCURRENCY in x; the worker was not started\n[FATAL tini] y"
    assert diagnose.last_error(logs).startswith("imd-box: bad CONCURRENCY")


def test_last_error_names_what_the_worker_said_whichever_stream_came_first():
    """The worker's stderr and stdout reach Docker's log in either order (seen in CI: the
    error first, then an info line): its error is named either way, never one of an
    earlier start, and nothing is made up when it said nothing wrong."""
    start = "imd-box firewall: walls up and verified\nimd-box: starting the worker: imd start\n"
    error = "this machine is not paired yet. Run `imd pair` from an interactive shell."
    info = "2026-12-01T09:29:24.778Z runtimes: claude 0.0.1-fake (using claude, as asked)"
    end = "imd-box: the worker exited with code 1"
    said = f"{end} (the worker said: {error})"
    assert diagnose.last_error(f"{start}{info}\n{error}\n{end}\n") == said
    assert diagnose.last_error(f"{start}{error}\n{info}\n{end}\n") == said
    assert diagnose.last_error(f"{start}{info}\n{end}\n") == end
    assert diagnose.last_error(f"{start}{error}\n{end}\n{start}{info}\n{end}\n") == end  # a restart: its own only


def test_env_overrides_names():
    env = {"IMD_BOX_IMAGE": "a:1", "IMD_BOX_CONTAINER": "b", "IMD_BOX_VOLUME": "c", "IMD_BOX_NETWORK": "d"}
    cfg = Config.from_env(env, seat="x")
    assert (cfg.image, cfg.container, cfg.volume, cfg.network) == ("a:1", "b-x", "c-x", "d")
    assert Config.from_env({}) == Config()  # unset: the defaults


def test_nothing_reads_the_environment_on_import():
    """The CLI makes the one Config from the environment; no module of imdbox/ reads it when
    imported (a test or a second seat would otherwise see the first one's names)."""
    readers = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in sorted((ROOT / "imdbox").rglob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if not line.startswith((" ", "\t", "#")) and ("os.environ" in line or "getenv" in line)
    ]
    assert readers == []


def test_wheel_ships_seccomp_and_the_box_command(tmp_path):
    leftovers = [ROOT / "build", ROOT / "imd_box.egg-info"]
    existed = {p: p.exists() for p in leftovers}
    try:
        _check_wheel(tmp_path)
    finally:
        for path, was_there in existed.items():
            if not was_there and path.exists():
                shutil.rmtree(path, ignore_errors=True)


def _check_wheel(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    wheel = next(tmp_path.glob("imd_box-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        listing = z.namelist()
        assert "imdbox/seccomp.json" in listing and "imdbox/cli.py" in listing
        assert z.read("imdbox/seccomp.json") == (ROOT / "seccomp.json").read_bytes()
        entry = next(n for n in listing if n.endswith("entry_points.txt"))
        assert "box = imdbox.cli:main" in z.read(entry).decode()


def test_box_script_makes_its_environment_then_runs(tmp_path):
    """./box from a fresh clone: a private virtualenv (from PyPI), said out loud, then the command."""
    venv = tmp_path / "venv"
    env = {**os.environ, "IMD_BOX_VENV": str(venv)}
    first = subprocess.run([str(ROOT / "box"), "--help"], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "first run: making a private Python environment" in first.stderr
    assert "Usage: box" in first.stdout
    assert (venv / ".box-requirements.txt").exists()
    again = subprocess.run([str(ROOT / "box"), "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stderr == "" and "Usage: box" in again.stdout


def test_the_workers_help_says_what_it_runs():
    real = worker.parse_help(REAL_HELP)
    assert real == worker.WorkerHelp("0.1.0+47df9c68", ("claude", "codex"), takes_list=False)
    assert worker.runtime_problem(["codex"], real) is None
    assert worker.runtime_problem(["claude", "codex"], real) == (
        "this worker runs one runtime at a time; name one of: claude, codex"
    )
    assert worker.runtime_problem(["grok"], real) == (
        "the installed worker cannot run grok (it runs one of claude, codex, one at a time)"
    )
    assert worker.parse_help("no such line") == worker.WorkerHelp(None, (), False)
    assert "names no --runtime" in worker.runtime_problem(["claude"], worker.parse_help(""))


def test_the_stand_ins_help_reads_the_same(tmp_path):
    """The tests' stand-in worker prints the help box reads (node runs it here)."""
    if not shutil.which("node"):
        pytest.skip("node is not installed here")
    for folder, expected in (
        ("v1", (("claude", "codex"), False)),
        ("multi", (("claude", "codex", "grok"), True)),
    ):
        spec = {k: v for k, v in fake_worker.RELEASES[folder].items() if k != "tamper"}
        pkg = tmp_path / folder
        with tarfile.open(fileobj=io.BytesIO(fake_worker.worker_tgz(**spec)), mode="r:gz") as tar:
            tar.extractall(pkg, filter="data")
        out = subprocess.run(
            ["node", str(pkg / "package" / "dist" / "cli.js"), "help"], capture_output=True, text=True, timeout=30
        ).stdout
        parsed = worker.parse_help(out)
        assert (parsed.runtimes, parsed.takes_list) == expected, out
        assert parsed.version == fake_worker.daemon_version(folder)


def test_the_grok_key_is_typed_hidden_or_read_from_a_file(monkeypatch, tmp_path):
    monkeypatch.setattr(install, "_grok_signed_in", lambda client: False)
    assert install.grok_key(None, ["claude"], None) is None  # grok not wanted: nothing asked
    assert install.grok_key(None, ["grok"], "xai-given") == "xai-given"
    monkeypatch.setattr(install.ui, "is_tty", lambda: False)
    with pytest.raises(BoxError, match="pass --grok-key-file FILE"):
        install.grok_key(None, ["claude", "grok"], None)
    asked = {}

    def prompt(text, **kwargs):
        asked.update(kwargs)
        return "  xai-typed  \n"

    import typer

    monkeypatch.setattr(install.ui, "is_tty", lambda: True)
    monkeypatch.setattr(typer, "prompt", prompt)
    assert install.grok_key(None, ["grok"], None) == "xai-typed"
    assert asked["hide_input"] is True
    monkeypatch.setattr(install, "_grok_signed_in", lambda client: True)
    assert install.grok_key(None, ["grok"], None) is None  # signed in already
    key_file = tmp_path / "key"
    key_file.write_text("xai-from-file\n")
    assert install.read_key_file(key_file) == "xai-from-file"
    for bad in ("", "two words", "line\nline"):
        key_file.write_text(bad)
        with pytest.raises(BoxError, match="must hold the xAI API key alone"):
            install.read_key_file(key_file)
    with pytest.raises(BoxError, match="cannot read the key file"):
        install.read_key_file(tmp_path / "missing")


def test_no_module_of_the_package_is_over_350_lines():
    """A room that grows past this holds more than one concern: split it by concern."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / "imdbox").rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 350
    }
    assert long == {}
