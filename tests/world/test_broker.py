"""The Claude login broker (worker/broker): no job's jail holds the owner's Claude login, and the
job still gets done.

The owner's login stays with the broker, outside every jail and the worker's view. A Claude
run's jail holds a sentinel login of the same shape, minted for that run alone (worker/jail.d/
login), and its Claude Code reaches Anthropic through the broker, which swaps the sentinel for the
owner's token, and refreshes the owner's login itself, once for all. Anthropic here is the test
world's (tests/harness/login.py: the scripted model at api.anthropic.com and platform.claude.com,
TLS from a test CA); Claude Code is the real one, started as the worker starts it, from its view.

Each wall's twin is the owner's choice of the login in the jail (IMD_BOX_LOGIN=jail, as before the
broker), where the same step reads the owner's login.
"""

from __future__ import annotations

import json
import shlex

import pytest

from imdbox import broker, layout
from tests.harness import agents as agents_mod
from tests.harness import jobs, login
from tests.harness.boxes import as_imd

pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group(agents_mod.GROUPS[0])]

PROXY = f"http://127.0.0.1:{layout.BROKER_PORT}"


@pytest.fixture(scope="module")
def box(docker_client, box_image, topology, agents, tmp_path_factory, world):
    with login.boxed(docker_client, box_image, topology, agents, tmp_path_factory, world) as container:
        yield container


@pytest.fixture(scope="module")
def twin_box(docker_client, box_image, topology, agents, tmp_path_factory, world):
    with login.boxed(
        docker_client, box_image, topology, agents, tmp_path_factory, world, login.IN_THE_JAIL
    ) as container:
        yield container


# What a job's jail holds where it could look: the login's file, every file of the home and /tmp,
# every environment and command line of its processes. Printed whole, searched by the test.
LOOK = (
    "cat ~/.claude/.credentials.json; echo; env; "
    "for p in /proc/[0-9]*; do tr '\\0' '\\n' <$p/environ; tr '\\0' ' ' <$p/cmdline; echo; done 2>/dev/null; "
    "find ~ /tmp /var/tmp -type f -readable -size -2M -print0 2>/dev/null | xargs -0 -r cat 2>/dev/null"
)


def test_a_job_gets_done_and_its_jail_holds_a_sentinel(docker_client, box_image, box, world):
    _, tls = world
    login.owned(box, login.owner_login())
    steps = [[jobs.bash("echo the-job-ran")]]
    run = jobs.play(docker_client, box_image, box, steps, view=True, login=login.anthropic(tls))
    assert run.code == 0 and run.result(0, 0)["text"].strip() == "the-job-ran", run
    # Anthropic got the owner's token, on every request.
    said = {r["path"].split("?")[0] for r in run.requests}
    assert "/v1/messages" in said, run.requests
    bearers = {dict(zip(r["headers"][::2], r["headers"][1::2])).get("Authorization") for r in run.requests}
    assert bearers == {f"Bearer {login.ACCESS}"}, bearers
    # The jail holds a sentinel, and the owner's tokens nowhere.
    code, seen = jobs.in_jail(box, LOOK)
    assert code == 0, seen
    assert "imd-box-sentinel-" in seen and login.ACCESS not in seen and login.REFRESH not in seen, seen[:2000]
    # Nor the box's log, where the broker and the door write.
    logs = box.logs().decode(errors="replace")
    assert login.ACCESS not in logs and login.REFRESH not in logs, logs[-2000:]


def test_twin_the_login_in_the_jail(twin_box):
    login.owned(twin_box, login.owner_login())
    code, seen = jobs.in_jail(twin_box, LOOK)
    assert code == 0, seen
    assert login.ACCESS in seen and login.REFRESH in seen, seen[:2000]


def claude_runs(box, count: int) -> tuple[int, str]:
    """`count` Claude jobs at once, each in a node of its own, as the worker starts them from its
    view: each one's exit code, on a line of its own."""
    args = jobs.argv("the job", "connected", 3)
    runs = []
    for i in range(count):
        space = jobs.workspace()
        runs.append(
            f'(mkdir -p {space} && cd {space} && "$IDENTITYMD_CLAUDE_BIN" {shlex.join(args)} </dev/null >/dev/null 2>&1;'
            f' echo "run {i} exit $?") &'
        )
    script = " ".join(runs) + " wait"
    return as_imd(box, jobs.boxes.in_view(script), timeout=240, environment={**jobs.WORKER_ENV, **jobs.OFFLINE})


