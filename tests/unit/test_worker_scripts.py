"""worker/install.sh and worker/run.sh on this machine, with file:// feeds, and the
stand-in worker they install (tests/fake_worker) held to the real worker's
contract: no Docker, nothing off the machine (npm installs local tarballs that
have no dependencies). The same scripts run inside the box in tests/world/test_cli_box.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from imdbox import browser, install, names, worker
from tests import fake_worker

INSTALL = names.REPO_ROOT / "worker" / "install.sh"
RUN = names.REPO_ROOT / "worker" / "run.sh"
V1 = fake_worker.daemon_version("v1")

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


@pytest.fixture
def probe_ok(tmp_path):
    """A stand-in for the browser's launcher that answers the worker's probe."""
    script = tmp_path / "mcp-ok"
    script.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "stub 1.0" && exit 0\nexit 64\n')
    script.chmod(0o755)
    return script


def _env(home: Path, feed: Path, **extra: str) -> dict:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("NPM_CONFIG_", "npm_config_", "IMD_", "IDENTITYMD_"))
    }
    env.update(
        HOME=str(home),
        NPM_CONFIG_PREFIX=str(home / ".npm-global"),
        NPM_CONFIG_CACHE=str(home / ".npm"),
        IDENTITYMD_HOME=str(home / ".identitymd"),
        PATH=f"{home / '.npm-global' / 'bin'}:{os.environ['PATH']}",
        IMD_WORKER_URL=f"file://{feed}/v1",
        IMD_BOX_RUNTIMES="claude",  # what box hands in by default (imdbox/settings.py)
        IMD_BOX_CONCURRENCY="2",
        # The worker's view is the box's (bubblewrap, the door): here its commands run as they are.
        IMD_BOX_VIEW="/usr/bin/env",
        IMD_CLAUDE_PACKAGE=str(feed / "npm" / "claude-code.tgz"),
        IMD_CODEX_PACKAGE=str(feed / "npm" / "codex.tgz"),
        IMD_GROK_PACKAGE=str(feed / "npm" / "grok-cli.tgz"),
        **browser.offer_env(),
    )
    env.update(extra)
    return env


def _sh(script: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=180)


def _imd(env: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["imd", *args], env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _installed_version(env: dict) -> str:
    """The worker has no --version: line 1 of its help names it."""
    return _imd(env, "help").stdout.splitlines()[0]


def _install(home: Path, feed: Path, **extra: str) -> dict:
    env = _env(home, feed, **extra)
    for mode in ("worker", "agents"):
        r = _sh(INSTALL, env, mode)
        assert r.returncode == 0, r.stdout + r.stderr
    return env


def _tools(home: Path) -> list:
    return json.loads((home / ".identitymd" / "tools.json").read_text())


# ------------------------------------------------------------------ install.sh


def test_install_verifies_then_installs_and_offers_the_browser(home, feed, probe_ok):
    env = _env(home, feed, IMD_BOX_BROWSER_MCP=str(probe_ok))
    r = _sh(INSTALL, env, "worker")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "checksum verified" in r.stdout
    assert f"worker installed: {V1} (the release's build.json: daemonVersion {V1}, sourceCommit 00000001" in r.stdout
    assert _installed_version(env) == f"imd — IdentityMD contributor daemon (v{V1})"
    assert json.loads((home / ".imd-box" / "worker-build.json").read_text())["daemonVersion"] == V1
    # The help it read, passed on whole for box to read the runtimes from (no box of its own).
    assert worker.help_passed_on(r.stdout) == (0, _imd(env, "help").stdout.rstrip("\n"))
    # The worker's own syntax, its answer passed on, and the entry it wrote.
    assert "browser configured in" in r.stdout and "ready — restart `imd start` to advertise it" in r.stdout
    assert f"offered to the worker as the tool 'browser' ({probe_ok}, {len(browser.TOOLS)} methods)" in r.stdout
    assert _tools(home) == [
        {
            "id": "browser",
            "command": str(probe_ok),
            "args": [],
            "envVars": [],
            "probeArgs": ["--version"],
            "enabledTools": list(browser.TOOLS),
        }
    ]
    assert stat.S_IMODE((home / ".identitymd" / "tools.json").stat().st_mode) == 0o600
    r = _sh(INSTALL, env, "agents")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (home / ".imd-box" / "settings.env").read_text() == "RUNTIMES=claude\nCONCURRENCY=2\n"
    assert (home / ".npm-global" / "bin" / "claude").exists()
    for private in (home / ".identitymd", home / ".imd-box"):
        assert stat.S_IMODE(private.stat().st_mode) == 0o700, private  # what `box check` line 19 demands


def test_installing_again_replaces_the_browser_tool(home, feed, probe_ok):
    env = _env(home, feed, IMD_BOX_BROWSER_MCP=str(probe_ok))
    for _ in range(2):
        r = _sh(INSTALL, env, "worker")
        assert r.returncode == 0, r.stdout + r.stderr
    assert [t["id"] for t in _tools(home)] == ["browser"]


def test_a_browser_that_fails_its_probe_is_said(home, feed):
    # The real launcher outside the image: its files are missing, so its probe fails.
    if Path("/opt/playwright-mcp").exists():
        pytest.skip("this machine has the image's files")
    env = _env(home, feed, IMD_BOX_BROWSER_MCP=str(names.REPO_ROOT / "browser" / "playwright-mcp"))
    r = _sh(INSTALL, env, "worker")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not ready yet: " in r.stdout and "did not answer its probe (--version)" in r.stdout


def hostile_release_and_home(home: Path, feed: Path) -> dict[str, Path]:
    """A worker release whose package runs a postinstall, and a ~/.npmrc the worker wrote whose
    script-shell and node-options would run its code: each leaves a mark where it ran. The
    install box holds the owner's logins: none may run there. The marks, by what left them."""
    marks = {what: home / f"ran-{what}" for what in ("postinstall", "script-shell", "node-options")}
    (home / "shell.sh").write_text(f'#!/bin/sh\ntouch {marks["script-shell"]}\nexec /bin/sh "$@"\n')
    (home / "shell.sh").chmod(0o755)
    (home / "options.js").write_text(f'require("fs").writeFileSync({str(marks["node-options"])!r}, "");\n')
    (home / ".npmrc").write_text(f"script-shell={home / 'shell.sh'}\nnode-options=--require {home / 'options.js'}\n")
    # Run by node, which takes npm's node-options on the way.
    scripts = {"postinstall": f"node -e \"require('fs').writeFileSync('{marks['postinstall']}', '')\""}
    for name, data in fake_worker.release(**fake_worker.RELEASES["v1"], scripts=scripts).items():
        (feed / "scripted").mkdir(exist_ok=True)
        (feed / "scripted" / name).write_bytes(data)
    return marks


