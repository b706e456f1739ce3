"""The `box` command against the real engine, through the fake worker and its feed.

Each test makes what it needs and leaves nothing behind, pass or fail:
- `fresh`: a box env of its own, nothing set up (refusals, setup itself, remove);
- `bx`: the module's one set-up volume (setup ran once, in the fixture); after
  each test its container is removed and the settings are back to the defaults,
  so one failing test cannot fail the next.
Every name is test-only (IMD_BOX_IMAGE/CONTAINER/VOLUME) and every box runs on
the harness's internal `imdt-internet` network.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

import docker
import pytest

from imdbox import browser, layout, names, refused
from tests.fake_worker import daemon_version
from tests.fake_worker.fixtures import FEED_URL, box_env, copy_of, remove_container, volume_files
from tests.harness import boxes
from tests.harness.cli import start_box
from tests.harness.image import BASE_IMAGE, CA_FILE

DEFAULT_SETTINGS = b"RUNTIMES=claude\nCONCURRENCY=2\n"
RESET_SETTINGS = "printf 'RUNTIMES=claude\\nCONCURRENCY=2\\n' > /home/imd/.imd-box/settings.env"
V1 = daemon_version("v1")
TOOLS_JSON = "/home/imd/.identitymd/tools.json"
SETTINGS = "/home/imd/.imd-box/settings.env"
GROK_SETTINGS = "/home/imd/.grok/user-settings.json"
# The worker refuses `imd start` unpaired without a terminal (a box has none).
NOT_PAIRED = "this machine is not paired yet. Run `imd pair` from an interactive shell."


@pytest.fixture
def fresh(docker_client, box_image, feed):
    with box_env(docker_client, box_image) as env:
        yield env


@pytest.fixture(scope="module")
def installed(docker_client, box_image, set_up):
    """Set up and paired (the stand-in pairs at once; the real one waits for the wallet)."""
    with copy_of(docker_client, box_image, set_up, paired=True) as env:
        yield env


@pytest.fixture
def bx(docker_client, installed):
    yield installed
    remove_container(docker_client, installed)
    if volume_files(docker_client, installed, [SETTINGS])[SETTINGS] != DEFAULT_SETTINGS:
        r = installed.run("shell", "bash", "-c", RESET_SETTINGS)
        assert r.returncode == 0, r.all


def _container(client, name):
    try:
        return client.containers.get(name)
    except docker.errors.NotFound:
        return None


def _volume_exists(client, name):
    try:
        client.volumes.get(name)
        return True
    except docker.errors.NotFound:
        return False


def test_refusals_before_setup_change_nothing(docker_client, fresh):
    bx = fresh
    for cmd in (["start"], ["status"], ["shell", "true"], ["runtime", "claude"]):
        r = bx.run(*cmd)
        assert r.returncode != 0, (cmd, r.all)
        assert "setup was not done" in r.stderr, (cmd, r.all)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert _container(docker_client, bx.container) is None
    assert not _volume_exists(docker_client, bx.volume)
    r = bx.run("runtime", "gemini")
    assert r.returncode == 2 and "unknown runtime gemini" in r.stderr, r.all
    r = bx.run("setup", "--no-shell", "--concurrency", "9")
    assert r.returncode == 2 and "concurrency must be 1 to 4" in r.stderr, r.all
    assert not _volume_exists(docker_client, bx.volume)


def test_image_missing_and_docker_down_are_one_line(fresh):
    bx = fresh
    r = bx.run("start", IMD_BOX_IMAGE="imdt-no-such-image:x")
    assert r.returncode == 1 and "box image imdt-no-such-image:x is missing" in r.stderr, r.all
    r = bx.run("status", DOCKER_HOST="unix:///tmp/imdt-no-docker.sock")
    assert r.returncode == 1, r.all
    assert r.stderr.strip() == (
        "box: Docker is not running at unix:///tmp/imdt-no-docker.sock (DOCKER_HOST) — start Docker Desktop, "
        "wait for it to say it is running, and try again"
    )


def test_setup_installs_the_verified_worker_and_offers_the_browser(docker_client, fresh):
    bx = fresh
    r = bx.run("setup", "--no-shell")
    assert r.returncode == 0, r.all
    assert "walls up and verified" in r.all
    assert "checksum verified: identitymd-worker.tgz sha256" in r.all
    assert f"worker installed: {V1} (the release's build.json: daemonVersion {V1}" in r.all
    assert "installing the claude CLI" in r.all
    # The worker ran the launcher's probe inside the install box, behind the walls.
    assert "browser configured in /home/imd/.identitymd/tools.json" in r.all
    assert "  ready — restart `imd start` to advertise it" in r.all
    assert f"offered to the worker as the tool 'browser' ({browser.LAUNCHER}, {len(browser.TOOLS)} methods)" in r.all
    assert "claude" in r.all and "imd pair" in r.all and "imd doctor" in r.all  # the next steps
    vol = docker_client.volumes.get(bx.volume)
    assert vol.attrs["Labels"].get("io.identitymd.box") == "1"
    r = bx.run("shell", "imd", "help")
    assert r.returncode == 0 and r.stdout.startswith(f"imd — IdentityMD contributor daemon (v{V1})"), r.all
    r = bx.run("shell", "claude", "--version")
    assert r.returncode == 0 and "@anthropic-ai/claude-code, fake" in r.stdout, r.all
    files = volume_files(docker_client, bx, [SETTINGS, TOOLS_JSON])
    assert files[SETTINGS] == DEFAULT_SETTINGS
    entry = {
        "id": "browser",
        "command": browser.LAUNCHER,
        "args": [],
        "envVars": [],
        "probeArgs": ["--version"],
        "enabledTools": list(browser.TOOLS),
    }
    assert json.loads(files[TOOLS_JSON]) == [entry]
    r = bx.run("shell", "stat", "-c", "%a %U", TOOLS_JSON)
    assert r.stdout.strip() == "600 imd", r.all
    # Not paired: the worker will not start without a terminal, and box says so, even where
    # its runtime probe outlasts start's settle time (a busy machine: 3 s, the settle 2 s).
    slow = "/home/imd/.npm-global/lib/node_modules/@anthropic-ai/claude-code/slow-version"
    assert bx.run("shell", "sh", "-c", f"echo 3 > {slow}").returncode == 0
    r = bx.run("start")
    assert bx.run("shell", "rm", slow).returncode == 0
    assert r.returncode == 1, r.all
    assert "did not start" in r.stderr and NOT_PAIRED in r.stderr, r.all
    assert _container(docker_client, bx.container) is None
    # Doctor has something to fix and box status passes its exit code; the browser
    # is as the worker's doctor reports it, from the probe it ran.
    r = bx.run("status")
    assert r.returncode == 1, r.all
    assert f"  ✓ tool browse ready · {browser.LAUNCHER}" in r.stdout, r.all
    assert "  ✗ enrollment  this device has never paired here" in r.stdout
    # The stand-in's sandbox check: through the door, the run is in a job's jail.
    assert "  ✓ claude jail a run reads its workspace, not the config" in r.stdout, r.all
    assert "  1 thing to fix: enrollment" in r.stdout
    assert "one-off box with the same walls" in r.stdout
    # Setup again: the worker replaces the tool, never a second entry.
    r = bx.run("setup", "--no-shell")
    assert r.returncode == 0, r.all
    files = volume_files(docker_client, bx, [TOOLS_JSON])
    assert json.loads(files[TOOLS_JSON]) == [entry]


def test_the_launcher_answers_the_workers_probe_quickly(bx):
    script = f's=$(date +%s%N); {browser.LAUNCHER} --version; echo "ms=$(( ($(date +%s%N) - s) / 1000000 ))"'
    r = bx.run("shell", "bash", "-c", script)
    assert r.returncode == 0, r.all
    version, timing = r.stdout.strip().splitlines()
    assert version == f"@playwright/mcp {browser.MCP_VERSION}"
    assert int(timing.removeprefix("ms=")) < 2000, timing  # the worker gives its probe 5 s


def test_tampered_release_is_refused_and_the_old_worker_survives(bx):
    r = bx.run("setup", "--no-shell", IMD_WORKER_URL=f"{FEED_URL}/tampered")
    assert r.returncode == 1, r.all
    assert "checksum mismatch for identitymd-worker.tgz" in r.all
    assert "refusing to install" in r.all
    r = bx.run("shell", "imd", "help")
    assert r.returncode == 0 and f"(v{V1})" in r.stdout.splitlines()[0], r.all


def test_a_compiler_its_list_does_not_vouch_for_is_refused_and_not_listed(bx):
    # The feed's second list gives 0.8.26 another file's sha256 (tests/fake_worker: solc_feed).
    try:
        r = bx.run("setup", "--no-shell", IMD_BOX_SOLC_URL=f"{FEED_URL}/solc-wrong-sum")
        assert r.returncode == 0, r.all
        assert "compilers: REFUSED solc 0.8.26: the release list gives sha256 " in r.all, r.all
        r = bx.run("status")
        assert "compilers: solc 0.8.37, for every job" in r.stdout, r.all
        r = bx.run("shell", "bash", "-c", "ls /home/imd/.svm")
        assert r.stdout.split() == ["0.8.37"], r.all
    finally:
        r = bx.run("setup", "--no-shell")
    assert r.returncode == 0 and "compilers: solc 0.8.26 kept in ~/.svm for every job" in r.all, r.all


def test_start_logs_status_stop(docker_client, bx):
    r = bx.run("start")
    assert r.returncode == 0, r.all
    c = docker_client.containers.get(bx.container)
    assert c.status == "running"
    assert c.attrs["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
    assert c.labels["io.identitymd.box"] == "1" and c.labels["io.identitymd.box.role"] == "worker"
    assert c.attrs["HostConfig"]["CapDrop"] == ["ALL"]
    r = bx.run("start")
    assert r.returncode == 0 and "already running" in r.stdout, r.all
    r = bx.run("logs", "--no-follow")
    assert r.returncode == 0, r.all
    assert "walls up and verified" in r.all
    assert "imd start --auto-update --runtime claude --concurrency 2" in r.all
    assert "runtimes: claude 0.0.1-fake (@anthropic-ai/claude-code, fake) (using claude, as asked)" in r.all
    assert "tools advertised: browser" in r.all
    assert "automatic updates enabled" in r.all
    _follow_logs_until(bx, "· idle · 0 submitted")  # a line written after `box logs` began
    r = bx.run("logs", "--no-follow", "--since", "1h", "--tail", "1")
    assert r.returncode == 0 and len(r.stdout.strip().splitlines()) == 1, r.all
    r = bx.run("logs", "--since", "yesterday-ish")
    assert r.returncode == 2 and "--since" in r.stderr, r.all
    r = bx.run("status")
    assert r.returncode == 0, r.all
    assert "running" in r.stdout and "restarts:  0" in r.stdout
    assert "  ✓ enrollment  active · token" in r.stdout and "in the running box" in r.stdout
    assert f"  ✓ tool browse ready · {browser.LAUNCHER}" in r.stdout
    assert "  → claude  " in r.stdout and "everything checks out" in r.stdout
    assert "runtime:   claude (concurrency 2)" in r.stdout
    assert "compilers: solc 0.8.26, 0.8.37, for every job" in r.stdout, r.all
    assert "refused:   the Mac " in r.stdout and "(attempts since the box started)" in r.stdout, r.all
    # The login broker answers from the running box (no Claude login Claude Code wrote is there).
    assert "login:     none in the box (log in with `claude` in `box shell`)" in r.stdout, r.all
    r = bx.run("shell", "printenv", "HTTPS_PROXY", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE")
    assert r.stdout.split() == [f"http://127.0.0.1:{layout.BROKER_PORT}", *[f"{layout.BROKER_DIR}/trust.pem"] * 2], (
        r.all
    )
    r = bx.run("status", "--json")
    assert r.returncode == 0, r.all
    state = json.loads(r.stdout)
    assert state["state"] == "running" and list(state["refused"]) == list(refused.WALLS), r.stdout
    started = time.monotonic()
    r = bx.run("stop")
    assert r.returncode == 0 and "stopped" in r.stdout, r.all
    assert time.monotonic() - started < 30  # SIGTERM reached the worker: no 45 s kill
    c.reload()
    assert c.status == "exited"
    # The supervisor passed SIGTERM on; the worker shut down; the supervisor's code is 128+15.
    assert "shutting down" in c.logs().decode()
    assert c.attrs["State"]["ExitCode"] == 143
    r = bx.run("stop")
    assert r.returncode == 0 and "not running" in r.stdout
    r = bx.run("status")
    assert r.returncode == 0 and "stopped" in r.stdout and "one-off box" in r.stdout, r.all


def test_status_shows_the_health_of_a_running_box(docker_client, bx):
    assert bx.run("shell", "imd", "pair").returncode == 0
    assert bx.run("start").returncode == 0
    c = docker_client.containers.get(bx.container)
    deadline = time.monotonic() + 40  # the first check runs 10 s after the start
    while time.monotonic() < deadline and (c.attrs["State"].get("Health") or {}).get("Status") != "healthy":
        time.sleep(1)
        c.reload()
    assert c.attrs["State"]["Health"]["Status"] == "healthy", c.attrs["State"].get("Health")
    r = bx.run("status")
    assert "health:    healthy (walls verified; the worker is running (pid" in r.stdout, r.all


def _follow_logs_until(bx, text: str, timeout: float = 30.0) -> None:
    proc = start_box("logs", "--tail", "0", env=bx.env())
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        seen = any(text in line for line in iter(proc.stdout.readline, ""))
        assert seen and proc.poll() is None, f"`box logs` did not follow: {proc.stderr.read()}"
        proc.send_signal(signal.SIGINT)  # Ctrl-C ends the watching, quietly
        assert proc.wait(timeout=2) in (0, 130), proc.stderr.read()
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_a_failing_start_leaves_no_restart_loop(docker_client, bx):
    # Settings box reads as valid (a list), which only run.sh, in the box, finds this worker cannot run.
    bad = "printf 'RUNTIMES=claude,codex\\nCONCURRENCY=2\\n' > /home/imd/.imd-box/settings.env"
    assert bx.run("shell", "bash", "-c", bad).returncode == 0
    r = bx.run("start")
    assert r.returncode == 1, r.all
    assert "did not start" in r.stderr and "runs one runtime at a time" in r.stderr, r.all
    assert _container(docker_client, bx.container) is None


def test_status_shows_the_last_error_of_a_restarting_box(docker_client, bx):
    """A box that breaks later (here: bad settings, then the worker dies) restarts with
    Docker; status says so with the error, and `box start` replaces it."""
    assert bx.run("start").returncode == 0
    bad = "printf 'RUNTIMES=claude\\nCONCURRENCY=0\\n' > /home/imd/.imd-box/settings.env && cat /home/imd/.imd-box/settings.env"
    r = bx.run("shell", "bash", "-c", bad)
    assert r.returncode == 0 and "CONCURRENCY=0" in r.stdout, r.all
    r = bx.run("shell", "pkill", "-f", "^node .*imd start")
    c = docker_client.containers.get(bx.container)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the first restart ran run.sh, which refused
        c.reload()
        if c.attrs.get("RestartCount", 0) >= 2:
            break
        time.sleep(0.5)
    r = bx.run("status")
    assert "restarts:  0" not in r.stdout, r.all
    assert f"last error: {SETTINGS} is damaged (bad CONCURRENCY '0'" in r.stdout, r.all  # one prefix: box's
    assert bx.run("stop").returncode == 0
    assert bx.run("shell", "bash", "-c", RESET_SETTINGS).returncode == 0
    r = bx.run("start")
    assert r.returncode == 0, r.all
    c = docker_client.containers.get(bx.container)
    assert c.attrs.get("RestartCount") == 0 and c.status == "running"


def _fingerprint(docker_client, bx):
    paths = ["/home/imd/.claude/.credentials.json", "/home/imd/.identitymd/config.json"]
    files = volume_files(docker_client, bx, paths)
    assert all(files[p] for p in paths), files
    return {p: hashlib.sha256(files[p]).hexdigest() for p in paths}


def test_update_keeps_the_volume_byte_identical(docker_client, bx):
    login = "mkdir -p /home/imd/.claude && head -c 300 /dev/urandom | base64 > /home/imd/.claude/.credentials.json"
    assert bx.run("shell", "bash", "-c", login).returncode == 0
    assert bx.run("start").returncode == 0
    old_id = docker_client.containers.get(bx.container).id
    before = _fingerprint(docker_client, bx)
    r = bx.run("update", "--base-image", BASE_IMAGE, "--ca-cert", CA_FILE, timeout=1200)
    assert r.returncode == 0, r.all
    assert "rebuilding the box image from this checkout" in r.all
    assert "refreshing the agent CLIs in the volume: claude" in r.all
    assert "the box is running again" in r.all
    c = docker_client.containers.get(bx.container)
    assert c.id != old_id and c.status == "running"
    assert _fingerprint(docker_client, bx) == before


def test_runtime_a_worker_cannot_run_changes_nothing(docker_client, bx):
    assert bx.run("start").returncode == 0
    old_id = docker_client.containers.get(bx.container).id
    r = bx.run("runtime")
    assert r.returncode == 0, r.all
    assert "runtime(s): claude (concurrency 2)" in r.stdout
    assert f"the installed worker {V1} runs one of claude, codex, one at a time" in r.stdout
    r = bx.run("runtime", "claude,codex")
    assert r.returncode == 1, r.all
    assert r.stderr.strip().splitlines() == [
        "box: this worker runs one runtime at a time; name one of: claude, codex; nothing was changed"
    ]
    r = bx.run("runtime", "grok")
    assert r.returncode == 1, r.all
    assert "the installed worker cannot run grok (it runs one of claude, codex, one at a time)" in r.stderr
    assert (
        bx.run(
            "shell", "bash", "-c", "ls /home/imd/.npm-global/bin/codex || ls /home/imd/.npm-global/bin/grok"
        ).returncode
        != 0
    )
    assert volume_files(docker_client, bx, [SETTINGS])[SETTINGS] == DEFAULT_SETTINGS
    c = docker_client.containers.get(bx.container)
    assert c.id == old_id and c.status == "running"  # the worker was not touched


def test_runtime_saves_one_and_restarts_the_worker(docker_client, bx):
    assert bx.run("start").returncode == 0
    try:
        r = bx.run("runtime", "codex")
        assert r.returncode == 0, r.all
        assert "installing the codex CLI" in r.all and "starting the worker again on codex" in r.all
        assert volume_files(docker_client, bx, [SETTINGS])[SETTINGS] == b"RUNTIMES=codex\nCONCURRENCY=2\n"
        logs = docker_client.containers.get(bx.container).logs().decode()
        assert "imd start --auto-update --runtime codex --concurrency 2" in logs
        assert "(using codex, as asked)" in logs
        r = bx.run("status")
        assert "  → codex   " in r.stdout and "  ✓ codex run  " in r.stdout, r.all  # doctor --runtime codex
        assert "  ✓ codex jail  a run reads its workspace, not the config" in r.stdout, r.all  # in the running box
    finally:
        r = bx.run("runtime", "claude")
        assert r.returncode == 0 and "removing the codex CLI" in r.all, r.all


def test_run_sh_never_hands_a_list_to_a_worker_that_runs_one(docker_client, bx):
    """Settings saved by an older box (a list) and a worker that takes one runtime:
    the worker is not started with it, and box says what to do."""
    assert bx.run("shell", "bash", "-c", RESET_SETTINGS.replace("claude", "claude,codex")).returncode == 0
    r = bx.run("start")
    assert r.returncode == 1, r.all
    assert "this worker runs one runtime at a time: run 'box runtime claude'" in r.stderr, r.all
    assert _container(docker_client, bx.container) is None


def test_runtime_list_with_a_worker_that_runs_several(docker_client, fresh, tmp_path):
    """Only the tests' stand-in takes a list; with it, grok is installed and signed in."""
    bx = fresh
    r = bx.run("setup", "--no-shell", IMD_WORKER_URL=f"{FEED_URL}/multi")
    assert r.returncode == 0 and f"worker installed: {daemon_version('multi')}" in r.all, r.all
    assert bx.run("shell", "imd", "pair").returncode == 0
    assert bx.run("start").returncode == 0
    # No key and no terminal: one line, nothing changed.
    r = bx.run("runtime", "claude,grok")
    assert r.returncode == 1, r.all
    assert r.stderr.strip().splitlines() == [
        "box: the Grok CLI needs an xAI API key: pass --grok-key-file FILE (the key alone), "
        "or run this in a terminal to type it; nothing was changed"
    ]
    assert bx.run("shell", "bash", "-c", "ls /home/imd/.npm-global/bin/grok").returncode != 0
    secret = "xai-imdt-" + hashlib.sha256(bx.volume.encode()).hexdigest()[:24]
    key_file = tmp_path / "grok.key"
    key_file.write_text(secret + "\n")
    r = bx.run("runtime", "claude,grok", "--concurrency", "3", "--grok-key-file", str(key_file))
    assert r.returncode == 0, r.all
    assert "installing the grok CLI" in r.all and "starting the worker again on claude and grok" in r.all
    assert "the API key is stored in ~/.grok/user-settings.json" in r.all
    c = docker_client.containers.get(bx.container)
    logs = c.logs().decode()
    assert "imd start --auto-update --runtime claude,grok --concurrency 3" in logs
    assert "(using claude, grok, as asked)" in logs
    # Where the Grok CLI reads it, imd's alone; never in a log, an argument or the environment.
    stored = volume_files(docker_client, bx, [GROK_SETTINGS])[GROK_SETTINGS]
    assert json.loads(stored) == {"apiKey": secret}
    r = bx.run("shell", "stat", "-c", "%a %U %n", "/home/imd/.grok", GROK_SETTINGS)
    assert r.stdout.split("\n")[:2] == ["700 imd /home/imd/.grok", f"600 imd {GROK_SETTINGS}"], r.all
    assert secret not in r.all + logs
    assert secret not in json.dumps(c.attrs)
    r = bx.run("shell", "grok", "--version")
    assert r.returncode == 0 and "@vibe-kit/grok-cli, fake" in r.stdout, r.all
    # Signed in already: a second change needs no key.
    r = bx.run("runtime", "grok,claude")
    assert r.returncode == 0 and "grok: signed in already" in r.all, r.all
    r = bx.run("runtime", "claude")
    assert r.returncode == 0 and "removing the grok CLI" in r.all, r.all
    assert bx.run("shell", "bash", "-c", "ls /home/imd/.npm-global/bin/grok").returncode != 0
    c = docker_client.containers.get(bx.container)
    assert "imd start --auto-update --runtime claude --concurrency 3" in c.logs().decode()


