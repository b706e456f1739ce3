"""The fake IMD worker and its release feed, built for the tests.

`release(...)` makes the three files of a worker release (identitymd-worker.tgz,
SHA256SUMS, build.json) from `worker/`, with a features.json saying which
runtimes the build knows and whether it has `imd tools add`; `agent_tgz(...)`
makes a stand-in agent CLI package (claude, codex, grok) for npm to install.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
FEED_SERVER_JS = HERE / "feed_server.mjs"


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def npm_tgz(files: dict[str, bytes], executables: Iterable[str] = ()) -> bytes:
    """A package tarball as `npm pack` makes it: every file under package/."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in sorted(files.items()):
            _add(tar, f"package/{name}", data, 0o755 if name in executables else 0o644)
    return gzip.compress(raw.getvalue(), mtime=0)


def worker_tgz(version: str, runtimes=("claude", "codex"), tools: bool = True) -> bytes:
    src = HERE / "worker"
    pkg = json.loads((src / "package.json").read_text())
    pkg["version"] = version
    files = {
        "package.json": json.dumps(pkg, indent=2).encode(),
        "features.json": json.dumps({"runtimes": list(runtimes), "tools": tools}).encode(),
        "bin/imd.js": (src / "bin" / "imd.js").read_bytes(),
    }
    return npm_tgz(files, executables=["bin/imd.js"])


def agent_tgz(package: str, bin_name: str, version: str = "0.0.1-fake") -> bytes:
    pkg = {"name": package, "version": version, "bin": {bin_name: "bin/agent.js"}, "license": "MIT"}
    files = {
        "package.json": json.dumps(pkg, indent=2).encode(),
        "bin/agent.js": (HERE / "agent" / "bin" / "agent.js").read_bytes(),
    }
    return npm_tgz(files, executables=["bin/agent.js"])


def release(version: str, runtimes=("claude", "codex"), tools: bool = True, tamper: bool = False) -> dict[str, bytes]:
    """The three release files; `tamper` changes the tgz after SHA256SUMS was written."""
    tgz = worker_tgz(version, runtimes, tools)
    sums = f"{hashlib.sha256(tgz).hexdigest()}  identitymd-worker.tgz\n".encode()
    if tamper:
        tgz = worker_tgz(version + "-evil", runtimes, tools)
    build = json.dumps({"version": version, "commit": "f" * 40, "builtAt": "2026-01-01T00:00:00Z"}).encode()
    return {"identitymd-worker.tgz": tgz, "SHA256SUMS": sums, "build.json": build}


def feed_tar(tree: dict[str, bytes], root: str = "srv") -> bytes:
    """The whole feed as a tar for `put_archive` into the feed container."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in sorted(tree.items()):
            _add(tar, f"{root}/{name}", data)
    return raw.getvalue()


def default_feed() -> dict[str, bytes]:
    tree: dict[str, bytes] = {}
    variants: dict[str, dict[str, bytes]] = {
        "v1": release("1.0.0-fake"),
        "v2": release("2.0.0-fake"),
        "grok": release("3.0.0-fake", runtimes=("claude", "codex", "grok")),
        "notools": release("1.0.0-notools", tools=False),
        "tampered": release("9.9.9-fake", tamper=True),
    }
    for folder, files in variants.items():
        for name, data in files.items():
            tree[f"{folder}/{name}"] = data
    tree["npm/claude-code.tgz"] = agent_tgz("@anthropic-ai/claude-code", "claude")
    tree["npm/codex.tgz"] = agent_tgz("@openai/codex", "codex")
    tree["npm/grok-cli.tgz"] = agent_tgz("@vibe-kit/grok-cli", "grok")
    tree["feed_server.mjs"] = FEED_SERVER_JS.read_bytes()
    return tree


def read_version(tgz: bytes) -> Optional[str]:
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        member = tar.extractfile("package/package.json")
        return json.loads(member.read())["version"] if member else None
