"""The fake IMD worker and its release feed, built for the tests.

`release(...)` makes the three files of a worker release (identitymd-worker.tgz,
SHA256SUMS, build.json) as the real release has them: the package
@identitymd/worker with bin `imd` = dist/cli.js (from `worker/bin/imd.js`) and a
build.json with daemonVersion. features.json in the package says what the
stand-in does: its runtimes, whether --runtime takes a list (a test-only
variant; the real worker takes one), whether it has `imd tools`.
`agent_tgz(...)` makes a stand-in agent CLI package (claude, codex, grok).
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


# The feed's releases, by folder. daemonVersion is `<version>+<sourceCommit[:8]>`,
# as the real release's build.json has it.
RELEASES: dict[str, dict] = {
    "v1": dict(version="0.1.0", commit="0000000100000000000000000000000000000001"),
    "v2": dict(version="0.2.0", commit="0000000200000000000000000000000000000002"),
    # Takes `--runtime claude,grok`. No released worker does: this exists only so
    # box's multi-runtime path can be tested.
    "multi": dict(
        version="0.3.0",
        commit="0000000300000000000000000000000000000003",
        runtimes=("claude", "codex", "grok"),
        runtime_list=True,
    ),
    "notools": dict(version="0.0.9", commit="0000000900000000000000000000000000000009", tools=False),
    "tampered": dict(version="9.9.9", commit="0000000e0000000000000000000000000000000e", tamper=True),
}


def daemon_version(folder: str) -> str:
    spec = RELEASES[folder]
    return f"{spec['version']}+{spec['commit'][:8]}"


def _build_json(version: str, commit: str) -> bytes:
    build = {
        "schemaVersion": 1,
        "repository": "Identity-md/worker",
        "sourceCommit": commit,
        "sourceDirty": False,
        "inputHash": hashlib.sha256(commit.encode()).hexdigest(),
        "version": version,
        "daemonVersion": f"{version}+{commit[:8]}",
    }
    return (json.dumps(build, indent=2) + "\n").encode()


def worker_tgz(
    version: str,
    commit: str,
    runtimes=("claude", "codex"),
    runtime_list: bool = False,
    tools: bool = True,
    alive_seconds: int = 2,
    scripts: Optional[dict] = None,
) -> bytes:
    """The worker package as the release ships it (package/dist/cli.js, build.json),
    plus features.json, which only the stand-in reads. The liveness line comes every
    `alive_seconds` (the real worker: 30) so a test sees a fresh line soon. `scripts`: npm's
    lifecycle scripts of a release that has them (a hostile one)."""
    src = HERE / "worker"
    pkg = json.loads((src / "package.json").read_text())
    pkg["version"] = version
    if scripts:
        pkg["scripts"] = scripts
    features = {"runtimes": list(runtimes), "runtimeList": runtime_list, "tools": tools, "aliveSeconds": alive_seconds}
    files = {
        "package.json": json.dumps(pkg, indent=2).encode(),
        "build.json": _build_json(version, commit),
        "features.json": json.dumps(features, indent=2).encode(),
        "dist/cli.js": (src / "bin" / "imd.js").read_bytes(),
    }
    return npm_tgz(files, executables=["dist/cli.js"])


def agent_tgz(package: str, bin_name: str, version: str = "0.0.1-fake") -> bytes:
    pkg = {"name": package, "version": version, "bin": {bin_name: "bin/agent.js"}, "license": "MIT"}
    files = {
        "package.json": json.dumps(pkg, indent=2).encode(),
        "bin/agent.js": (HERE / "agent" / "bin" / "agent.js").read_bytes(),
    }
    return npm_tgz(files, executables=["bin/agent.js"])


def release(version: str, commit: str, tamper: bool = False, **features) -> dict[str, bytes]:
    """The three release files; `tamper` changes the tgz after SHA256SUMS was written."""
    tgz = worker_tgz(version, commit, **features)
    sums = f"{hashlib.sha256(tgz).hexdigest()}  identitymd-worker.tgz\n".encode()
    if tamper:
        tgz = worker_tgz(version + "-evil", commit, **features)
    return {"identitymd-worker.tgz": tgz, "SHA256SUMS": sums, "build.json": _build_json(version, commit)}


def feed_tar(tree: dict[str, bytes], root: str = "srv") -> bytes:
    """The whole feed as a tar for `put_archive` into the feed container."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in sorted(tree.items()):
            _add(tar, f"{root}/{name}", data)
    return raw.getvalue()


