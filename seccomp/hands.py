#!/usr/bin/env python3
"""Write worker/hands.bpf: the seccomp filter of the worker's own hands, no link made.

The worker's own git and forge run in a job's jail (worker/jail), on a tree the job
wrote, and whatever that tree makes them run (a nested repository's fsmonitor, a hook, a
filter) runs there too. A link it left in the workspace or the job's folder would lead the
worker's own reads, writes and deletions, outside every jail, out of them. Under this
filter no process of the hands' jail makes one: symlink and symlinkat fail with EPERM, and
so does every call of another ABI (i386, x32, arm32), where those have numbers of their own;
io_uring, which can make a link without those calls, is refused too (the box's profile
refuses it already), and so is every mount call. A hard link stays in its own mount, which
is the workspace's or the job folder's own. A link already in the workspace can still be
moved: worker/jail searches after a call on a workspace that holds any.

bubblewrap loads it (`--seccomp FD`) as a classic BPF program: struct sock_filter, eight
bytes each, little-endian (as both of the image's architectures are), read against struct
seccomp_data (nr at 0, arch at 4). One file serves both.
"""

import struct
import sys
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent.parent / "worker" / "hands.bpf"

# linux/audit.h's AUDIT_ARCH_*, and each architecture's numbers for the refused calls
# (arch/x86/entry/syscalls/syscall_64.tbl; include/uapi/asm-generic/unistd.h).
X86_64 = 0xC000003E
AARCH64 = 0xC00000B7
X32_BIT = 0x40000000  # x32's calls are x86_64's arch with this bit set
# The mount calls too: an overlay mounted in a namespace of a process's own copies a link up
# into its upper folder, with no call of the process's own to make it.
MOUNTS = {"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
          "mount_setattr": 442, "open_tree_attr": 467}  # fmt: skip
REFUSED = {
    X86_64: {"symlink": 88, "symlinkat": 266, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
             "mount": 165, "umount2": 166, "pivot_root": 155, **MOUNTS},
    AARCH64: {"symlinkat": 36, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
              "mount": 40, "umount2": 39, "pivot_root": 41, **MOUNTS},
}  # fmt: skip

# linux/filter.h and linux/seccomp.h.
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K
ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
NR, ARCH = 0, 4  # offsets in struct seccomp_data


def program() -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) for each instruction: the arch picks a block; a block loads the call
    number and jumps to the one refusal at the end for each refused call; the rest is allowed."""
    blocks = []
    for arch, calls in REFUSED.items():
        tests = ([(JGE_K, X32_BIT)] if arch == X86_64 else []) + [(JEQ_K, nr) for nr in calls.values()]
        blocks.append((arch, tests))
    header = 1 + len(blocks) + 1  # load arch, one jump per arch, refuse any other
    starts, at = [], header
    for _, tests in blocks:
        starts.append(at)
        at += 1 + len(tests) + 1  # load nr, the tests, allow
    refuse = at
    out = [(LD_W_ABS, 0, 0, ARCH)]
    out += [(JEQ_K, start - (1 + i) - 1, 0, arch) for i, ((arch, _), start) in enumerate(zip(blocks, starts))]
    out.append((RET_K, 0, 0, EPERM))
    for (_, tests), start in zip(blocks, starts):
        out.append((LD_W_ABS, 0, 0, NR))
        out += [(code, refuse - (start + 1 + j) - 1, 0, k) for j, (code, k) in enumerate(tests)]
        out.append((RET_K, 0, 0, ALLOW))
    out.append((RET_K, 0, 0, EPERM))
    return out


def render(instructions: list[tuple[int, int, int, int]]) -> bytes:
    return b"".join(struct.pack("<HBBI", *ins) for ins in instructions)


def main() -> int:
    OUTPUT.write_bytes(render(program()))
    print(f"wrote {OUTPUT.name}: no symlink, symlinkat, io_uring or mount, and no other ABI", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
