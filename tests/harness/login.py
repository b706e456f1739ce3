"""Anthropic at its real names in the test world, and an owner's Claude login, for the login
broker's tests (worker/broker).

The scripted model (model.mjs, with MODEL_LOGIN) serves api.anthropic.com, platform.claude.com
and the broker's other hosts on the box's loopback, port 443, with a certificate of a test CA. A box of
`walled` has those names at its loopback in its hosts file, and the test CA in its CA bundle,
as a machine on the internet has the real hosts and the real CAs: the broker, and a Claude Code
that bypassed it, reach them as they would Anthropic's.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from imdbox.config import LOGIN_ENV
from tests.harness import boxes, jobs
from tests.harness.image import CA_FILE
from tests.harness.jobs import HOME

# Every host the broker serves (worker/paths BROKER_HOSTS): the test world's Anthropic answers
# them all, so what Claude Code asks of each is seen (model.mjs logs every request).
HOSTS = ("api.anthropic.com", "platform.claude.com", "console.anthropic.com", "mcp-proxy.anthropic.com", "claude.ai")
LOGIN = f"{HOME}/.claude/.credentials.json"
ACCESS = "sk-ant-oat01-imdt-owner-access-0"
REFRESH = "sk-ant-ort01-imdt-owner-refresh-0"
BUNDLE = "/etc/ssl/certs/ca-certificates.crt"  # the box's CA bundle (the image's NODE_EXTRA_CA_CERTS)
# A box's environment when its owner keeps the login in each Claude job's jail, as every jail
# held it before the broker: the twin of the broker's walls.
IN_THE_JAIL = {LOGIN_ENV: "jail"}


def in_the_jail(kwargs: dict) -> None:
    """A box's `mutate` (boxes.create_walled, run_check): the owner's choice of IN_THE_JAIL."""
    kwargs["environment"] = {**(kwargs.get("environment") or {}), **IN_THE_JAIL}


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def certificates() -> tuple[str, dict]:
    """The test CA (PEM) and the hosts' TLS key and certificate it signed (model.mjs's "tls")."""
    now = datetime.datetime.now(datetime.timezone.utc)
    day = datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(_name("imdt Anthropic test CA")).issuer_name(_name("imdt Anthropic test CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - day).not_valid_after(now + day)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(_name(HOSTS[0])).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - day).not_valid_after(now + day)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in HOSTS]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM).decode()  # noqa: E731
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem(ca), {"key": private.decode(), "cert": pem(cert)}


def owner_login(expires_in: float = 8 * 3600, access: str = ACCESS, refresh: str = REFRESH) -> str:
    """The owner's login as `claude` writes it on Linux (~/.claude/.credentials.json)."""
    oauth = {
        "accessToken": access,
        "refreshToken": refresh,
        "expiresAt": int((time.time() + expires_in) * 1000),
        "scopes": ["user:inference", "user:profile", "user:sessions:claude_code"],
        "subscriptionType": "max",
        "rateLimitTier": "default_claude_max_5x",
    }
    return json.dumps({"claudeAiOauth": oauth})


def anthropic(tls: dict, faults: Optional[dict] = None, access: str = ACCESS, refresh: str = REFRESH) -> dict:
    """model.mjs's MODEL_LOGIN: Anthropic, whose login is (`access`, `refresh`)."""
    return {"tls": tls, "access": access, "refresh": refresh, "faults": faults or {}}


def trusting(ca: str) -> str:
    """The box's CA bundle, trusting the test CA too: this machine's, as the image holds it."""
    return Path(CA_FILE).read_text().rstrip("\n") + "\n" + ca


def named(address: str) -> Callable[[dict], None]:
    """A box's `mutate` that gives Anthropic's names `address` in its hosts file."""

    def mutate(kwargs: dict) -> None:
        kwargs["extra_hosts"] = {**(kwargs.get("extra_hosts") or {}), **dict.fromkeys(HOSTS, address)}

    return mutate


