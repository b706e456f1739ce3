"""The Claude login broker of a running box (worker/broker): what `box status` says of it.

The broker answers its own status on its socket (in its folder, layout.BROKER_DIR), as JSON: its
mode ("broker", or "jail": IMD_BOX_LOGIN=jail), whether it holds a login, how many runs hold a sentinel now, the last
problem Anthropic gave it ("" when none), and the requests it refused to lend a run's login to
("METHOD host/path", each once: docs/broker.md lists the paths it lends it to), so a release of
Claude Code that calls a new path is seen at once. All of it is the box's text.
"""

from __future__ import annotations

import json

import docker.errors

from . import engine, layout
from .terminal import safe

# The owner's own Claude Code in `box shell` (a running box's) talks to Anthropic through the
# broker too, trusting its CA, so that the broker alone refreshes the login: a refresh token
# works once, and the owner's Claude Code would otherwise refresh with one the broker has used,
# be refused, and clear the login. Its token goes on unchanged. The broker's trust.pem is the
# box's CA bundle and its CA: Node adds it, and curl and OpenSSL take it for the bundle, so the
# owner's curl to Anthropic works there too.
SHELL_ENV = {
    "HTTPS_PROXY": f"http://127.0.0.1:{layout.BROKER_PORT}",
    "NO_PROXY": "localhost,127.0.0.1,::1",
    "NODE_EXTRA_CA_CERTS": f"{layout.BROKER_DIR}/trust.pem",
    "SSL_CERT_FILE": f"{layout.BROKER_DIR}/trust.pem",
}

STATUS_COMMAND = [layout.BROKER_ASK, "status"]


def line(container) -> tuple[str, bool]:
    """`box status`'s login line, and whether it says something is wrong."""
    try:
        code, out = engine.exec_as_imd(container, STATUS_COMMAND)
    except docker.errors.APIError as exc:  # it stopped, or Docker began restarting it, meanwhile
        return f"the login broker could not be asked (the engine: {safe(str(exc.explanation or exc))[:200]})", True
    try:
        said = json.loads(out) if code == 0 else None
    except json.JSONDecodeError:
        said = None
    if not isinstance(said, dict):
        return "the login broker does not answer: run `box start` again", True
    problem = safe(str(said.get("problem") or ""))[:300]
    refused = said.get("refused") if isinstance(said.get("refused"), list) else []
    if refused:
        shown = ", ".join(safe(str(r))[:120] for r in refused[:5]) + (
            f" and {len(refused) - 5} more" if len(refused) > 5 else ""
        )
        more = f"a run's login refused for {shown}: not on the broker's list (docs/broker.md), a job's or a new Claude Code's"
        problem = f"{problem}; {more}" if problem else more
    if said.get("mode") == "jail":
        where = "in each Claude job's jail (IMD_BOX_LOGIN=jail: your choice)"
    elif said.get("login") != "held":
        where = "none in the box (log in with `claude` in `box shell`)"
    else:
        where = f"held by the login broker; Claude jobs hold stand-ins ({int(said.get('runs') or 0)} now)"
    return (f"{where}; PROBLEM: {problem}" if problem else where), bool(problem)
