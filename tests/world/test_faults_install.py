"""Faults while box installs into the volume or replaces the image, against the real engine.

- `box update` cut short by Ctrl-C in each phase (the build, the stop, the agent-CLI refresh);
- `box setup` cut short during the worker download, and a release cut off half-way;
- a full volume under `box setup` and `box update`;
- Ctrl-C during `box pull`.

After each: box ended within 2 s (a Ctrl-C) or said what to do in one line, no one-off box,
network or staging folder is left, the kept files (tests/harness/keep.py) and the installed
worker are byte-identical, and a second run completes. Phases are found from box's own
output, or from the feed holding a download open (`/hold/` in tests/fake_worker), never by
timing.
"""

from __future__ import annotations

import http.server
import io
import tarfile
import threading
import urllib.error
import urllib.request
import uuid

import docker
import pytest

from imdbox import names
from tests.fake_worker.fixtures import FEED_URL, box_env, copy_of, pair, remove_container
from tests.harness import boxes
from tests.harness.cli import BOX
from tests.harness.image import BASE_IMAGE, CA_FILE
from tests.harness.interrupt import GRACE, interrupt, left_after
from tests.harness.keep import kept_files
from tests.harness.registry import push_tiny
from tests.harness.topology import NO_HEALTHCHECK

PKG = "/home/imd/.npm-global/lib/node_modules/@identitymd/worker"
CLAUDE_PKG = "/home/imd/.npm-global/lib/node_modules/@anthropic-ai/claude-code"
# The installed worker and Claude Code, file by file (bin links as their targets).
INSTALLED = [
    f"{PKG}/package.json",
    f"{PKG}/dist/cli.js",
    "/home/imd/.npm-global/bin/imd",
    "/home/imd/.imd-box/worker-build.json",
    f"{CLAUDE_PKG}/package.json",
    "/home/imd/.npm-global/bin/claude",
]
UPDATE = ["update", "--base-image", BASE_IMAGE, "--ca-cert", CA_FILE]


@pytest.fixture(scope="module")
def installed(docker_client, box_image, set_up):
    with copy_of(docker_client, box_image, set_up, paired=True, login=True) as env:
        yield env


@pytest.fixture
def bx(docker_client, installed):
    yield installed
    remove_container(docker_client, installed)


def _snapshot(client, env) -> dict:
    files = {**kept_files(client, env), **_read(client, env, INSTALLED)}
    assert all(files.values()), [p for p, v in files.items() if not v]
    return files


def _helper(client, env):
    return client.containers.create(
        env.image,
        entrypoint=["true"],
        command=[],
        network_mode="none",
        volumes={env.volume: {"bind": names.HOME, "mode": "ro"}},
        labels={"imd-test": "1"},
        name=f"imdt-read-{uuid.uuid4().hex[:8]}",
    )


def _read(client, env, paths) -> dict:
    """Files of the volume (a bin link as its target), read by one container that never runs."""
    helper = _helper(client, env)
    out = {}
    try:
        for path in paths:
            chunks, _ = helper.get_archive(path)
            with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
                member = tar.next()
                out[path] = member.linkname.encode() if member.issym() else tar.extractfile(member).read()
    finally:
        helper.remove(force=True)
    return out


def _listing(client, env, folder: str) -> list[str]:
    """The names in a folder of the volume, read by a container that never runs."""
    helper = _helper(client, env)
    try:
        chunks, _ = helper.get_archive(folder)
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
            return sorted(m.name.split("/", 1)[1] for m in tar.getmembers() if m.name.count("/") == 1)
    finally:
        helper.remove(force=True)


def _staging_left(client, env) -> list[str]:
    return [
        n for n in _listing(client, env, f"{names.HOME}/.imd-box") if n.startswith(".staging") or n.endswith(".tmp")
    ]


def _oneoffs(client, env) -> list[str]:
    """One-off boxes of this env (the worker's own box aside)."""
    return boxes.names_from(client, env.container + "-")


def _our_networks(client) -> set[str]:
    return {n.name for n in client.networks.list() if n.name.startswith(("imd-box", "imdt-box"))}


def _assert_ended_cleanly(client, env, took: float, stderr: str) -> None:
    assert took < GRACE, f"box still running {GRACE} s after Ctrl-C\n{stderr[-4000:]}"
    assert stderr.strip() == "", f"not quiet: {stderr!r}"
    assert left_after(lambda: _oneoffs(client, env)) == [], "a one-off box was left behind"
    assert _staging_left(client, env) == [], "a staging folder or half-written file was left in the volume"


# ---------------------------------------------------------------- box update, cut short


def _hold_the_stop(env) -> dict:
    # The stand-in's hook: its next shutdown takes 8 s, so Ctrl-C lands inside the stop.
    r = env.run("shell", "bash", "-c", "echo 8 > /home/imd/.identitymd/fake-slow-stop")
    assert r.returncode == 0, r.all
    return {}


def _no_change(env) -> dict:
    return {}