def test_the_install_box_runs_nothing_of_the_workers(home, feed, tmp_path):
    marks = hostile_release_and_home(home, feed)
    env = _env(home, feed, IMD_WORKER_URL=f"file://{feed}/scripted")
    for mode in ("worker", "agents"):
        r = _sh(INSTALL, env, mode)
        assert r.returncode == 0, r.stdout + r.stderr
    assert _installed_version(env) == f"imd — IdentityMD contributor daemon (v{V1})"
    assert [m.name for m in marks.values() if m.exists()] == []


def test_twin_an_install_box_that_takes_the_workers_npmrc_and_scripts(home, feed, tmp_path):
    # install.sh before the fix: npm with the home's configuration, the release's scripts run.
    text = INSTALL.read_text()
    for old in (
        " --ignore-scripts",
        "export NPM_CONFIG_USERCONFIG=/dev/null NPM_CONFIG_GLOBALCONFIG=/nonexistent/npmrc\n",
        'npm() { HOME=$tools_home command npm "$@"; }\n',
    ):
        assert text.count(old) == 1, old
        text = text.replace(old, "")
    before = tmp_path / "install.sh"
    before.write_text(text)
    marks = hostile_release_and_home(home, feed)
    r = _sh(before, _env(home, feed, IMD_WORKER_URL=f"file://{feed}/scripted"), "worker")
    assert r.returncode == 0, r.stdout + r.stderr
    assert {m.name for m in marks.values() if m.exists()} == {"ran-postinstall", "ran-script-shell", "ran-node-options"}


def test_tampered_or_unlisted_tgz_is_refused_and_the_old_worker_stays(home, feed):
    env = _env(home, feed)
    assert _sh(INSTALL, env, "worker").returncode == 0
    r = _sh(INSTALL, _env(home, feed, IMD_WORKER_URL=f"file://{feed}/tampered"), "worker")
    assert r.returncode == 1
    assert "checksum mismatch for identitymd-worker.tgz" in r.stderr and "refusing to install" in r.stderr
    assert V1 in _installed_version(env)
    (feed / "v2" / "SHA256SUMS").write_text("0" * 64 + "  something-else.tgz\n")
    r = _sh(INSTALL, _env(home, feed, IMD_WORKER_URL=f"file://{feed}/v2"), "worker")
    assert r.returncode == 1 and "SHA256SUMS has no line for identitymd-worker.tgz" in r.stderr
    assert V1 in _installed_version(env)
    r = _sh(INSTALL, _env(home, feed, IMD_WORKER_URL=f"file://{feed}/nothing-here"), "worker")
    assert r.returncode == 1 and "could not download" in r.stderr
    assert V1 in _installed_version(env)


