"""The login broker (worker/broker/broker.mjs) holds what one job sends it, and lends the owner's
token to Anthropic's paths alone.

A hostile job in a Claude run's jail (outside Claude's sandbox, where it holds its run's sentinel)
sends the broker, on the one box of the module: three 300 MiB request bodies at once, a 401 it
makes in a loop, a `Host` of its own, an absolute-form target, a path that is not on the broker's
list, credential headers beside its sentinel, and more idle TLS sessions than the broker takes at
once. The broker stays small and answers another request meanwhile, refreshes the owner's login
once, sends the owner's token to the host the client named in TLS, on the listed paths alone,
with no other credential, and answers another run while the job holds its sessions. Anthropic is the test
world's (tests/harness/login.py), which logs every request it gets.

The twin is the same module's steps on a copy of the image whose broker has each of these walls
taken out (TWIN: no caps, a refresh on every 401, the client's `Host` and target, every path,
every header, every run on the broker's one port): each step shows what reached Anthropic there,
or what another run got.
"""

from __future__ import annotations

import json
import re
import shlex
import threading
import time

import pytest

from imdbox import layout
from tests.harness import agents as agents_mod
from tests.harness import jobs, login
from tests.harness.boxes import as_imd
from tests.harness.twins import patched_image, script_with

pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group(agents_mod.GROUPS[0])]

BROKER_JS = "worker/broker/broker.mjs"
TWIN = {
  **script_with(
    BROKER_JS,
    layout.BROKER,
    # The caps: every body read as it comes, and kept whole for a retry.
    ("const BODY_LIMIT = 32 * MB;", "const BODY_LIMIT = Infinity;"),
    ("const REPLAY_BUDGET = 16 * MB;", "const REPLAY_BUDGET = Infinity;"),
    # A refresh on every 401, of any path.
    ("const REFRESH_EVERY_MS = 60 * 1000;", "const REFRESH_EVERY_MS = 0;"),
    ("const inference = Boolean(token) && INFERENCE.has(`${host} ${route}`);", "const inference = Boolean(token);"),
    # Every path, every target, the client's Host, every credential header.
    ("  if (LENT.has(", "  if (true || LENT.has("),
    ('  if (!target.startsWith("/")) return', "  if (false) return"),
    ("      if (!named) out.push(raw[i], host);", "      if (!named) out.push(raw[i], raw[i + 1]);"),
    ('const CREDENTIALS = new Set(["authorization", "proxy-authorization", "x-api-key", "cookie"]);',
     'const CREDENTIALS = new Set(["authorization"]);'),
  ),
  # Every run's network forwards the broker's one TLS port, as before each run had a port of its own.
  **script_with("worker/jail.d/network", f"{layout.JAIL_ROOMS}/network",
                ('ports+=("443:$login_port")', 'ports+=("443:$BROKER_TLS_PORT")')),
}  # fmt: skip

API = "https://api.anthropic.com"
MESSAGE = json.dumps({"model": "claude-imdt", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]})


def with_sentinel(*commands: str) -> str:
    """A script for a run's jail: its sentinel in $access, then `commands`, each a line's output."""
    return f"eval $({login.SENTINEL_OF_THE_JAIL}); " + "; ".join(f"{c}; echo" for c in commands)


def curl(url: str, *more: str) -> str:
    return f'curl -q -sS --max-time 60 -H "Authorization: Bearer $access" {" ".join(more)} -w " status=%{{http_code}}" {url}'


# Three bodies of 300 MiB at once, chunked (no length the broker could refuse up front), and the
# account's profile asked meanwhile: each one's status.
BIG = " ".join(
    f"(head -c 300M /dev/zero | {curl(f'{API}/v1/messages', '-X POST -T - -H content-type:application/json -o /dev/null')}"
    f" > big{i}.out 2>&1) &"
    for i in range(3)
)
MEANWHILE = f"sleep 1; {curl(f'{API}/api/oauth/profile', '-o /dev/null')}; echo; wait; cat big0.out big1.out big2.out"


def broker_peak(box) -> int:
    """The broker's peak resident memory (VmHWM), in MiB."""
    pid = f"$(pgrep -f {json.dumps('^node ' + layout.BROKER)} | head -n 1)"
    code, out = as_imd(box, f"grep VmHWM /proc/{pid}/status")
    assert code == 0, out
    return int(out.split()[1]) // 1024


def three_big_bodies(docker_client, image, box, tls) -> tuple[str, int]:
    """What the job saw (the profile's status, then each body's), and the broker's peak in MiB."""
    login.owned(box, login.owner_login())
    with jobs.model(docker_client, image, box, [], login=login.anthropic(tls)):
        code, out = jobs.in_jail(box, with_sentinel(f"{BIG} {MEANWHILE}"), timeout=180)
    assert code == 0, out
    return out, broker_peak(box)


