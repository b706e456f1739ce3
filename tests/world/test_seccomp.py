"""seccomp.json is Docker's default profile plus exactly the read jail's calls; worker/hands.bpf,
the worker's own hands' filter, refuses making a link and nothing else."""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

import pytest

from imdbox import names

ROOT = names.REPO_ROOT
ADDED = {"chroot", "clone", "clone3", "mount", "pivot_root", "setns", "umount2", "unshare"}


def load(path):
    return json.loads(Path(path).read_text())


def _generator(name: str = "generate"):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"seccomp_{name}", ROOT / "seccomp" / f"{name}.py")
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


def test_hands_bpf_is_generated_by_seccomp_hands():
    gen = _generator("hands")
    assert (ROOT / "worker" / "hands.bpf").read_bytes() == gen.render(gen.program()), "run seccomp/hands.py"


ALLOW, EPERM = 0x7FFF0000, 0x00050001  # SECCOMP_RET_ALLOW; SECCOMP_RET_ERRNO | EPERM
X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028  # AUDIT_ARCH_*


def verdict(program: bytes, arch: int, nr: int) -> int:
    """What the kernel's classic BPF would return for this call: the few instructions a
    seccomp filter of ours may hold, and no other."""
    data = struct.pack("<iI", nr, arch) + bytes(56)  # struct seccomp_data: nr, arch, ...
    ins = [struct.unpack_from("<HBBI", program, i) for i in range(0, len(program), 8)]
    pc, a = 0, 0
    while True:
        code, jt, jf, k = ins[pc]
        if code == 0x20:  # ld [k]
            a = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35):  # jeq, jge #k
            pc += 1 + (jt if (a == k if code == 0x15 else a >= k) else jf)
        elif code == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"instruction {code:#x} at {pc}")


@pytest.mark.parametrize(
    "arch, nr, expected",
    [
        (X86_64, 88, EPERM),  # symlink
        (X86_64, 266, EPERM),  # symlinkat
        (X86_64, 425, EPERM),  # io_uring_setup (IORING_OP_SYMLINKAT)
        (X86_64, 427, EPERM),  # io_uring_register
        (X86_64, 0x40000000 | 266, EPERM),  # x32's symlinkat
        (X86_64, 0x40000000 | 257, EPERM),  # x32 at all
        (X86_64, 257, ALLOW),  # openat
        (X86_64, 86, ALLOW),  # link: a hard link stays in its mount
        (X86_64, 82, ALLOW),  # rename
        (X86_64, 59, ALLOW),  # execve
        (X86_64, 165, EPERM),  # mount: an overlay would copy a link up
        (X86_64, 430, EPERM),  # fsopen
        (X86_64, 429, EPERM),  # move_mount
        (X86_64, 272, ALLOW),  # unshare: a namespace mounts nothing without the calls above
        (AARCH64, 36, EPERM),  # symlinkat
        (AARCH64, 426, EPERM),  # io_uring_enter
        (AARCH64, 56, ALLOW),  # openat
        (AARCH64, 37, ALLOW),  # linkat
        (AARCH64, 40, EPERM),  # mount
        (AARCH64, 432, EPERM),  # fsmount
        (I386, 83, EPERM),  # i386's symlink, by int 0x80
        (I386, 5, EPERM),  # i386 at all
        (ARM, 83, EPERM),  # arm32 at all
    ],
)
def test_the_hands_filter_refuses_making_a_link_or_a_mount_and_nothing_else(arch, nr, expected):
    assert verdict((ROOT / "worker" / "hands.bpf").read_bytes(), arch, nr) == expected


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