def test_eight_jobs_at_once_make_one_refresh(docker_client, box_image, box, world):
    _, tls = world
    login.owned(box, login.owner_login(expires_in=-60))  # expired: the first request wants a refresh
    with jobs.model(docker_client, box_image, box, [], login=login.anthropic(tls)) as (_, model):
        code, out = claude_runs(box, 8)
        said = jobs.heard(model)
    assert code == 0 and out.count(" exit 0") == 8, out
    assert [r["ok"] for r in said["refresh"]] == [True], said["refresh"]
    messages = [r for r in said["request"] if r["path"].startswith("/v1/messages")]
    assert len(messages) >= 8 and all("Bearer sk-ant-oat01-imdt-access-1" in r["headers"] for r in messages), messages
    # The rotated pair is the owner's now, written in place of the old.
    code, now = as_imd(box, f"cat {login.LOGIN}")
    oauth = json.loads(now)["claudeAiOauth"]
    assert (oauth["accessToken"], oauth["refreshToken"]) == (
        "sk-ant-oat01-imdt-access-1",
        "sk-ant-ort01-imdt-refresh-1",
    )
    assert oauth["subscriptionType"] == "max", oauth


def test_an_upstream_401_gets_one_refresh_and_one_retry(docker_client, box_image, box, world):
    _, tls = world
    login.owned(box, login.owner_login())
    steps = [[jobs.bash("echo after-the-401")]]
    run = jobs.play(docker_client, box_image, box, steps, view=True, login=login.anthropic(tls, {"expired": 1}))
    assert run.code == 0 and run.result(0, 0)["text"].strip() == "after-the-401", run
    assert [r["ok"] for r in run.refreshes] == [True], run.refreshes


def test_a_refused_refresh_fails_the_job_and_says_so(docker_client, box_image, box, world):
    _, tls = world
    login.owned(box, login.owner_login(expires_in=-60))
    # Anthropic refuses the expired token, and every refresh of it.
    refused = login.anthropic(tls, {"invalid_grant": True, "expired": 100})
    run = jobs.play(docker_client, box_image, box, [], view=True, login=refused)
    assert run.code != 0, run
    # Asked once: a refresh token refused stays refused.
    assert [r["ok"] for r in run.refreshes] == [False], run.refreshes
    code, status = as_imd(box, f"{layout.BROKER_ASK} status")
    assert "could not be refreshed (400 invalid_grant)" in json.loads(status)["problem"], status


def test_a_refresh_that_got_no_answer_is_asked_again_later(docker_client, box_image, box, world):
    # The token endpoint answers 503: the job goes on with the token it has (Anthropic still
    # takes it here), the broker says so and that it asks again; it does not ask on every request.
    _, tls = world
    login.owned(box, login.owner_login(expires_in=-60))
    steps = [[jobs.bash("echo still-working")]]
    run = jobs.play(docker_client, box_image, box, steps, view=True, login=login.anthropic(tls, {"token_down": 1}))
    assert run.code == 0 and run.result(0, 0)["text"].strip() == "still-working", run
    assert [r.get("down") for r in run.refreshes] == [True], run.refreshes
    _, status = as_imd(box, f"{layout.BROKER_ASK} status")
    problem = json.loads(status)["problem"]
    assert "could not be refreshed (503 temporarily_unavailable): the broker asks again within a minute" in problem


def to_anthropic(url: str, token: str, *more: str) -> str:
    """curl's line for a request to Anthropic with `token`: the status and the answer. In a
    Claude job's jail, Anthropic's login hosts are the broker's; from the box, `more` names
    its proxy (BROKERED)."""
    return (
        f'curl -sS --max-time 10 -H "Authorization: Bearer {token}" {" ".join(more)} '
        f"-w ' status=%{{http_code}}' {url}; echo"
    )


