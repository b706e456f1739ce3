"""worker/install.sh and worker/run.sh on this machine, with file:// feeds: no Docker,
nothing off the machine (npm installs local tarballs that have no dependencies).
The same scripts run inside the box in tests/test_cli_box.py."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from imdbox import names
from tests import fake_worker

INSTALL = names.REPO_ROOT / "worker" / "install.sh"
RUN = names.REPO_ROOT / "worker" / "run.sh"

pytestmark = pytest.mark.skipif(not shutil.which("npm"), reason="npm is not installed here")


@pytest.fixture
def feed(tmp_path):
    root = tmp_path / "feed"
    for name, data in fake_worker.default_feed().items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


def _env(home: Path, feed: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPM_CONFIG_", "npm_config_"))}
    env.update(
        HOME=str(home),
        NPM_CONFIG_PREFIX=str(home / ".npm-global"),
        NPM_CONFIG_CACHE=str(home / ".npm"),
        IDENTITYMD_HOME=str(home / ".identitymd"),
        PATH=f"{home / '.npm-global' / 'bin'}:{os.environ['PATH']}",
        IMD_WORKER_URL=f"file://{feed}/v1",
        IMD_CLAUDE_PACKAGE=str(feed / "npm" / "claude-code.tgz"),
        IMD_GROK_PACKAGE=str(feed / "npm" / "grok-cli.tgz"),
        IMD_BOX_BROWSER_MCP="/usr/local/lib/imd-box/browser/playwright-mcp",
    )
    env.update(extra)
    return env


def _sh(script: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=180)


def _imd_version(home: Path, env: dict) -> str:
    return subprocess.run(["imd", "--version"], env=env, capture_output=True, text=True).stdout.strip()


def test_install_verifies_then_installs(home, feed):
    env = _env(home, feed)
    r = _sh(INSTALL, env, "all")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "checksum verified" in r.stdout
    assert _imd_version(home, env) == "1.0.0-fake"
    assert (home / ".imd-box" / "settings.env").read_text() == "RUNTIMES=claude\nCONCURRENCY=2\n"
    assert '"version": "1.0.0-fake"' in (home / ".imd-box" / "worker-build.json").read_text().replace('":"', '": "')
    assert "registered with the worker" in r.stdout
    assert (home / ".npm-global" / "bin" / "claude").exists()
    for private in (home / ".identitymd", home / ".imd-box"):
        assert stat.S_IMODE(private.stat().st_mode) == 0o700, private  # what `box check` line 19 demands


def test_tampered_or_unlisted_tgz_is_refused_and_the_old_worker_stays(home, feed):
    env = _env(home, feed)
    assert _sh(INSTALL, env, "all").returncode == 0
    r = _sh(INSTALL, _env(home, feed, IMD_WORKER_URL=f"file://{feed}/tampered"), "all")
    assert r.returncode == 1
    assert "checksum mismatch for identitymd-worker.tgz" in r.stderr and "refusing to install" in r.stderr
    assert _imd_version(home, env) == "1.0.0-fake"
    (feed / "v2" / "SHA256SUMS").write_text("0" * 64 + "  something-else.tgz\n")
    r = _sh(INSTALL, _env(home, feed, IMD_WORKER_URL=f"file://{feed}/v2"), "all")
    assert r.returncode == 1 and "SHA256SUMS has no line for identitymd-worker.tgz" in r.stderr
    assert _imd_version(home, env) == "1.0.0-fake"
    r = _sh(INSTALL, _env(home, feed, IMD_WORKER_URL=f"file://{feed}/nothing-here"), "all")
    assert r.returncode == 1 and "could not download" in r.stderr
    assert _imd_version(home, env) == "1.0.0-fake"


def test_a_worker_without_tools_add_is_said_plainly(home, feed):
    r = _sh(INSTALL, _env(home, feed, IMD_WORKER_URL=f"file://{feed}/notools"), "all")
    assert r.returncode == 0, r.stderr
    assert "this worker has no 'imd tools add'" in r.stdout


def test_agents_mode_adds_and_removes_cli(home, feed):
    env = _env(home, feed)
    assert _sh(INSTALL, env, "all").returncode == 0
    r = _sh(INSTALL, _env(home, feed, IMD_BOX_RUNTIMES="claude,grok", IMD_BOX_CONCURRENCY="4"), "agents")
    assert r.returncode == 0, r.stderr
    assert (home / ".npm-global" / "bin" / "grok").exists()
    assert (home / ".imd-box" / "settings.env").read_text() == "RUNTIMES=claude,grok\nCONCURRENCY=4\n"
    r = _sh(INSTALL, _env(home, feed, IMD_BOX_RUNTIMES="claude"), "agents")
    assert r.returncode == 0 and "removing the grok CLI" in r.stdout, r.stderr
    assert not (home / ".npm-global" / "bin" / "grok").exists()
    r = _sh(INSTALL, _env(home, feed, IMD_BOX_CONCURRENCY="5"), "agents")
    assert r.returncode == 1 and "concurrency must be 1 to 4" in r.stderr


def test_run_sh_refuses_without_the_worker(home, feed):
    env = _env(home, feed, PATH="/usr/bin:/bin")
    r = _sh(RUN, env)
    assert r.returncode != 0
    assert "the worker (imd) is not installed" in r.stderr


def test_run_sh_starts_with_the_saved_settings(home, feed, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "imd").write_text('#!/bin/sh\necho "imd $*"\n')
    (bindir / "imd").chmod(0o755)
    env = _env(home, feed, PATH=f"{bindir}:/usr/bin:/bin")
    r = _sh(RUN, env)
    assert r.stdout.strip() == "imd start --auto-update --runtime claude --concurrency 2"
    (home / ".imd-box").mkdir()
    (home / ".imd-box" / "settings.env").write_text("RUNTIMES=claude,grok\nCONCURRENCY=3\n")
    r = _sh(RUN, env)
    assert r.stdout.strip() == "imd start --auto-update --runtime claude,grok --concurrency 3"
    (home / ".imd-box" / "settings.env").write_text("RUNTIMES=claude\nCONCURRENCY=0; rm -rf /\n")
    r = _sh(RUN, env)
    assert r.returncode == 1 and "bad CONCURRENCY" in r.stderr and r.stdout == ""


def test_fake_worker_doctor_and_pairing(home, feed):
    env = _env(home, feed)
    assert _sh(INSTALL, env, "all").returncode == 0
    doc = subprocess.run(["imd", "doctor"], env=env, capture_output=True, text=True)
    assert doc.returncode == 1 and "✗ not paired" in doc.stdout and "✓ runtime claude" in doc.stdout
    assert subprocess.run(["imd", "pair"], env=env, capture_output=True, text=True).returncode == 0
    doc = subprocess.run(["imd", "doctor"], env=env, capture_output=True, text=True)
    assert doc.returncode == 0 and "all good" in doc.stdout
    un = subprocess.run(["imd", "unlink"], env=env, capture_output=True, text=True)
    assert un.returncode == 0 and "its seat is free" in un.stdout