def loop_of_401s(docker_client, image, box, tls) -> tuple[str, list]:
    """Five profiles, then ten messages, a job asks while Anthropic answers each 401 (the owner's
    access token is one it refuses, and every message gets 401 even so): their statuses and the
    refreshes Anthropic was asked for."""
    login.owned(box, login.owner_login(access="sk-ant-oat01-imdt-refused"))
    profile = curl(f"{API}/api/oauth/profile", "-o /dev/null")
    post = curl(f"{API}/v1/messages", "-o /dev/null -H content-type:application/json", f"--data '{MESSAGE}'")
    loops = with_sentinel(f"for i in $(seq 5); do {profile}; echo; done", f"for i in $(seq 10); do {post}; echo; done")
    with jobs.model(docker_client, image, box, [], login=login.anthropic(tls, {"expired": 1000})) as (_, model):
        code, out = jobs.in_jail(box, loops, timeout=120)
        said = jobs.heard(model)
    assert code == 0, out
    return out, said["refresh"]


OUTSIDE = "/api/imdt-outside-the-list"

# A job's own command (node, in its jail) that opens more TLS sessions to the broker than it takes
# at once, says so in `held` once each is up or refused, and holds them idle until `done` is there.
HOLDER = """
const tls = require("tls"), fs = require("fs");
const count = 140;
let up = 0, refused = 0;
const settled = () => up + refused === count && fs.writeFileSync("held", "");
for (let i = 0; i < count; i++) {
  const s = tls.connect({ host: "api.anthropic.com", port: 443, servername: "api.anthropic.com" }, () => (up++, settled()));
  s.once("error", () => (refused++, settled()));
}
setInterval(() => fs.existsSync("done") && (console.log("held " + up), process.exit(0)), 100);
setTimeout(() => (console.log("held " + up + " when the wait ran out"), process.exit(1)), 90000);
"""


def while_a_job_holds_sessions(docker_client, image, box, tls) -> tuple[int, str]:
    """A job opens 140 idle TLS sessions at the broker and holds them (HOLDER); meanwhile another
    run asks for the account's profile. How many the holder held, and what the other run got."""
    login.owned(box, login.owner_login())
    node = jobs.workspace()
    held = {}
    with jobs.model(docker_client, image, box, [], login=login.anthropic(tls)):
        holder = threading.Thread(
            target=lambda: held.update(ran=jobs.in_jail(box, f"node -e {shlex.quote(HOLDER)}", node, 120))
        )
        holder.start()
        try:
            deadline = time.monotonic() + 60
            while holder.is_alive() and time.monotonic() < deadline and as_imd(box, f"test -e {node}/held")[0] != 0:
                time.sleep(0.2)
            code, other = jobs.in_jail(box, with_sentinel(curl(f"{API}/api/oauth/profile", "-o /dev/null")))
        finally:
            as_imd(box, f"touch {node}/done")
            holder.join(120)
    assert held["ran"][0] == 0 and "held " in held["ran"][1], held
    assert code == 0, other
    return int(held["ran"][1].split("held ")[1].split()[0]), other


def hostile_requests(docker_client, image, box, tls) -> tuple[str, list]:
    """A job's requests with its sentinel: its own Host and other credentials beside it, an
    absolute-form target and a path not on the list (twice). What it saw, and what Anthropic got."""
    login.owned(box, login.owner_login())
    profile = f"{API}/api/oauth/profile"
    script = with_sentinel(
        "echo headers:; " + curl(profile, "-o /dev/null", "-H 'Host: 127.0.0.1:7777'", "-H 'X-Api-KEY: imdt-job-key'",
                                 "-H 'AUTHORIZATION: Bearer imdt-second'", "-H 'cookie: imdt=1'"),
        "echo absolute:; " + curl(f"{API}/", "--request-target https://imdt-other.example/api/oauth/profile"),
        "echo outside:; " + curl(f"{API}{OUTSIDE}"),
        "echo again:; " + curl(f"{API}{OUTSIDE}"),
    )  # fmt: skip
    with jobs.model(docker_client, image, box, [], login=login.anthropic(tls)) as (_, model):
        code, out = jobs.in_jail(box, script)
        said = jobs.heard(model)
    assert code == 0, out
    return out, said["request"]


def part(out: str, name: str) -> str:
    """What the script printed after `echo NAME:`, up to the next such line."""
    found = re.search(rf"^{name}:\n(.*?)(?=^\w+:\n|\Z)", out, re.S | re.M)
    return found.group(1) if found else ""


@pytest.fixture(scope="module")
def box(docker_client, box_image, topology, agents, tmp_path_factory, world):
    with login.boxed(docker_client, box_image, topology, agents, tmp_path_factory, world) as container:
        yield container


@pytest.fixture(scope="module")
def twin(docker_client, box_image, topology, agents, tmp_path_factory, world):
    with (
        patched_image(docker_client, box_image, TWIN) as image,
        login.boxed(docker_client, image, topology, agents, tmp_path_factory, world) as container,
    ):
        yield image, container