# From the box itself, through the broker's CONNECT proxy (box shell's), trusting its CA.
BROKERED = ("-x", PROXY, "--cacert", f"{layout.BROKER_DIR}/trust.pem")


def test_a_sentinel_serves_its_own_run_alone(docker_client, box_image, box, world):
    _, tls = world
    login.owned(box, login.owner_login())
    profile = "https://api.anthropic.com/api/oauth/profile"
    refresh_body = '\'{"grant_type":"refresh_token","refresh_token":"\'$refresh\'"}\''
    script = (
        f"eval $({login.SENTINEL_OF_THE_JAIL}); echo access=$access; "
        # The run's own: the profile, and Claude Code's own refresh, with the sentinel.
        f"{to_anthropic(profile, '$access')}; "
        f"{to_anthropic('https://platform.claude.com/v1/oauth/token', '$access', '-H content-type:application/json', '--data', refresh_body)}"
    )
    with jobs.model(docker_client, box_image, box, [], login=login.anthropic(tls)) as (_, model):
        code, out = jobs.in_jail(box, script)
        assert code == 0, out
        sentinel = out.split("access=", 1)[1].split()[0]
        # The run has ended: its sentinel is refused, and never reaches Anthropic.
        _, ended = as_imd(box, to_anthropic(profile, sentinel, *BROKERED))
        # Another sentinel's shape the broker never minted.
        _, forged = as_imd(box, to_anthropic(profile, "sk-ant-oat01-imd-box-sentinel-0000", *BROKERED))
        said = jobs.heard(model)
    lines = out.splitlines()
    assert sentinel.startswith("sk-ant-oat01-imd-box-sentinel-"), out
    assert "owner@imdt.invalid" in lines[1] and lines[1].endswith("status=200"), out
    token = json.loads(lines[2].rsplit(" status=", 1)[0])
    assert lines[2].endswith("status=200") and token["access_token"] == sentinel, out
    assert "this run's login has ended" in ended and ended.strip().endswith("status=401"), ended
    assert forged.strip().endswith("status=401"), forged
    # Anthropic saw the profile once, with the owner's token, and no refresh.
    assert [r["path"] for r in said["request"]] == ["/api/oauth/profile"], said["request"]
    assert f"Bearer {login.ACCESS}" in said["request"][0]["headers"]


def test_a_command_in_claudes_sandbox_cannot_use_it(docker_client, box_image, box, world):
    # The job's own loopback is its commands' too (their servers meet there), so a command
    # reaches the broker: it has no sentinel to show, as Claude's sandbox hides the login's file.
    _, tls = world
    login.owned(box, login.owner_login())
    # The login's path spelled so that Claude Code's own rules (which deny reading ~/.claude)
    # let the command run: its sandbox is what is tried.
    command = (
        'f=$(printf \'%s/.%s/.credentials.json\' "$HOME" claude); cat "$f" 2>&1 | head -c 300; echo; '
        'access=$(sed -E \'s/.*"accessToken":"([^"]*)".*/\\1/\' "$f" 2>/dev/null); '
        + to_anthropic("https://api.anthropic.com/api/oauth/profile", "$access")
    )
    run = jobs.play(docker_client, box_image, box, [[jobs.bash(command)]], view=True, login=login.anthropic(tls))
    # Control: the same command in the jail, outside Claude's sandbox, where Claude Code itself
    # runs: it reads the run's sentinel, and the broker serves it.
    with jobs.model(docker_client, box_image, box, [], login=login.anthropic(tls)):
        code, out = jobs.in_jail(box, command)
    text = run.result(0, 0)["text"]
    assert "No such file" in text and "imd-box-sentinel" not in text, run
    assert text.strip().endswith("status=401"), run
    assert code == 0 and "imd-box-sentinel" in out and "owner@imdt.invalid" in out, out
    assert out.strip().endswith("status=200"), out