@pytest.fixture
def unavailable():
    """A mirror that answers every download 503 (curl retries that), on this machine."""
    import http.server
    import threading

    class Unavailable(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(503)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_failed_download_is_one_line_with_curls_word_once(home, feed, unavailable):
    # curl says its error at each of its three tries; install.sh says it once, in its line.
    r = _sh(INSTALL, _env(home, feed, IMD_WORKER_URL=unavailable), "worker")
    assert r.returncode == 1, r.stdout + r.stderr
    said = f"could not download {unavailable}/identitymd-worker.tgz (The requested URL returned error: 503)"
    assert r.stderr.splitlines() == [f"imd-box: FAILED: {said}; the installed worker (if any) is unchanged"], r.stderr
    assert (r.stdout + r.stderr).count("returned error: 503") == 1


def test_a_worker_without_tools_add_is_said_plainly(home, feed):
    r = _sh(INSTALL, _env(home, feed, IMD_WORKER_URL=f"file://{feed}/notools"), "worker")
    assert r.returncode == 0, r.stderr
    assert "this worker has no 'imd tools add <id> --command'" in r.stdout
    assert not (home / ".identitymd" / "tools.json").exists()


def test_agents_mode_adds_and_removes_cli(home, feed):
    env = _install(home, feed)
    r = _sh(INSTALL, _env(home, feed, IMD_BOX_RUNTIMES="claude,grok", IMD_BOX_CONCURRENCY="4"), "agents")
    assert r.returncode == 0, r.stderr
    assert (home / ".npm-global" / "bin" / "grok").exists()
    assert (home / ".imd-box" / "settings.env").read_text() == "RUNTIMES=claude,grok\nCONCURRENCY=4\n"
    r = _sh(INSTALL, _env(home, feed, IMD_BOX_RUNTIMES="claude"), "agents")
    assert r.returncode == 0 and "removing the grok CLI" in r.stdout, r.stderr
    assert not (home / ".npm-global" / "bin" / "grok").exists()
    r = _sh(INSTALL, _env(home, feed, IMD_BOX_CONCURRENCY="5"), "agents")
    assert r.returncode == 1 and "concurrency must be 1 to 4" in r.stderr
    r = _sh(INSTALL, env, "all")
    assert r.returncode == 1 and "unknown mode 'all'" in r.stderr


def test_the_grok_key_lands_where_the_grok_cli_reads_it(home, feed, tmp_path):
    _install(home, feed)
    (home / ".grok").mkdir(mode=0o755)
    (home / ".grok" / "user-settings.json").write_text('{"defaultModel": "grok-code-fast-1"}')
    staged = tmp_path / "staged-key"
    staged.write_text("xai-imdt-secret-123\n")
    r = _sh(INSTALL, _env(home, feed, IMD_BOX_RUNTIMES="claude,grok", IMD_BOX_GROK_KEY_FILE=str(staged)), "agents")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "xai-imdt-secret" not in r.stdout + r.stderr
    settings = home / ".grok" / "user-settings.json"
    assert json.loads(settings.read_text()) == {"defaultModel": "grok-code-fast-1", "apiKey": "xai-imdt-secret-123"}
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / ".grok").stat().st_mode) == 0o700
    assert not staged.exists(), "the handed-in copy is removed"


# ------------------------------------------------------------------ run.sh