def test_three_300_mib_bodies_leave_the_broker_small_and_answering(docker_client, box_image, box, world):
    out, peak = three_big_bodies(docker_client, box_image, box, world[1])
    statuses = re.findall(r"status=(\d+)", out)
    # The profile, asked meanwhile, answered; each body refused at the limit, by the broker.
    assert statuses[0] == "200" and statuses[1:] == ["413"] * 3, out
    print(f"the broker's peak: {peak} MiB")
    assert peak < 300, f"the broker's peak: {peak} MiB"


def test_twin_without_the_caps_the_broker_holds_the_bodies(docker_client, twin, world):
    image, container = twin
    _, peak = three_big_bodies(docker_client, image, container, world[1])
    print(f"the twin's broker's peak: {peak} MiB")
    assert peak > 300, f"the broker's peak: {peak} MiB"


def test_a_job_making_401s_in_a_loop_makes_one_refresh(docker_client, box_image, box, world):
    out, refreshes = loop_of_401s(docker_client, box_image, box, world[1])
    # The profile's 401s came back as they came, with no refresh; the messages' made one.
    assert out.count("status=401") == 15, out
    assert len(refreshes) == 1, refreshes


def test_twin_a_refresh_on_every_401(docker_client, twin, world):
    image, container = twin
    _, refreshes = loop_of_401s(docker_client, image, container, world[1])
    assert len(refreshes) >= 5, refreshes


def test_the_token_goes_to_the_sni_host_on_a_listed_path_alone(docker_client, box_image, box, world):
    out, got = hostile_requests(docker_client, box_image, box, world[1])
    # The profile went on, to the host named in TLS, with the owner's token and no other credential.
    (request,) = got
    headers = [(k.lower(), v) for k, v in zip(request["headers"][::2], request["headers"][1::2])]
    assert ("host", "api.anthropic.com") in headers and request["path"] == "/api/oauth/profile", request
    credentials = [(k, v) for k, v in headers if k in ("authorization", "x-api-key", "cookie")]
    assert credentials == [("authorization", f"Bearer {login.ACCESS}")], headers
    assert part(out, "headers").strip().endswith("status=200"), out
    # The absolute-form target and the path outside the list: refused, each naming what.
    assert "a request names a path, never a URL" in part(out, "absolute") and "status=400" in part(out, "absolute"), out
    for name in ("outside", "again"):
        said = part(out, name)
        assert f"refused GET api.anthropic.com{OUTSIDE}" in said and said.strip().endswith("status=403"), out
    # Named once in the box's log, and in the broker's status (box status's line).
    logs = box.logs().decode(errors="replace")
    assert logs.count(f"refused a path outside its list: GET api.anthropic.com{OUTSIDE}") == 1, logs[-2000:]
    _, status = as_imd(box, f"{layout.BROKER_ASK} status")
    assert f"GET api.anthropic.com{OUTSIDE}" in json.loads(status)["refused"], status


def test_twin_the_broker_forwards_them_as_they_came(docker_client, twin, world):
    image, container = twin
    _, got = hostile_requests(docker_client, image, container, world[1])
    paths = [r["path"] for r in got]
    assert "https://imdt-other.example/api/oauth/profile" in paths and paths.count(OUTSIDE) == 2, paths
    first = {k.lower(): v for k, v in zip(got[0]["headers"][::2], got[0]["headers"][1::2])}
    assert first["host"] == "127.0.0.1:7777" and first["x-api-key"] == "imdt-job-key", got[0]


def test_the_real_claude_code_asks_the_listed_paths_alone(docker_client, box_image, box, world):
    # The installed Claude Code on a connected code task (a command, WebFetch), as the worker
    # starts it: with its nonessential traffic (the worker does not turn it off), every request
    # it makes with its run's login is one the broker lends the login to. A new release that
    # calls a new path fails here first, named.
    login.owned(box, login.owner_login())
    steps = [[jobs.bash("echo ran")], [jobs.tool("WebFetch", url="https://imdt.example.com/", prompt="what")]]
    nonessential = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": ""}
    run = jobs.play(docker_client, box_image, box, steps, view=True, login=login.anthropic(world[1]), env=nonessential)
    assert run.code == 0 and run.result(0, 0)["text"].strip() == "ran", run
    _, status = as_imd(box, f"{layout.BROKER_ASK} status")
    refused = [r for r in json.loads(status)["refused"] if OUTSIDE not in r]
    assert refused == [], status
    asked = {(r["method"], r["path"].split("?")[0]) for r in run.requests}
    assert ("POST", "/v1/messages") in asked, asked


def test_a_job_holding_more_sessions_than_the_broker_takes_leaves_other_runs_answered(
    docker_client, box_image, box, world
):
    held, other = while_a_job_holds_sessions(docker_client, box_image, box, world[1])
    # Its own port full (64 answered, 64 more answered 503), the rest let go at once.
    assert 64 < held <= 128, held
    assert other.strip().endswith("status=200"), other


def test_twin_every_run_on_one_port_is_refused_while_a_job_holds_them(docker_client, twin, world):
    image, container = twin
    held, other = while_a_job_holds_sessions(docker_client, image, container, world[1])
    assert held > 128, held  # every session the broker takes at once
    assert other.strip().endswith("status=503"), other
