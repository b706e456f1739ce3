"""A job as the released worker runs it: the real Claude Code, driven by the scripted model.

The worker's contract, as its public dist/cli.js (Identity-md/worker, commit e86778a5)
states it, written down here once:
- it runs `$IDENTITYMD_CLAUDE_BIN` (else `claude`), unsplit, for its `--version` probe
  and for every run: `-p <prompt> --output-format stream-json --verbose --permission-mode
  acceptEdits --strict-mcp-config --max-turns N --allowedTools <list> --disallowedTools
  <list> --mcp-config <json>` (`--model`/`--effort` when its config names them);
- with its own environment plus NO_COLOR=1 and ENABLE_CLAUDEAI_MCP_SERVERS=false, stdin
  closed, in a new process group (SIGTERM to the group on a timeout or cancel, SIGKILL
  1 s later);
- in `~/.identitymd/work/<jobId>/<nodeId>` (both UUIDs) for a code task, which it
  clones afresh and never deletes; in `~/.identitymd/work` itself for a research task;
- with the tool lists of PROFILES: "connected" for a code task that may use the
  network, "research" for research, "default" otherwise; an installed tool (`imd tools
  add`, the box's browser) is one `mcpServers` entry {"type": "stdio", "command": ...},
  each key it needs (`--env NAME`) in its "env" as the text "${NAME}", which Claude Code
  fills from its own environment (where the worker copied tools.env's values), and its
  methods are allowed as `mcp__<id>__<method>`;
- for Codex it runs `$IDENTITYMD_CODEX_BIN` (else `codex`) the same way, in the same
  folders, with stdin unused: `exec --json --sandbox workspace-write|read-only -C
  <workspace> --skip-git-repo-check --ignore-rules --ignore-user-config` and its `-c`
  settings, the prompt last, as one argument (dist/cli.js 00bbdf03, CodexRuntime).

The model is tests/harness/model.mjs, in a container of the test's own that shares the
box's network namespace: Claude Code reaches it on the box's loopback through
ANTHROPIC_BASE_URL, and a stand-in key is its login. Codex's is tests/harness/codex_model.mjs,
its model provider through `-c` settings (codex_provider), OPENAI_API_KEY its login.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from imdbox.layout import BROWSER_DIR, HANDS_DIR, JAIL
from tests.harness import boxes
from tests.harness.topology import NO_HEALTHCHECK

HOME = "/home/imd"
WORK_ROOT = f"{HOME}/.identitymd/work"
# What of the home a job must not read: the box owner's secrets, and another job's work.
SECRETS = {
    "login": f"{HOME}/.claude/.credentials.json",
    "device key": f"{HOME}/.identitymd/config.json",
    "tools.env": f"{HOME}/.identitymd/tools.env",
    "claude state": f"{HOME}/.claude.json",
    "transcript": f"{HOME}/.claude/projects/-home-imd--identitymd-work-job-2-node-1/session.jsonl",
    "other job": f"{WORK_ROOT}/job-2/node-1/index.html",
    "codex login": f"{HOME}/.codex/auth.json",
    "grok login": f"{HOME}/.grok/user-settings.json",
    "git login": f"{HOME}/.git-credentials",
    "ssh key": f"{HOME}/.ssh/id_ed25519",
}
WORKER_ENV = {"NO_COLOR": "1", "ENABLE_CLAUDEAI_MCP_SERVERS": "false"}
# Not the worker's, the test world's: Claude Code's nonessential traffic (its MCP registry,
# telemetry, error reports) and Codex's metrics go to servers no test network has, each
# call waiting out its timeout, and from a box on Docker's bridge they would leave this
# machine.
OFFLINE = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
CODEX_OFFLINE = ["-c", "analytics.enabled=false"]
PROFILES = {
    "default": (
        "Read Write Edit Glob Grep TodoWrite Bash(forge:*) Bash(git status:*) Bash(git diff:*) Bash(ls:*) Bash(cat:*)",
        "WebFetch WebSearch Task NotebookEdit",
    ),
    "connected": ("Read Write Edit Glob Grep TodoWrite WebSearch WebFetch Bash", "Task NotebookEdit"),
    "research": ("WebSearch WebFetch Read Grep Glob TodoWrite", "Write Edit NotebookEdit Bash Task"),
}
BROWSER_MCP = f"{BROWSER_DIR}/playwright-mcp"
MODEL_JS = Path(__file__).with_name("model.mjs").read_text()
CODEX_MODEL_JS = Path(__file__).with_name("codex_model.mjs").read_text()
STAND_IN_KEY = "imdt-stand-in-key"


def mark(label: str) -> str:
    """A text of its own for a seeded file, which no tool result may hold."""
    return f"imdt-{label.replace(' ', '-')}-{uuid.uuid4().hex}"


def seed(container, files: dict[str, str]) -> None:
    """Each file (path -> its text) written as imd, its folder made first."""
    script = " && ".join(
        f"mkdir -p {shlex.quote(path.rsplit('/', 1)[0])} && printf %s {shlex.quote(text)} > {shlex.quote(path)}"
        for path, text in files.items()
    )
    code, out = boxes.as_imd(container, script)
    assert code == 0, out


def workspace(job: Optional[str] = None, node: Optional[str] = None) -> str:
    return f"{WORK_ROOT}/{job or uuid.uuid4()}/{node or uuid.uuid4()}"


def in_jail(box, script: str, node: Optional[str] = None, timeout: int = 60) -> tuple[int, str]:
    """`script` (bash) as a job's own command, in `node` (a new one by default): in the jail a
    Claude job gets, outside Claude's sandbox, where its tools, hooks and MCP servers run."""
    node = node or workspace()
    jailed = f"{JAIL} claude --program /bin/bash -c {shlex.quote(script)}"
    return boxes.as_imd(box, f"mkdir -p {node} && cd {node} && {jailed}", timeout)