@pytest.mark.parametrize("folder", ["solc", "solc-wrong-sum"])
def test_agents_mode_keeps_the_compilers_it_verified(home, feed, folder):
    # install.sh with what box hands in for setup and update (imdbox/install.py): 0.8.26 and
    # the newest 0.8 release, from svm's release list. The twin's list gives 0.8.26 a wrong sha256.
    handed = install.install_env(["claude"], 2, passed={"IMD_BOX_SOLC_URL": f"file://{feed}/{folder}"}, compilers=True)
    env = _install(home, feed, **{k: v for k, v in handed.items() if k != "IMD_BOX_VIEW"})  # the box's view
    r = _sh(INSTALL, env, "agents")
    assert r.returncode == 0, r.stdout + r.stderr
    svm = home / ".svm"
    kept = sorted(p.name for p in svm.iterdir()) if svm.is_dir() else []
    record = (home / ".imd-box" / "compilers").read_bytes()
    if folder == "solc":
        assert kept == ["0.8.26", "0.8.37"], kept  # not 0.7.6: no contract job pins it
        for v in kept:
            binary = svm / v / f"solc-{v}"
            assert binary.read_bytes() == fake_worker.SOLC_STAND_IN and os.access(binary, os.X_OK), v
        assert "compilers: solc 0.8.26 kept in ~/.svm for every job (sha256 " in r.stdout, r.stdout
        assert install.kept_compilers(record) == ["0.8.26", "0.8.37"], record
    else:
        assert kept == ["0.8.37"], kept
        assert "compilers: REFUSED solc 0.8.26: the release list gives sha256 " in r.stdout, r.stdout
        assert install.kept_compilers(record) == ["0.8.37"], record
    assert not list((home / ".imd-box").glob(".staging.*"))


def test_run_sh_refuses_without_the_worker(home, feed):
    env = _env(home, feed, PATH="/usr/bin:/bin")
    r = _sh(RUN, env)
    assert r.returncode != 0
    assert "the worker (imd) is not installed" in r.stderr


def _stub_imd(bindir: Path, placeholder: str) -> None:
    """An `imd` whose help has the given --runtime placeholder; anything else is echoed."""
    bindir.mkdir(exist_ok=True)
    help_line = f"  --runtime {placeholder}       which agent runs tasks here: claude or codex or grok."
    (bindir / "imd").write_text(f'#!/bin/sh\nif [ "$1" = help ]; then echo "{help_line}"; exit 0; fi\necho "imd $*"\n')
    (bindir / "imd").chmod(0o755)


def test_run_sh_starts_with_the_saved_settings(home, feed, tmp_path):
    bindir = tmp_path / "bin"
    _stub_imd(bindir, "<id>")
    env = _env(home, feed, PATH=f"{bindir}:/usr/bin:/bin")
    r = _sh(RUN, env)
    assert r.stdout.strip() == "imd start --auto-update --runtime claude --concurrency 2"
    (home / ".imd-box").mkdir()
    (home / ".imd-box" / "settings.env").write_text("RUNTIMES=codex\nCONCURRENCY=3\n")
    r = _sh(RUN, env)
    assert r.stdout.strip() == "imd start --auto-update --runtime codex --concurrency 3"
    (home / ".imd-box" / "settings.env").write_text("RUNTIMES=claude\nCONCURRENCY=0; rm -rf /\n")
    r = _sh(RUN, env)
    assert r.returncode == 1 and "bad CONCURRENCY" in r.stderr and r.stdout == ""


def test_run_sh_never_passes_a_list_to_a_worker_that_runs_one(home, feed, tmp_path):
    bindir = tmp_path / "bin"
    (home / ".imd-box").mkdir()
    (home / ".imd-box" / "settings.env").write_text("RUNTIMES=claude,codex\nCONCURRENCY=2\n")
    env = _env(home, feed, PATH=f"{bindir}:/usr/bin:/bin")
    _stub_imd(bindir, "<id>")  # the released worker's form
    r = _sh(RUN, env)
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert "this worker runs one runtime at a time: run 'box runtime claude'" in r.stderr
    _stub_imd(bindir, "<id,...>")  # the tests' multi-runtime stand-in
    r = _sh(RUN, env)
    assert r.stdout.strip() == "imd start --auto-update --runtime claude,codex --concurrency 2", r.stderr


# ------------------------------------------------------------------ the stand-in worker's contract


def test_no_version_flag_the_help_names_the_version(home, feed):
    env = _install(home, feed)
    r = _imd(env, "--version")
    assert r.returncode == 1 and r.stderr.startswith("unknown command: --version\n\nimd — IdentityMD"), r.stderr
    r = _imd(env)
    assert r.returncode == 1 and r.stdout.startswith(f"imd — IdentityMD contributor daemon (v{V1})")
    for args in (["help"], ["start", "--help"], ["doctor", "-h"]):
        r = _imd(env, *args)
        assert r.returncode == 0 and "  --runtime <id>       which agent runs tasks here: claude or codex." in r.stdout


