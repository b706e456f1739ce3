"""What the image holds, asserted with testinfra through its docker backend: packages,
the user, owners and modes of what root runs, no setuid file, Claude Code's managed
settings. The box runs none of this: a plain container of the image (no network, a
sleep as its command) is only looked into."""

from __future__ import annotations

import hashlib
import json
import re
import uuid

import pytest
import testinfra

from imdbox import layout, names
from tests.harness.topology import NO_HEALTHCHECK

# What the Dockerfile installs from Debian, and what the walls and the browser need.
PACKAGES = (
    "ca-certificates", "curl", "git", "iptables", "bubblewrap", "socat", "tini", "iproute2", "procps",
    "util-linux", "libcap2-bin", "ripgrep", "chromium-headless-shell", "fonts-liberation",
)  # fmt: skip
# Root runs these (the entrypoint, the firewall, the privilege drop, the health check),
# and the worker runs its jobs in these (the jail, its sandbox's bubblewrap, its own git and
# forge): root's, and nobody else may write them.
ROOT_RUNS = (
    "/usr/local/bin/entrypoint.sh",
    f"{layout.LIB}/firewall/init-firewall.sh",
    layout.AS_IMD,
    f"{layout.WORKER_DIR}/healthy",
    f"{layout.WORKER_DIR}/run.sh",
    layout.INSTALL_SH,
    f"{layout.BROWSER_DIR}/playwright-mcp",
    layout.JAIL,
    layout.CLAUDE_JAIL,
    layout.CODEX_JAIL,
    layout.SANDBOX_BWRAP,
)


@pytest.fixture(scope="module")
def image(docker_client, box_image):
    # Root with Docker's default capabilities reads every folder (the walled box's root cannot).
    container = docker_client.containers.run(
        box_image, entrypoint=["/usr/bin/sleep", "infinity"], command=[], name=f"imdt-contents-{uuid.uuid4().hex[:8]}",
        network_mode="none", labels={"imd-test": "1"}, healthcheck=NO_HEALTHCHECK, detach=True,
    )  # fmt: skip
    try:
        yield testinfra.get_host(f"docker://{container.name}")
    finally:
        container.remove(force=True)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_debian_package_is_installed(image, package):
    assert image.package(package).is_installed


def test_the_worker_user_is_imd_1000_with_a_private_home(image):
    imd = image.user("imd")
    assert (imd.uid, imd.gid, imd.home, imd.shell) == (names.UID, names.UID, names.HOME, "/bin/bash")
    assert imd.groups == ["imd"]
    home = image.file(names.HOME)
    assert home.user == "imd" and home.mode == 0o700


# ... and what the jail reads of itself: its rooms, sourced.
ROOT_READS = sorted(f"{layout.JAIL_ROOMS}/{room.name}" for room in (names.REPO_ROOT / "worker" / "jail.d").iterdir())


@pytest.mark.parametrize("path", ROOT_RUNS)
def test_what_root_runs_is_roots_and_only_root_may_change_it(image, path):
    f = image.file(path)
    assert f.is_file and f.user == "root" and f.group == "root" and f.mode == 0o755, (f.user, oct(f.mode))


@pytest.mark.parametrize("path", ROOT_READS)
def test_the_jails_rooms_are_roots_and_only_root_may_change_them(image, path):
    f = image.file(path)
    assert f.is_file and f.user == "root" and f.group == "root" and f.mode == 0o644, (f.user, oct(f.mode))
    assert image.file(layout.JAIL_ROOMS).user == "root" and image.file(layout.JAIL_ROOMS).mode == 0o755


@pytest.mark.parametrize("tool", ["git", "forge"])
def test_the_workers_hands_are_the_jail_itself(image, tool):
    hand = image.file(f"{layout.HANDS_DIR}/{tool}")
    assert hand.is_symlink and hand.linked_to == layout.JAIL and hand.user == "root"


def test_the_hands_filter_is_the_repos_and_roots(image):
    f = image.file(layout.HANDS_FILTER)
    assert f.is_file and f.user == "root" and f.mode == 0o644, (f.user, oct(f.mode))
    assert f.sha256sum == hashlib.sha256((names.REPO_ROOT / "worker" / "hands.bpf").read_bytes()).hexdigest()


def test_no_setuid_or_setgid_file_in_the_image(image):
    assert image.check_output("find / -xdev -perm /6000 -type f") == ""


def test_the_managed_settings_are_roots_and_what_the_repo_says(image):
    settings, folder = image.file(layout.CLAUDE_SETTINGS), image.file("/etc/claude-code")
    assert (settings.user, settings.mode, folder.user, folder.mode) == ("root", 0o644, "root", 0o755)
    repo = json.loads((names.REPO_ROOT / "image" / "claude-code" / "managed-settings.json").read_text())
    assert json.loads(settings.content_string) == repo


def test_the_ca_folder_and_the_sandbox_library_are_roots(image):
    folder, srt = image.file(layout.CA_DIR), image.file(layout.SANDBOX_RUNTIME)
    assert (folder.user, folder.mode, srt.user, srt.is_file) == ("root", 0o755, "root", True)


def test_the_compile_cache_is_roots_and_only_root_may_change_it(image):
    # The browser the check proves runs this code: were it imd's, the volume could plant it.
    cache = image.file(layout.NODE_COMPILE_CACHE)
    assert (cache.user, cache.mode) == ("root", 0o755)
    assert image.check_output(f"find {layout.NODE_COMPILE_CACHE} -type f | wc -l") != "0"
    assert image.check_output(f"find {layout.NODE_COMPILE_CACHE} ! -user root -o -perm /022") == ""


@pytest.fixture(scope="module")
def as_imd(image):
    """The same container, its commands run as imd (`docker exec -u`)."""
    return testinfra.get_host(f"docker://{names.UID}@{image.backend.name}")


def _compile_cache_hits(host, script: str) -> list[str]:
    """What node says it took from its compile cache while `script` ran."""
    out = host.run(f"export NODE_DEBUG_NATIVE=COMPILE_CACHE; {script}")
    return re.findall(r"V8 code cache for CommonJS (\S+) was accepted", out.stdout + out.stderr)


def test_the_browser_starts_from_the_compile_cache_as_imd(as_imd):
    # The launcher's MCP server, until it listens (unasked, it never starts Chromium).
    launch = (
        f"{layout.BROWSER_DIR}/playwright-mcp --http 0 2>/tmp/mcp.err & pid=$!; "
        "for _ in $(seq 100); do grep -q 'Listening on' /tmp/mcp.err && break; sleep 0.1; done; "
        "kill $pid; cat /tmp/mcp.err"
    )
    hits = _compile_cache_hits(as_imd, launch)
    assert "/opt/playwright-mcp/node_modules/playwright-core/lib/coreBundle.js" in hits, hits
    # The control: the same server's node started by hand, without the launcher, compiles it all.
    plain = _compile_cache_hits(as_imd, "node /opt/playwright-mcp/node_modules/@playwright/mcp/cli.js --help")
    assert plain == []