# Compilers as svm's release list serves them (<url>/linux-amd64/list.json, and each build's
# file beside it): solc's command line over solc-js (tests/harness/solc.js), which forge runs
# where a solc-js of that version is installed beside it (tests/harness/hands.install_solc).
SOLC_RELEASES = ("0.7.6", "0.8.26", "0.8.37")
SOLC_STAND_IN = (HERE.parent / "harness" / "solc.js").read_bytes()


def solc_feed(wrong_sum: str = "") -> dict[str, bytes]:
    """The release list and the builds, under linux-amd64/; `wrong_sum`: a version whose sha256
    the list gives wrong (another file's)."""
    tree: dict[str, bytes] = {}
    builds, releases = [], {}
    for v in SOLC_RELEASES:
        path = f"solc-linux-amd64-v{v}+commit.{hashlib.sha256(v.encode()).hexdigest()[:8]}"
        data = SOLC_STAND_IN
        digest = hashlib.sha256(data + b"another" if v == wrong_sum else data)
        builds.append({"path": path, "version": v, "longVersion": path[len("solc-linux-amd64-v") :],
                       "sha256": f"0x{digest.hexdigest()}", "urls": []})  # fmt: skip
        releases[v] = path
        tree[f"linux-amd64/{path}"] = data
    listed = {"builds": builds, "releases": releases, "latestRelease": SOLC_RELEASES[-1]}
    tree["linux-amd64/list.json"] = json.dumps(listed, indent=2).encode()
    return tree


def default_feed() -> dict[str, bytes]:
    tree: dict[str, bytes] = {}
    for folder, spec in RELEASES.items():
        for name, data in release(**spec).items():
            tree[f"{folder}/{name}"] = data
    # A release cut off half-way: its SHA256SUMS made from the whole archive
    # (`truncated`), and from the cut-off one (`truncated-sums`: only tar sees it).
    good = release(**RELEASES["v2"])
    cut = good["identitymd-worker.tgz"][: len(good["identitymd-worker.tgz"]) // 2]
    cut_sums = f"{hashlib.sha256(cut).hexdigest()}  identitymd-worker.tgz\n".encode()
    for folder, sums in (("truncated", good["SHA256SUMS"]), ("truncated-sums", cut_sums)):
        tree.update({f"{folder}/identitymd-worker.tgz": cut, f"{folder}/SHA256SUMS": sums})
        tree[f"{folder}/build.json"] = good["build.json"]
    tree["npm/claude-code.tgz"] = agent_tgz("@anthropic-ai/claude-code", "claude")
    tree["npm/codex.tgz"] = agent_tgz("@openai/codex", "codex")
    tree["npm/grok-cli.tgz"] = agent_tgz("@vibe-kit/grok-cli", "grok")
    for folder, wrong in (("solc", ""), ("solc-wrong-sum", "0.8.26")):
        tree.update({f"{folder}/{name}": data for name, data in solc_feed(wrong).items()})
    tree["feed_server.mjs"] = FEED_SERVER_JS.read_bytes()
    return tree


def installed_home_tar(folder: str = "v1") -> bytes:
    """A home with the worker and the claude stand-in installed as npm installs them
    (for `put_archive` at /, then chown to imd): what `box setup` leaves, without a feed."""
    spec = {k: v for k, v in RELEASES[folder].items() if k != "tamper"}
    packages = {
        "@identitymd/worker": (worker_tgz(**spec), {"imd": "dist/cli.js"}),
        "@anthropic-ai/claude-code": (agent_tgz("@anthropic-ai/claude-code", "claude"), {"claude": "bin/agent.js"}),
    }
    prefix = "home/imd/.npm-global"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as out:
        for name, (tgz, bins) in packages.items():
            with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as src:
                for member in src.getmembers():
                    data = src.extractfile(member) if member.isfile() else None
                    member.name = f"{prefix}/lib/node_modules/{name}/" + member.name.removeprefix("package/")
                    out.addfile(member, data)
            for bin_name, target in bins.items():
                link = tarfile.TarInfo(f"{prefix}/bin/{bin_name}")
                link.type = tarfile.SYMTYPE
                link.linkname = f"../lib/node_modules/{name}/{target}"
                out.addfile(link)
    return raw.getvalue()


def read_version(tgz: bytes) -> Optional[str]:
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        member = tar.extractfile("package/package.json")
        return json.loads(member.read())["version"] if member else None