def test_start_takes_one_runtime_and_needs_pairing_without_a_terminal(home, feed):
    env = _install(home, feed)
    r = _imd(env, "start", "--runtime", "claude,codex")
    assert r.returncode == 1 and r.stderr == "--runtime must be one of: claude, codex\n"
    r = _imd(env, "start", "--runtime", "codex")  # known, but its CLI is not installed
    assert r.returncode == 1
    assert r.stderr.startswith("--runtime codex was asked for, but it is not usable on this machine.\n")
    assert "  codex: codex is not on PATH" in r.stderr
    r = _imd(env, "start", "--runtime", "claude", "--concurrency", "9")
    assert r.returncode == 1 and r.stderr == "--concurrency must be between 1 and 4\n"
    r = _imd(env, "start", "--runtime", "claude")
    assert r.returncode == 1
    assert r.stderr == "this machine is not paired yet. Run `imd pair` from an interactive shell.\n"
    assert stat.S_IMODE((home / ".identitymd" / "config.json").stat().st_mode) == 0o600  # made before the refusal


def test_tools_add_syntax_and_refusals(home, feed, probe_ok):
    env = _install(home, feed, IMD_BOX_BROWSER_MCP="")
    cases = [
        (["browser", "--", str(probe_ok)], "Unexpected argument"),  # the `-- CMD` form is gone
        (["browser", "--command", str(probe_ok), "--bogus"], "Unknown option '--bogus'"),
        (["browser", "--enable", "x"], "a tool needs --command, the absolute path of an installed stdio MCP server"),
        (
            ["browser", "--command", str(probe_ok)],
            "a tool needs at least one --enable <method>, the MCP method names an assignment may call",
        ),
        (["Browser", "--command", str(probe_ok), "--enable", "x"], '"id"'),
        (["browser", "--command", "bin/mcp", "--enable", "x"], "tool command must be absolute"),
        (["browser", "--command", str(probe_ok), "--enable", "a.b"], '"enabledTools"'),
        (["browser", "--command", str(probe_ok), "--env", "lower", "--enable", "x"], '"envVars"'),
    ]
    for args, message in cases:
        r = _imd(env, "tools", "add", *args)
        assert r.returncode == 1 and message in r.stderr, (args, r.stderr)
        assert r.stdout == "", args
    assert not (home / ".identitymd" / "tools.json").exists(), "a refusal writes nothing"
    r = _imd(env, "tools", "add", "zeta", "--command", "/bin/false", "--enable", "x", "--arg", "x")
    assert r.returncode == 0, r.stderr  # not ready is said, not refused
    assert r.stdout.splitlines()[-1] == "  not ready yet: /bin/false did not answer its probe (--version)"
    r = _imd(env, "tools", "add", "alpha", "--command", str(probe_ok), "--enable", "x", "--enable", "y")
    assert r.returncode == 0 and r.stdout.endswith("  ready — restart `imd start` to advertise it\n"), r.stdout
    # node's own option parser: a value that starts with a dash needs `=`.
    r = _imd(env, "tools", "add", "alpha", "--command", str(probe_ok), "--probe", "--version", "--enable", "z")
    assert r.returncode == 1 and "Option '--probe' argument is ambiguous" in r.stderr
    r = _imd(env, "tools", "add", "alpha", "--command", str(probe_ok), "--probe=--version", "--enable", "z")
    assert r.returncode == 0, r.stderr
    assert [(t["id"], t["enabledTools"]) for t in _tools(home)] == [("alpha", ["z"]), ("zeta", ["x"])]
    r = _imd(env, "tools")
    assert r.returncode == 0 and "2 tool(s) configured in" in r.stdout
    assert (
        "  alpha        ready\n" in r.stdout
        and "  zeta         not ready — /bin/false did not answer its probe" in r.stdout
    )
    r = _imd(env, "tools", "remove", "zeta")
    assert r.returncode == 0 and r.stdout == "zeta removed — restart `imd start` to stop advertising it\n"
    r = _imd(env, "tools", "remove", "zeta")
    assert r.returncode == 1 and r.stdout == "zeta was not configured\n"