@pytest.mark.skipif(not shutil.which("script") or not shutil.which("docker"), reason="needs script(1) and docker")
def test_interactive_shell_in_a_terminal(docker_client, bx):
    """The TTY path (the docker CLI): in the running box, and in a one-off box."""
    assert bx.run("start").returncode == 0
    for running in (True, False):
        if not running:
            assert bx.run("stop").returncode == 0
        r = subprocess.run(
            ["script", "-qec", f"{sys.executable} -m imdbox shell", "/dev/null"],
            input='imd help | head -1; pwd; grep CapBnd /proc/self/status; echo "proxy=$HTTPS_PROXY."; exit 3\n',
            cwd=str(names.REPO_ROOT),
            env=bx.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 3, r.stdout + r.stderr
        assert f"IdentityMD contributor daemon (v{V1})" in r.stdout
        assert "/home/imd" in r.stdout and "CapBnd:\t0000000000000000" in r.stdout
        # In the running box, HTTPS goes through the login broker (the owner's claude refreshes
        # there); a one-off box has no broker.
        proxy = f"http://127.0.0.1:{layout.BROKER_PORT}" if running else ""
        assert f"proxy={proxy}." in r.stdout, r.stdout


def test_a_foreign_container_holding_the_name_is_never_touched(docker_client, fresh, box_image):
    bx = fresh
    name = bx.container + "-foreign"
    foreign = docker_client.containers.create(box_image, command=["true"], name=name, labels={"imd-test": "1"})
    try:
        for cmd in (["start"], ["stop"], ["status"], ["logs", "--no-follow"], ["remove", "--yes"]):
            r = bx.run(*cmd, IMD_BOX_CONTAINER=name)
            assert r.returncode == 1, (cmd, r.all)
            assert "was not made by box" in r.stderr, (cmd, r.all)
        foreign.reload()
        assert foreign.status == "created" and foreign.name == name
    finally:
        foreign.remove(force=True)


def test_remove_unlinks_and_removes_everything(docker_client, fresh, box_image):
    bx = fresh
    assert bx.run("setup", "--no-shell").returncode == 0
    # Set up, never paired or started: the worker has no config, so no seat to free
    # (`imd unlink` would refuse: "not configured — nothing to unlink").
    r = bx.run("remove", "--keep-image")
    assert r.returncode == 0 and "never set up here (no config): no seat to free" in r.all, r.all
    assert "kept the volume" in r.all
    assert bx.run("shell", "imd", "pair").returncode == 0
    assert bx.run("start").returncode == 0
    image = docker_client.images.get(bx.image)
    r = bx.run("remove")  # no terminal, no --yes: the volume is kept
    assert r.returncode == 0, r.all
    assert "  Unlinked. That NFT can now be paired to another machine." in r.all and "kept the volume" in r.all
    assert _container(docker_client, bx.container) is None
    assert _volume_exists(docker_client, bx.volume)
    # The tag goes, unless a container of someone else's (here: the feed, or another
    # session's box, when the rebuild matched their image) still runs that image: then
    # box says it kept it, and leaves their container alone.
    users = [c for c in boxes.containers(docker_client) if c["ImageID"] == image.id]
    if users and f"kept the image tag {bx.image}" in r.all:
        assert "is using its referenced image" in r.all, r.all
    else:
        assert f"removed the image {bx.image}" in r.all, r.all
        with pytest.raises(docker.errors.ImageNotFound):
            docker_client.images.get(bx.image)
    docker_client.images.get(box_image).tag(*bx.image.split(":"))  # put the tag back
    r = bx.run("remove", "--yes")
    assert r.returncode == 0, r.all
    assert "  Nothing was linked on the server. Local binding cleared." in r.all
    assert f"removed the volume {bx.volume}" in r.all
    assert not _volume_exists(docker_client, bx.volume)


def test_what_the_box_writes_reaches_the_terminal_as_escapes(bx):
    # A hostile `claude` (a release of it, in its package: the jail runs nothing else) answers
    # --version with every class of control sequence, and the worker puts that answer in its log
    # (its runtimes line) and in the doctor's. None reaches box's output as a control character.
    from tests.harness.hostile_text import CONTROL, HOSTILE

    hostile = "".join(HOSTILE.values())
    claude = "/home/imd/.npm-global/bin/claude"
    inside = "/home/imd/.npm-global/lib/node_modules/@anthropic-ai/claude-code/imdt-hostile"
    fake = base64.b64encode(f"#!/bin/sh\nprintf '%s\\n' {shlex.quote(hostile)}\n".encode()).decode()
    plant = f"mv {claude} {claude}.real && echo {fake} | base64 -d > {inside} && chmod +x {inside} && ln -s {inside} {claude}"
    assert bx.run("shell", "bash", "-c", plant).returncode == 0
    try:
        assert bx.run("start").returncode == 0
        deadline = time.monotonic() + 30
        while "runtimes: claude" not in (logs := bx.run("logs", "--no-follow")).stdout and time.monotonic() < deadline:
            time.sleep(0.5)
        status = bx.run("status")
        raw = bx.run("logs", "--no-follow", "--raw")
    finally:
        assert bx.run("shell", "bash", "-c", f"rm -f {inside} && mv -fT {claude}.real {claude}").returncode == 0
    assert "runtimes: claude \\x1b]52;c;" in logs.stdout and "evil\\u202efdp.exe" in logs.stdout, logs.all
    assert "\\x1b]52;c;" in status.stdout, status.all  # the doctor's runtime line
    for r in (logs, status):
        assert not CONTROL.search(r.stdout + r.stderr), repr(r.all)
    # The breaking twin: the same log, raw, carries the bytes a terminal would act on.
    assert "\x1b]52;c;" in raw.stdout and "\u202e" in raw.stdout, raw.all