def project(cwd: str) -> str:
    """The folder of ~/.claude/projects where Claude Code keeps a working directory's transcripts."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def argv(
    prompt: str, profile: str, max_turns: int = 20, browser: Sequence[str] = (), tools: Optional[dict] = None
) -> list[str]:
    """The worker's arguments for one run; `browser`: the browser's methods the task may call;
    `tools`: more installed tools, id -> {"command", "env": [names], "methods": [...]}, each
    key named as the worker names it, "${NAME}", for Claude Code to fill from its environment."""
    allowed, disallowed = PROFILES[profile]
    tools = {
        **({"browser": {"command": BROWSER_MCP, "env": [], "methods": browser}} if browser else {}),
        **(tools or {}),
    }
    servers = {
        i: {"type": "stdio", "command": t["command"], "args": [], "env": {n: f"${{{n}}}" for n in t["env"]}}
        for i, t in tools.items()
    }
    allowed = " ".join([allowed, *(f"mcp__{i}__{m}" for i, t in tools.items() for m in t["methods"])])
    return [
        "-p", prompt, "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits",
        "--strict-mcp-config", "--max-turns", str(max_turns), "--allowedTools", allowed,
        "--disallowedTools", disallowed, "--mcp-config", json.dumps({"mcpServers": servers}),
    ]  # fmt: skip


def codex_argv(workspace: str, prompt: str, connected: bool = False) -> list[str]:
    """The worker's arguments for one Codex run of a code task, no tools installed."""
    return [
        "exec", "--json", "--sandbox", "workspace-write", "-C", workspace, "--skip-git-repo-check",
        "--ignore-rules", "--ignore-user-config", "-c", "features.apps=false", "-c", "features.plugins=false",
        "-c", "mcp_servers={}", "-c", f"sandbox_workspace_write.network_access={str(connected).lower()}",
        "-c", f'web_search="{"live" if connected else "disabled"}"', prompt,
    ]  # fmt: skip


def codex_provider(port: int) -> list[str]:
    """Codex's `-c` settings that make the scripted model on the box's loopback its provider,
    signed with OPENAI_API_KEY: the Codex room lets a provider of the worker's sign with a key of
    its own, never with the Codex login (requires_openai_auth), which it would send there."""
    provider = f'{{name="imdt",base_url="http://127.0.0.1:{port}/v1",env_key="OPENAI_API_KEY",wire_api="responses"}}'
    return ["-c", "model_provider=imdt", "-c", f"model_providers.imdt={provider}"]


# The model's script: one list of blocks per assistant turn (tests/harness/model.mjs).
def bash(command: str, **more) -> dict:
    return {"tool": "Bash", "input": {"command": command, "description": "a job's command", **more}}