PHASES = {
    # The build's FROM pulls a base image through the holding proxy: Ctrl-C lands inside
    # the build however fast the rest of it would be (its cache is left alone).
    "build": (_no_change, None),
    "stop": (_hold_the_stop, "stopping the box"),
    # The feed holds the CLI's download open: npm waits in its staging folder.
    "agents": (lambda env: {"IMD_CLAUDE_PACKAGE": f"{FEED_URL}/hold/npm/claude-code.tgz"}, "installing the claude CLI"),
}


@pytest.mark.parametrize("phase", PHASES)
def test_update_cut_short_in_each_phase_then_completes(docker_client, bx, held_image, phase):
    prepare, until = PHASES[phase]
    assert bx.run("start").returncode == 0
    before = _snapshot(docker_client, bx)
    networks = _our_networks(docker_client)
    overrides = prepare(bx)
    argv = [*BOX, *UPDATE]
    if phase == "build":
        reference, proxy = held_image
        argv = [*BOX, "update", "--base-image", reference, "--ca-cert", CA_FILE]
        until = proxy.holding.is_set
    took, stderr = interrupt(argv, bx.env(**overrides), until, 0.0)
    _assert_ended_cleanly(docker_client, bx, took, stderr)
    assert _our_networks(docker_client) == networks
    assert _snapshot(docker_client, bx) == before
    r = bx.run(*UPDATE, timeout=1200)
    assert r.returncode == 0, r.all
    assert "the box is running again" in r.stdout, r.all
    c = docker_client.containers.get(bx.container)
    assert c.status == "running" and c.attrs.get("RestartCount") == 0
    assert _snapshot(docker_client, bx) == before
    assert _staging_left(docker_client, bx) == []


# ---------------------------------------------------------------- box setup, cut short or cut off


def test_setup_cut_short_during_the_download_changes_nothing(docker_client, bx):
    before = _snapshot(docker_client, bx)
    env = bx.env(IMD_WORKER_URL=f"{FEED_URL}/hold/v2")
    took, stderr = interrupt([*BOX, "setup", "--no-shell"], env, "downloading the worker release", 0.0)
    _assert_ended_cleanly(docker_client, bx, took, stderr)
    assert _snapshot(docker_client, bx) == before


@pytest.mark.parametrize(
    "folder, says",
    [
        ("truncated", "checksum mismatch for identitymd-worker.tgz"),
        ("truncated-sums", "identitymd-worker.tgz is not a whole archive (cut off or damaged)"),
    ],
)
def test_a_release_cut_off_half_way_changes_nothing(docker_client, bx, folder, says):
    # A staging folder a killed run left behind is cleared by the next one.
    r = bx.run(
        "shell",
        "bash",
        "-c",
        "mkdir -p /home/imd/.imd-box/.staging.killed/prefix && echo x > /home/imd/.imd-box/.staging.killed/f",
    )
    assert r.returncode == 0, r.all
    before = _snapshot(docker_client, bx)
    r = bx.run("setup", "--no-shell", IMD_WORKER_URL=f"{FEED_URL}/{folder}")
    assert r.returncode == 1, r.all
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "refusing to install" in lines[0], r.all
    assert "Traceback" not in r.all
    assert _snapshot(docker_client, bx) == before
    assert _staging_left(docker_client, bx) == []


def test_a_failed_download_is_one_line_with_what_to_do(docker_client, bx):
    # The feed down (503, which curl tries twice more): curl's word once, in box's one line.
    before = _snapshot(docker_client, bx)
    r = bx.run("setup", "--no-shell", IMD_WORKER_URL=f"{FEED_URL}/unavailable/v2")
    assert r.returncode == 1, r.all
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.all
    assert lines[0].startswith(
        f"box: could not download {FEED_URL}/unavailable/v2/identitymd-worker.tgz "
        "(The requested URL returned error: 503); the installed worker (if any) is unchanged: "
        "check that this machine reaches it (or name a mirror: `"
    ), r.all
    assert lines[0].endswith(" setup` again"), r.all
    assert r.all.count("returned error: 503") == 1 and "FAILED" not in r.all, r.all
    assert _snapshot(docker_client, bx) == before
    assert _staging_left(docker_client, bx) == []


# ---------------------------------------------------------------- a full volume

SIZE_MB = 32


@pytest.fixture
def small_volume(docker_client, box_image, feed):
    """A box env whose volume is a 32 MB tmpfs, kept mounted by an idle container (a tmpfs
    volume forgets its files when the last container using it goes)."""
    with box_env(docker_client, box_image) as env:
        docker_client.volumes.create(
            env.volume,
            driver="local",
            driver_opts={"type": "tmpfs", "device": "tmpfs", "o": f"size={SIZE_MB}m,uid=1000,gid=1000,mode=0700"},
            labels={"imd-test": "1", names.LABEL: "1"},
        )
        keeper = docker_client.containers.run(
            box_image,
            entrypoint=["sleep", "infinity"],
            command=[],
            network_mode="none",
            volumes={env.volume: {"bind": "/keep", "mode": "ro"}},
            labels={"imd-test": "1"},
            healthcheck=NO_HEALTHCHECK,
            name=f"imdt-keeper-{uuid.uuid4().hex[:8]}",
            detach=True,
        )
        try:
            yield env
        finally:
            keeper.remove(force=True)


