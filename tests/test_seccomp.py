"""seccomp.json is Docker's default profile plus exactly the read jail's calls."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from imdbox import names

ROOT = names.REPO_ROOT
ADDED = {"chroot", "clone", "clone3", "mount", "pivot_root", "setns", "umount2", "unshare"}


def load(path):
    return json.loads(Path(path).read_text())


def _generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location("seccomp_generate", ROOT / "seccomp" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_seccomp_json_is_generated_from_the_upstream_default():
    gen = _generator()
    upstream = load(ROOT / "seccomp" / "docker-default.json")
    assert (ROOT / "seccomp.json").read_text() == gen.render(gen.build(upstream))


def test_the_only_difference_is_one_added_allow_rule():
    upstream = load(ROOT / "seccomp" / "docker-default.json")
    ours = load(ROOT / "seccomp.json")
    assert {k: v for k, v in ours.items() if k != "syscalls"} == {k: v for k, v in upstream.items() if k != "syscalls"}
    assert ours["syscalls"][: len(upstream["syscalls"])] == upstream["syscalls"]
    extra = ours["syscalls"][len(upstream["syscalls"]) :]
    assert len(extra) == 1
    rule = extra[0]
    assert set(rule["names"]) == ADDED
    assert rule["action"] == "SCMP_ACT_ALLOW"
    assert not ({"args", "includes", "excludes"} & set(rule)), "the additions are unconditional and nothing else"


def test_upstream_copy_matches_debians_package(docker_client):
    """seccomp/docker-default.json is byte-for-byte the file Debian trixie ships."""
    from tests.harness.image import BASE_IMAGE, ensure_base

    ensure_base(docker_client)
    with tempfile.TemporaryDirectory() as out:
        script = (
            "set -e; apt-get update -qq >/dev/null; cd /tmp; apt-get download -qq golang-github-docker-docker-dev; "
            "dpkg-deb -x golang-github-docker-docker-dev_*.deb x; "
            "cp x/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json /out/; ls *.deb > /out/deb"
        )
        try:
            docker_client.containers.run(
                BASE_IMAGE, ["bash", "-c", script], volumes={out: {"bind": "/out", "mode": "rw"}}, remove=True
            )
        except Exception as exc:  # the package mirror is a network dependency
            pytest.fail(f"could not fetch Debian's golang-github-docker-docker-dev: {exc}")
        fetched = Path(out, "default.json").read_bytes()
        assert fetched == (ROOT / "seccomp" / "docker-default.json").read_bytes(), Path(out, "deb").read_text()