def tool(name: str, **args) -> dict:
    return {"tool": name, "input": args}


@dataclass(frozen=True)
class Run:
    code: int
    out: str  # Claude Code's stream-json (and stderr)
    results: list[dict]  # each tool's result as the model got it, in order
    prompt: Optional[str] = None  # what the model got as the job's prompt
    login: Optional[str] = None  # what Codex signed its requests with (codex_play)
    seen: tuple[str, ...] = ()  # the watched texts some request to the model held (play's `watch`)
    requests: tuple[dict, ...] = ()  # with a `login`: each request Anthropic got (model.mjs)
    refreshes: tuple[dict, ...] = ()  # with a `login`: each refresh of the login it was asked for

    def result(self, step: int, index: int = 0) -> dict:
        """The result of the `index`th tool call of the script's `step`th turn."""
        found = [r for r in self.results if r["step"] == step]
        assert index < len(found), f"no result for step {step}:\n{self}"
        return found[index]

    @property
    def final(self) -> dict:
        for line in self.out.splitlines():
            if line.startswith("{") and '"type":"result"' in line:
                return json.loads(line)
        raise AssertionError(f"Claude Code printed no result:\n{self.out}")

    def __str__(self) -> str:
        shown = "\n".join(json.dumps(r)[:600] for r in self.results)
        return f"exit {self.code}\n--- tool results\n{shown}\n--- claude\n{self.out[-4000:]}"


@contextlib.contextmanager
def model(
    client,
    image: str,
    box,
    steps: list,
    source: str = MODEL_JS,
    watch: Sequence[str] = (),
    login: Optional[dict] = None,
) -> Iterator[tuple[int, object]]:
    """The scripted model on `box`'s loopback (Claude Code's, or Codex's: `source`): its port
    and its container. `watch`: texts Claude Code's model reports when a request holds one.
    `login`: Anthropic at its real names instead, with a login (model.mjs's MODEL_LOGIN;
    tests/harness/login.py)."""
    environment = {"MODEL_SCRIPT": json.dumps({"steps": steps}), "MODEL_WATCH": json.dumps(list(watch))}
    if login is not None:
        environment["MODEL_LOGIN"] = json.dumps(login)
    with running_model(client, image, source, environment, network_mode=f"container:{box.id}") as (port, container):
        yield port, container


@contextlib.contextmanager
def running_model(client, image: str, source: str, environment: dict, **where) -> Iterator[tuple[int, object]]:
    """A scripted model (`source`, its `environment`) in a container of the test's own, placed as
    `where` says (docker's network arguments), once it listens: its port and its container."""
    container = client.containers.run(
        image,
        entrypoint=["/usr/local/bin/node", "--input-type=module", "-e", source],
        command=[],
        environment=environment,
        user="65534:65534",
        read_only=True,
        labels={"imd-test": "1"},
        healthcheck=NO_HEALTHCHECK,
        name=boxes.unique("model"),
        detach=True,
        **where,
    )
    try:
        deadline = time.monotonic() + 20
        while not (found := re.search(rb"listening: model (\d+)", container.logs())):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the scripted model did not start:\n{container.logs().decode()}")
            time.sleep(0.1)
        yield int(found.group(1)), container
    finally:
        container.remove(force=True)


