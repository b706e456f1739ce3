#!/usr/bin/env python3
"""Write seccomp.json: Docker's default profile plus the calls the read jail needs.

The upstream default is seccomp/docker-default.json, copied from Debian trixie's
golang-github-docker-docker-dev package (seccomp/fetch-upstream.sh refreshes it).
We only ever append one rule, so a reviewer can diff the two files and see
exactly what the box allows beyond Docker's default.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "docker-default.json"
OUTPUT = HERE.parent / "seccomp.json"

# bubblewrap (Claude's read jail) needs new namespaces and a private mount tree;
# chroot is for Chromium's own sandbox. Docker's default allows these only with
# CAP_SYS_ADMIN, which the box never has, so the calls stay unprivileged.
ADDED_RULE = {
    "names": ["chroot", "clone", "clone3", "mount", "pivot_root", "setns", "umount2", "unshare"],
    "action": "SCMP_ACT_ALLOW",
    "comment": "IMD box: user namespaces for the bubblewrap read jail and Chromium's sandbox",
}


def build(upstream: dict) -> dict:
    profile = json.loads(json.dumps(upstream))
    profile["syscalls"].append(ADDED_RULE)
    return profile


def render(profile: dict) -> str:
    return json.dumps(profile, indent="\t") + "\n"


def main() -> int:
    upstream = json.loads(UPSTREAM.read_text())
    OUTPUT.write_text(render(build(upstream)))
    print(f"wrote {OUTPUT.name}: Docker default + {', '.join(ADDED_RULE['names'])}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