def bundled(folder: Path, ca: str) -> Callable[[dict], None]:
    """A box's `mutate` that makes its CA bundle this machine's, as the image holds it, and the
    test CA `ca` (a file in `folder`): every tool of the box, and of its jobs, trusts it."""
    bundle = folder / "ca-certificates.crt"
    bundle.write_text(trusting(ca))
    bundle.chmod(0o644)

    def mutate(kwargs: dict) -> None:
        kwargs["volumes"] = {**(kwargs.get("volumes") or {}), str(bundle): {"bind": BUNDLE, "mode": "ro"}}

    return mutate


def world(folder: Path, ca: str, env: Optional[dict] = None, address: str = "127.0.0.1") -> Callable[[dict], None]:
    """A box's `mutate` (boxes.create_walled, run_check) that makes the test world's Anthropic
    the real one: its names at `address` (the box's loopback, where jobs.model's container
    listens; or a container of its own on a test network: elsewhere), and the test CA in the
    box's bundle (bundled). `env`: the box's own environment (the owner's choice of IMD_BOX_LOGIN)."""
    trusted = bundled(folder, ca)

    def mutate(kwargs: dict) -> None:
        named(address)(kwargs)
        trusted(kwargs)
        kwargs["environment"] = {**(kwargs.get("environment") or {}), **(env or {})}

    return mutate


@contextlib.contextmanager
def walled(
    client, image: str, topo, *, volume: str, folder: Path, ca: str, env: Optional[dict] = None, **where
) -> Iterator:
    """A walled box in the test topology whose Anthropic is the test world's (world); `where`:
    boxes.start_walled's own (alone_on)."""
    box = boxes.start_walled(client, image, topo, volume=volume, mutate=world(folder, ca, env), **where)
    try:
        yield box
    finally:
        box.remove(force=True)


@contextlib.contextmanager
def elsewhere(client, image: str, network: str, login: dict) -> Iterator[str]:
    """The test world's Anthropic (model.mjs, MODEL_LOGIN `login`) in a container of its own on
    `network` (a test network, --internal): its address there."""
    environment = {"MODEL_LOGIN": json.dumps(login), "MODEL_ADDRESS": "0.0.0.0"}
    with jobs.running_model(client, image, jobs.MODEL_JS, environment, network=network) as (_, container):
        container.reload()
        yield container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]


@contextlib.contextmanager
def boxed(docker_client, box_image, topology, agents, tmp_path_factory, certificates, env=None):
    """A box of the test world on the CLIs' volume; the owner's login a test planted (owned)
    goes with it, as the volume is the other tests' too. `certificates`: certificates()'s."""
    ca, _ = certificates
    folder = tmp_path_factory.mktemp("ca")
    with walled(docker_client, box_image, topology, volume=agents, folder=folder, ca=ca, env=env) as box:
        try:
            yield box
        finally:
            boxes.as_imd(box, f"rm -f {LOGIN}")


def owned(box, text: str) -> None:
    """The owner's login in the box, as `claude` left it; the volume is the other tests' too."""
    jobs.seed(box, {LOGIN: text})


# A jail's sentinel login, read in the jail: `eval $(...)` sets $access and $refresh.
SENTINEL_OF_THE_JAIL = (
    'sed -E \'s/.*"accessToken":"([^"]*)".*"refreshToken":"([^"]*)".*/access=\\1 refresh=\\2/\' '
    "~/.claude/.credentials.json; echo"
)


# The owner's Codex login, as a hostile worker or job aims at it.
CODEX_LOGIN = f"{HOME}/.codex/auth.json"
CODEX_MARK = jobs.mark("codex-login")


@contextlib.contextmanager
def codex_login(box):
    """A Codex login of the owner's in the box while it runs; what was there comes back."""
    code, out = boxes.as_imd(box, f"[ ! -e {CODEX_LOGIN} ] || mv {CODEX_LOGIN} {CODEX_LOGIN}.imdt")
    assert code == 0, out
    jobs.seed(box, {CODEX_LOGIN: json.dumps({"OPENAI_API_KEY": CODEX_MARK})})
    try:
        yield
    finally:
        boxes.as_imd(box, f"rm -f {CODEX_LOGIN}; [ ! -e {CODEX_LOGIN}.imdt ] || mv {CODEX_LOGIN}.imdt {CODEX_LOGIN}")