def play(
    client,
    image: str,
    box,
    steps: list,
    *,
    profile: str = "connected",
    cwd: Optional[str] = None,
    browser: Sequence[str] = (),
    jailed: bool = True,
    prompt: str = "the job",
    env: Optional[dict] = None,
    tools: Optional[dict] = None,
    timeout: int = 180,
    watch: Sequence[str] = (),
    way: Optional[str] = None,
    view: bool = False,
    login: Optional[dict] = None,
) -> Run:
    """One run of the real Claude Code in `box` as the worker starts it, the model playing
    `steps`. `jailed=False`: the plain `claude` the worker would run without the box's
    IDENTITYMD_CLAUDE_BIN (the bench's and the breaking twins' side). `watch`: texts looked
    for in what Claude Code sends the model (Run.seen). `way`, `view`: as start_cli. `login`:
    the model is Anthropic at its real names (tests/harness/login.py), and the owner's Claude
    login in the box is Claude Code's, as on a box signed in with `claude`."""
    cwd = cwd or workspace()
    with model(client, image, box, steps, watch=watch, login=login) as (port, container):
        reached = {} if login else {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": STAND_IN_KEY}
        env = {**WORKER_ENV, **OFFLINE, **reached, **(env or {})}
        flag, _, *rest = argv(prompt, profile, len(steps) + 2, browser, tools)
        code, out = start_cli(
            box, cwd, "IDENTITYMD_CLAUDE_BIN", "claude", [flag], prompt, rest, jailed, env, timeout, way, view
        )
        said = heard(container)
    return Run(
        code, out, said["result"], (said["prompt"] or [None])[0], seen=tuple(said["seen"]),
        requests=tuple(said["request"]), refreshes=tuple(said["refresh"]),
    )  # fmt: skip


def start_cli(box, cwd: str, variable: str, cli: str, before: list[str], prompt: str, after: list[str], jailed: bool,
              env: dict, timeout: int, way: Optional[str] = None, view: bool = False) -> tuple[int, str]:  # fmt: skip
    """The CLI the worker runs (`$variable`, else `cli`; `jailed=False`: the plain one, and
    neither the launcher nor the worker's hands on its PATH) in `cwd`, with `before`, the
    prompt and `after` as its arguments, stdin closed: its exit code and output. `way`: the
    shell text that names the CLI instead (a newer worker's way to start it); `view`: run in
    the worker's view of the box, as the worker runs."""
    unjail = "" if jailed else f"unset {variable}; export PATH=${{PATH#{HANDS_DIR}:}}; "
    # The prompt reaches the CLI's command line only, as the worker passes it: this run's own
    # processes (timeout, the shell) hold a file's name, in the box's /tmp, not the prompt.
    prompt_file = f"/tmp/imdt-prompt-{uuid.uuid4().hex}"
    seed(box, {prompt_file: prompt})
    way = way or f'"${{{variable}:-{cli}}}"'
    script = (
        f"mkdir -p {shlex.quote(cwd)} && cd {shlex.quote(cwd)} && {unjail}exec {way} "
        f'{shlex.join(before)} "$(cat {prompt_file}; rm -f {prompt_file})" {shlex.join(after)} </dev/null 2>&1'
    )
    if view:
        script = boxes.in_view(script)
    # The worker's environment (a tool key among it) goes in as the environment, on no command
    # line a job could read in /proc.
    return boxes.as_imd(box, script, timeout=timeout, environment=env)


def heard(container) -> dict[str, list]:
    """The scripted model's lines: each tool's result, the job's prompt, Codex's login, the
    watched texts seen, and with a login each request and refresh."""
    said = {"result": [], "prompt": [], "login": [], "seen": [], "request": [], "refresh": []}
    for line in container.logs().decode(errors="replace").splitlines():
        kind, _, data = line.partition(" ")
        if kind in said:
            said[kind].append(json.loads(data))
    return said


def codex_play(
    client,
    image: str,
    box,
    commands: list[str],
    *,
    cwd: Optional[str] = None,
    jailed: bool = True,
    prompt: str = "the job",
    env: Optional[dict] = None,
    timeout: int = 180,
    way: Optional[str] = None,
    view: bool = False,
) -> Run:
    """One run of the real Codex in `box` as the worker starts it for a connected code task, the
    scripted model (tests/harness/codex_model.mjs) playing one shell command a turn. Each
    result is {"step", "cmd", "output"}. `jailed=False`: the plain `codex`; `way`, `view`: as
    start_cli."""
    cwd = cwd or workspace()
    with model(client, image, box, commands, CODEX_MODEL_JS) as (port, container):
        env = {"OPENAI_API_KEY": STAND_IN_KEY, **(env or {})}
        *args, _ = codex_argv(cwd, prompt, connected=True)
        args = [args[0], *codex_provider(port), *CODEX_OFFLINE, *args[1:]]
        code, out = start_cli(
            box, cwd, "IDENTITYMD_CODEX_BIN", "codex", args, prompt, [], jailed, env, timeout, way, view
        )
        said = heard(container)
    return Run(code, out, said["result"], (said["prompt"] or [None])[0], (said["login"] or [None])[0])