def _fill(env, leave_kb: int) -> None:
    script = (
        "avail=$(df -Pk /home/imd | awk 'NR == 2 {print $4}'); "
        f"fallocate -l $(( (avail - {leave_kb}) * 1024 )) /home/imd/filler && df -Pk /home/imd | awk 'NR == 2 {{print $4}}'"
    )
    r = env.run("shell", "bash", "-c", script)
    assert r.returncode == 0 and int(r.stdout.split()[-1]) <= leave_kb, r.all


def test_a_full_volume_fails_setup_and_update_in_one_line(docker_client, small_volume):
    env = small_volume
    r = env.run("setup", "--no-shell")
    assert r.returncode == 0, r.all
    pair(env, login=True)
    before = _snapshot(docker_client, env)
    _fill(env, leave_kb=8)  # room for the first small files, not for the install
    for args, again in ((["setup", "--no-shell"], "box setup"), (UPDATE, "box update")):
        r = env.run(*args, timeout=1200)
        assert r.returncode == 1, r.all
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.all
        assert lines[0].startswith(f"box: the volume {env.volume} is full (no space left on device)"), r.all
        assert f"then run `{again}` again" in lines[0]
        assert _snapshot(docker_client, env) == before, args
        assert _staging_left(docker_client, env) == [], args
    # What the user does: free space, run it again.
    assert env.run("shell", "rm", "-f", "/home/imd/filler").returncode == 0
    r = env.run("setup", "--no-shell")
    assert r.returncode == 0, r.all
    assert _snapshot(docker_client, env) == before


# ---------------------------------------------------------------- box pull, cut short


class _HoldingProxy(http.server.ThreadingHTTPServer):
    """127.0.0.1 in front of the loopback registry: passes every request on, except a
    layer's download, which it holds open (and says so) until it is closed."""

    daemon_threads = True

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.holding = threading.Event()
        self.release = threading.Event()
        super().__init__(("127.0.0.1", 0), _ProxyHandler)


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def _relay(self, body: bool) -> None:
        server: _HoldingProxy = self.server  # type: ignore[assignment]
        if "/blobs/sha256:" in self.path and self.command == "GET":
            server.holding.set()
            server.release.wait(120)
            return
        headers = {"Accept": ", ".join(self.headers.get_all("Accept") or ["*/*"])}
        req = urllib.request.Request(f"http://{server.upstream}{self.path}", headers=headers, method=self.command)
        try:
            resp = urllib.request.urlopen(req, timeout=30)
        except urllib.error.HTTPError as exc:
            resp = exc
        data = resp.read() if body else b""
        self.send_response(resp.status)
        for k, v in resp.headers.items():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", resp.headers.get("Content-Length", str(len(data))))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self) -> None:
        self._relay(True)

    def do_HEAD(self) -> None:
        self._relay(False)


@pytest.fixture
def held_image(docker_client, registry):
    """A tiny image in the loopback registry, and its reference through a proxy that
    holds its layer downloads open: (reference, proxy)."""
    tag = uuid.uuid4().hex[:8]
    pushed = f"{registry}/imdt-tiny"
    proxy = _HoldingProxy(registry)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    through = f"127.0.0.1:{proxy.server_address[1]}/imdt-tiny:{tag}"
    try:
        push_tiny(docker_client, pushed, tag)
        yield through, proxy
    finally:
        proxy.release.set()
        proxy.shutdown()
        proxy.server_close()
        for ref in (f"{pushed}:{tag}", through):
            try:
                docker_client.images.remove(ref, force=True)
            except docker.errors.ImageNotFound:
                pass


def test_ctrl_c_during_pull_leaves_nothing(docker_client, held_image):
    through, proxy = held_image
    tag = uuid.uuid4().hex[:8]
    local = f"imdt-pulled:{tag}"
    env = {"IMD_BOX_IMAGE": local, "IMD_BOX_CONTAINER": f"imdt-box-{tag}", "IMD_BOX_VOLUME": f"imdt-home-{tag}"}
    networks = _our_networks(docker_client)
    took, stderr = interrupt([*BOX, "pull", "--image", through], env, proxy.holding.is_set, 0.0)
    assert took < GRACE, f"`box pull` still running {GRACE} s after Ctrl-C\n{stderr[-4000:]}"
    assert stderr.strip() == "", f"not quiet: {stderr!r}"
    proxy.release.set()
    for ref in (through, local):
        with pytest.raises(docker.errors.ImageNotFound):
            docker_client.images.get(ref)
    # No container named after this env (box names every container it makes so), none of either image.
    assert boxes.names_from(docker_client, env["IMD_BOX_CONTAINER"]) == []
    assert [c["Names"] for c in boxes.containers(docker_client) if c["Image"] in (through, local)] == []
    assert _our_networks(docker_client) == networks