def test_the_broker_forwards_every_byte_but_the_token(docker_client, box_image, box, world):
    _, tls = world
    login.owned(box, login.owner_login())
    body = json.dumps({"model": "claude-imdt", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]})
    headers = (
        "-H 'anthropic-beta: oauth-2025-04-20' -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json'"
    )
    url = "'https://api.anthropic.com/v1/messages?beta=true'"
    send = f"curl -sS --max-time 10 --http1.1 {headers} --data-binary {shlex.quote(body)} -o /dev/null -w ' status=%{{http_code}}'"
    script = f'eval $({login.SENTINEL_OF_THE_JAIL}); {send} -H "Authorization: Bearer $access" {url}; echo'
    with jobs.model(docker_client, box_image, box, [], login=login.anthropic(tls)) as (_, model):
        brokered = jobs.in_jail(box, script)
        # The same request straight to Anthropic, from the box, with the owner's token.
        direct = as_imd(box, f"{send} -H 'Authorization: Bearer {login.ACCESS}' {url}; echo")
        said = jobs.heard(model)
    assert brokered[1].strip().endswith("status=200") and direct[1].strip().endswith("status=200"), (brokered, direct)
    through, straight = said["request"]
    assert through == straight, (through, straight)
    assert f"Bearer {login.ACCESS}" in through["headers"], through


def test_the_workers_view_shows_a_login_the_broker_refuses(box):
    login.owned(box, login.owner_login())
    profile = "https://api.anthropic.com/api/oauth/profile"
    # -k: the view trusts the box's CAs alone, not the broker's (a job's jail does).
    script = f"eval $({login.SENTINEL_OF_THE_JAIL}); echo access=$access; {to_anthropic(profile, '$access', '-x', PROXY, '-k')}"
    code, out = as_imd(box, jobs.boxes.in_view(script))
    assert code == 0 and "access=sk-ant-oat01-imd-box-sentinel-" in out, out
    assert out.strip().endswith("status=401") and login.ACCESS not in out, out
    # Nor is the broker's folder there, whose socket mints a run's sentinel: of the box's own
    # folders, the view shows the door's alone.
    code, out = as_imd(box, jobs.boxes.in_view(f"ls -A {layout.OWN_DIR}"))
    assert code == 0 and out.split() == [layout.DOOR_DIR.rsplit("/", 1)[1]], out


def test_the_owners_claude_in_box_shell_refreshes_through_the_broker(docker_client, box_image, box, world):
    # The owner's own Claude Code, in `box shell` of the running box (its environment:
    # broker.SHELL_ENV), with the login itself, expired: its refresh is the broker's one.
    _, tls = world
    login.owned(box, login.owner_login(expires_in=-60))
    # The owner's curl in box shell, with nothing but its environment, as a copy of Claude Code
    # that still holds the old refresh token.
    stale = (
        "curl -sS --max-time 10 -H content-type:application/json "
        f'--data \'{{"grant_type":"refresh_token","refresh_token":"{login.REFRESH}"}}\' '
        "https://platform.claude.com/v1/oauth/token"
    )
    assert as_imd(box, jobs.boxes.in_view("true"))[0] == 0  # the worker's start, which starts the broker
    try:
        with jobs.model(docker_client, box_image, box, [], login=login.anthropic(tls)) as (_, model):
            code, out = as_imd(
                box,
                "mkdir -p ~/imdt-owner && cd ~/imdt-owner && claude -p 'hello' --output-format stream-json --verbose "
                "</dev/null 2>&1 | tail -n 1",
                timeout=120,
                environment={**broker.SHELL_ENV, **jobs.WORKER_ENV, **jobs.OFFLINE},
            )
            # A copy of Claude Code that still holds the old refresh token, as a session started
            # before the rotation does: it gets the pair the broker holds, and Anthropic is not
            # asked again.
            _, again = as_imd(box, stale, environment=broker.SHELL_ENV)
            said = jobs.heard(model)
    finally:
        as_imd(box, "rm -rf ~/imdt-owner")
    assert code == 0 and '"subtype":"success"' in out, out
    assert [r["ok"] for r in said["refresh"]] == [True], said["refresh"]
    assert json.loads(again)["refresh_token"] == "sk-ant-ort01-imdt-refresh-1", again
    code, now = as_imd(box, f"cat {login.LOGIN}")
    assert json.loads(now)["claudeAiOauth"]["accessToken"] == "sk-ant-oat01-imdt-access-1", now