def test_doctor_format_pairing_and_unlink(home, feed, probe_ok):
    env = _install(home, feed, IMD_BOX_BROWSER_MCP=str(probe_ok))
    r = _imd(env, "unlink")
    assert r.returncode == 1 and r.stderr == "not configured — nothing to unlink\n"
    doc = _imd(env, "doctor")
    assert doc.returncode == 1, doc.stdout
    assert doc.stdout.startswith(f"\nimd doctor · daemon {V1}\n\n")
    lines = doc.stdout.splitlines()
    assert "  ✓ tool browse ready · " + str(probe_ok) in lines  # `tool <id>`, cut to 11
    assert "  → claude  0.0.1-fake (@anthropic-ai/claude-code, fake)" in lines
    assert "  ✓ claude run  answered in" in doc.stdout
    assert "  ✗ config      none yet" in lines and "                fix: run `imd start`" in lines
    assert doc.stdout.endswith("\n  1 thing to fix: config\n\n")
    r = _imd(env, "pair")
    assert r.returncode == 0, r.stderr
    assert "  Open this in a browser with the wallet that owns your IdentityMD NFT:" in r.stdout
    assert "  Paired. Token " in r.stdout and "  Run: imd start" in r.stdout
    # The sandbox check, on this machine, where no jail holds the stand-in agent (the box's
    # doctor passes it: tests/world/test_cli_box.py).
    doc = _imd(env, "doctor", "--runtime", "claude")
    assert doc.returncode == 1, doc.stdout
    assert f"  ✗ claude jail a run reads {home / '.identitymd' / 'config.json'}" in doc.stdout.splitlines()
    assert doc.stdout.endswith("\n  1 thing to fix: claude jail\n\n")
    r = _imd(env, "doctor", "--runtime", "grok")
    assert r.returncode == 1 and r.stderr == "--runtime must be one of: claude, codex\n"
    (home / "probe-fails").write_text("#!/bin/sh\nexit 3\n")
    (home / "probe-fails").chmod(0o755)
    assert _imd(env, "tools", "add", "browser", "--command", str(home / "probe-fails"), "--enable", "x").returncode == 0
    doc = _imd(env, "doctor")
    assert doc.returncode == 1
    assert f"  ✗ tool browse {home / 'probe-fails'} did not answer its probe" in doc.stdout
    assert f"                fix: run {home / 'probe-fails'} --version by hand" in doc.stdout
    assert doc.stdout.endswith("\n  2 things to fix: tool browse, claude jail\n\n")
    r = _imd(env, "unlink")
    assert r.returncode == 0 and "  Unlinked. That NFT can now be paired to another machine." in r.stdout
    r = _imd(env, "unlink")
    assert r.returncode == 0 and r.stdout == "\n  Nothing was linked on the server. Local binding cleared.\n\n"


def _start(env: dict, counter: Path, count: int) -> subprocess.Popen:
    counter.write_text(f"{count}\n")
    return subprocess.Popen(
        ["imd", "start", "--auto-update", "--runtime", "claude"],
        env={**env, "IMD_FAKE_UPDATE_EXITS": str(counter)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _read_until(proc: subprocess.Popen, text: str, timeout: float = 30) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while text not in seen:
        assert time.monotonic() < deadline, f"no {text!r} in:\n{seen}"
        line = proc.stdout.readline()
        assert line, f"the worker ended before {text!r}:\n{seen}"
        seen += line
    return seen


def test_the_supervisor_restarts_on_exit_75_and_passes_sigterm(home, feed, tmp_path):
    env = _install(home, feed)
    assert _imd(env, "pair").returncode == 0
    proc = _start(env, tmp_path / "updates", 1)
    try:
        first = _read_until(proc, "alive 0m · idle · 0 submitted")
        assert first.count("automatic updates enabled") == 2, first
        assert "update installed; restarting the worker with the same start options\n" in first
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM  # the supervisor's code
        assert "shutting down" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


def test_the_supervisor_gives_up_after_three_restarts_in_a_minute(home, feed, tmp_path):
    env = _install(home, feed)
    assert _imd(env, "pair").returncode == 0
    proc = _start(env, tmp_path / "updates", 4)
    try:
        assert proc.wait(timeout=60) == 1
        output = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
    assert output.count("update installed; restarting the worker with the same start options") == 3, output
    assert output.rstrip().endswith(
        "worker requested repeated update restarts; stopping so you can inspect the installation"
    ), output
    assert "shutting down" not in output


def test_the_multi_runtime_stand_in_says_so_in_its_help(home, feed):
    env = _install(home, feed, IMD_WORKER_URL=f"file://{feed}/multi", IMD_BOX_RUNTIMES="claude,grok")
    r = _imd(env, "help")
    assert "  --runtime <id,...>   which agents run tasks here, comma separated: claude or codex or grok." in r.stdout
    r = _imd(env, "start", "--runtime", "claude,gemini")
    assert r.returncode == 1 and r.stderr == "--runtime must be a comma list of: claude, codex, grok\n"
