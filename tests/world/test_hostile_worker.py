"""A hostile worker, and a hostile job, against the view's wall from its other side.

The worker runs in its view (worker/door/view); the box's own programs outside it (the door and
its launchers, the login broker and its helpers) sit next to the owner's Claude login. Here the
worker does what a release might: it writes the home's dotfiles (~/.curlrc, ~/.netrc,
~/.gitconfig, ~/.npmrc), sets NODE_OPTIONS, BASH_ENV, LD_PRELOAD, CURL_HOME and GIT_CONFIG_* for
every call it makes through the door, kills the login broker mid-job, floods the door with
connections that send nothing and moves the CLIs' packages aside in its view to make its own; and
a job tries the broker's port for the box's loopback, a private address and a host that is not
Anthropic's. Each hostile step aims at the owner's login
(and the device key): where it got a copy, the copy is in LEAKS, a folder the worker reads.

For each, the owner's login and the device key stay where they were and nowhere else, and the
running job finishes; each twin, the box without the fix (a patched copy of the image), shows
the leak. The real Claude Code runs each job, against the test world's Anthropic
(tests/harness/login.py), started from the worker's view as the worker starts it.
"""

from __future__ import annotations

import base64
import json
import shlex
import threading
import time
import uuid
from typing import Callable

import pytest

from imdbox import layout
from tests.harness import agents as agents_mod
from tests.harness import jobs, login
from tests.harness.boxes import as_imd, in_view
from tests.harness.hostile_home import (
    DOTFILES,
    HOSTILE_ENV,
    KEY,
    KEY_MARK,
    LEAKS,
    OWNER,
    PRELOAD,
    box_of,
    seize_library,
)
from tests.harness.jobs import HOME
from tests.harness.login import CODEX_LOGIN, CODEX_MARK, codex_login
from tests.harness.twins import (
    JAIL_IN_NO_DOMAIN,
    NO_READY_LAUNCHER,
    PLACES_IN_THE_BOXS_FOLDERS,
    door_with,
    jail_with,
    patched_image,
    script_with,
)

pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group(agents_mod.GROUPS[1])]


@pytest.fixture(scope="module")
def box(docker_client, box_image, topology, agents, tmp_path_factory, world):
    with box_of(docker_client, box_image, topology, agents, tmp_path_factory.mktemp("ca"), world) as container:
        yield container


def leaked(box, secrets=(login.ACCESS, login.REFRESH)) -> str:
    """The files of the home but the login's that hold the owner's tokens (or `secrets`). The
    device key is the worker's own (its view holds it), so a worker's copy of it is no leak."""
    pattern = " ".join(f"-e {shlex.quote(s)}" for s in secrets)
    script = f"grep -rlF {pattern} {HOME} --exclude-dir=.npm --exclude-dir=.npm-global 2>/dev/null | grep -vxF {login.LOGIN} || true"
    code, out = as_imd(box, script, timeout=120)
    assert code == 0, out
    return out.strip()


def hostile_home(box, library: bytes) -> None:
    jobs.seed(box, DOTFILES)
    encoded = base64.b64encode(library).decode()
    code, out = as_imd(
        box, f"mkdir -p {LEAKS} && chmod 755 {HOME}/imdt-seize.sh && echo {encoded} | base64 -d > {PRELOAD}"
    )
    assert code == 0, out


def stop_the_broker(box) -> None:
    """The broker and its supervisor gone (as a restart of them would leave it): the next call
    that needs it starts it."""
    as_imd(box, f"pkill -KILL -f {shlex.quote(layout.BROKER)}; true")


def hostile_calls(client, image, box, tls: dict, *, view: bool) -> jobs.Run:
    """A Claude job's run and git calls on its node, each with HOSTILE_ENV, made as the worker
    makes them (`view`: from its view, through the door; the variables set there, in the
    worker's own process); the broker stopped first, so the run's launcher starts it."""
    stop_the_broker(box)
    space = jobs.workspace()
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in HOSTILE_ENV.items())
    run = jobs.play(
        client, image, box, [[jobs.bash("echo the-job-ran")]], cwd=space, view=view,
        way=f'env {env} "$IDENTITYMD_CLAUDE_BIN"', login=login.anthropic(tls),
    )  # fmt: skip
    git = f"cd {space} && {env} git init -q . && {env} git status && {env} git log -1; true"
    as_imd(box, in_view(git) if view else f"export PATH={layout.HANDS_DIR}:$PATH; {git}")
    return run


def test_the_workers_dotfiles_and_variables_change_nothing_outside_the_view(
    docker_client, box_image, box, tmp_path, world
):
    hostile_home(box, seize_library(tmp_path))
    run = hostile_calls(docker_client, box_image, box, world[1], view=True)
    assert run.code == 0 and run.result(0, 0)["text"].strip() == "the-job-ran", run
    # The door said what of the worker's environment a job did not get.
    said = next((line for line in run.out.splitlines() if "a job does not get the worker's" in line), "")
    assert all(name in said for name in ("NODE_OPTIONS", "BASH_ENV", "LD_PRELOAD", "CURL_HOME")), run.out[-2000:]
    assert leaked(box) == ""
    # The owner's login and the device key are where they were, as they were.
    assert (
        as_imd(box, f"cat {login.LOGIN}; echo; cat {KEY}")[1] == f"{OWNER}\n{json.dumps({'imdtDeviceKey': KEY_MARK})}"
    )


TWIN_OF_THE_SWITCH = {
    # Every script takes its caller's environment for its own, and curl reads the home's
    # configuration: the box's programs as they ran before the fix, outside the view.
    **script_with("worker/own", f"{layout.WORKER_DIR}/own", ("has_own_env() { # NAME...: more names it may hold\n",
                                                              "has_own_env() { # NAME...: more names it may hold\n  return 0\n")),
    **script_with("worker/broker/ask", layout.BROKER_ASK, ("exec curl -q ", "exec curl ")),
}  # fmt: skip


def test_twin_without_the_fix_the_workers_dotfiles_and_variables_copy_the_login(
    docker_client, box_image, topology, agents, tmp_path, world
):
    with (
        patched_image(docker_client, box_image, TWIN_OF_THE_SWITCH) as image,
        box_of(docker_client, image, topology, agents, tmp_path, world) as twin,
    ):
        hostile_home(twin, seize_library(tmp_path))
        # As the door ran the launchers before the fix: with the worker's environment.
        hostile_calls(docker_client, image, twin, world[1], view=False)
        found = leaked(twin)
    assert f"{LEAKS}/" in found, found


# --- the login broker killed mid-job -------------------------------------------------------------

WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.2; done; echo waited"
WAITING = "pgrep -f 'while \\[ ! -e go'"  # a job's command that waits for `go` (not this line)


def broker_pid(box) -> str:
    return as_imd(box, f"pgrep -f {shlex.quote('^node ' + layout.BROKER)} || true")[1].strip()


def until(what, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while not (found := what()):
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.2)
    return found


# Claude Code's own retries of a request that failed (its default: 10, with a growing wait): a
# twin's job fails in seconds, and a job that goes on needed none.
FEW_RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "2"}


def while_waiting(client, image, box, tls: dict, meanwhile: Callable[[], None]) -> jobs.Run:
    """A Claude job from the worker's view whose first command waits while `meanwhile` runs, then
    goes on to a second step."""
    space = jobs.workspace()
    steps = [[jobs.bash(WAIT_FOR_GO)], [jobs.bash("echo after-the-wait")]]
    done: dict = {}
    job = threading.Thread(
        target=lambda: done.update(
            run=jobs.play(client, image, box, steps, cwd=space, view=True, login=login.anthropic(tls), env=FEW_RETRIES)
        )
    )
    job.start()
    try:
        until(lambda: as_imd(box, WAITING)[0] == 0)
        meanwhile()
    finally:
        as_imd(box, f"touch {space}/go")
        job.join(300)
    return done["run"]


def across_a_restart(client, image, box, tls: dict) -> jobs.Run:
    """A job that waits while the test kills the login broker (its node; the supervisor starts it
    again), then goes on through the new broker."""

    def restart() -> None:
        old = until(lambda: broker_pid(box))
        as_imd(box, f"kill -KILL {old}")
        until(lambda: broker_pid(box) not in ("", old) and as_imd(box, f"{layout.BROKER_ASK} status")[0] == 0, 30)

    return while_waiting(client, image, box, tls, restart)


def test_a_job_goes_on_across_a_restart_of_the_broker(docker_client, box_image, box, world):
    run = across_a_restart(docker_client, box_image, box, world[1])
    assert run.code == 0 and run.result(0, 0)["text"].strip() == "waited", run
    assert run.result(1, 0)["text"].strip() == "after-the-wait", run
    assert leaked(box) == ""


def test_twin_a_broker_that_starts_afresh_fails_the_job(docker_client, box_image, topology, agents, tmp_path, world):
    # As the broker started before the fix: a new CA and no runs, whatever an earlier one left.
    afresh = script_with(
        "worker/broker/broker.mjs",
        layout.BROKER,
        (
            "context = kept() ?? certificates();\nawait takeUp();\n",
            'context = certificates();\nfor (const f of fs.readdirSync(at("runs"))) fs.rmSync(at(`runs/${f}`));\n',
        ),
    )
    with (
        patched_image(docker_client, box_image, afresh) as image,
        box_of(docker_client, image, topology, agents, tmp_path, world) as twin,
    ):
        run = across_a_restart(docker_client, image, twin, world[1])
    # The request after the restart, which would carry the first command's result, never made it.
    assert run.code != 0 and not run.results, run


# --- a flood of connections that send nothing -----------------------------------------------------

FLOOD = 2100  # more connections at once than the box's pids (runflags.PIDS_LIMIT) leave processes for
FLOOD_JS = f"""
const net = require("net");
let opened = 0;
const end = Date.now() + 10000;
// Each connection sends nothing; one the door lets go, or could not take yet, is made again.
function one() {{
  if (Date.now() > end) return;
  net.connect("{layout.DOOR_DIR}/door.sock").on("connect", () => opened++).on("error", () => {{}}).on("close", () => setTimeout(one, 5));
}}
for (let i = 0; i < {FLOOD}; i++) one();
setTimeout(() => {{ console.log(`flooded ${{opened}}`); process.exit(0); }}, 10500);
"""


def flooded(box) -> dict:
    """From the worker's view: a git call in flight on a node (waiting for `go`), then ten seconds
    of silent connections to the door, made again as the door lets them go; a new call three
    seconds in, `go` five seconds in, and one more call once the flood is over. How each ended
    (code, output), and the flood's own line."""
    space = jobs.workspace()
    waits = f"mkdir -p {space} && cd {space} && git -c alias.wait={shlex.quote('!' + WAIT_FOR_GO)} wait 2>&1"
    version = in_view(f"cd {space} && git --version 2>&1")
    results: dict = {}

    def side(name: str, script: str, timeout: int) -> threading.Thread:
        thread = threading.Thread(target=lambda: results.update({name: as_imd(box, script, timeout=timeout)}))
        thread.start()
        return thread

    in_flight = side("in flight", in_view(waits), 180)
    until(lambda: as_imd(box, WAITING)[0] == 0, 60)
    flood = side("flood", in_view(f"node -e {shlex.quote(FLOOD_JS)}"), 60)
    time.sleep(3)
    during = side("during", version, 60)
    time.sleep(2)
    as_imd(box, f"touch {space}/go")
    for thread in (in_flight, flood, during):
        thread.join(180)
    results["after"] = as_imd(box, version, timeout=60)
    return results


def held_up(ended: dict) -> list[str]:
    """What the flood did to the calls around it; empty when it did nothing. bash says "fork:
    retry: Resource temporarily unavailable", dash "Cannot fork"."""
    harm = []
    code, out = ended["in flight"]
    if code != 0 or not out.strip().endswith("waited"):
        harm.append(f"the call in flight ended {code}")
    harm += [f"{name} could not fork" for name in ("in flight", "during", "after") if "fork" in ended[name][1]]
    if ended["after"][0] != 0 or not ended["after"][1].startswith("git version"):
        harm.append(f"the call after ended {ended['after'][0]}")
    return harm


def test_a_flood_of_silent_connections_holds_no_call_up(box):
    ended = flooded(box)
    # It kept the door full: more silent connections than calls may run at once.
    assert int(ended["flood"][1].split("flooded ")[1].split()[0]) > 256, ended["flood"]
    assert held_up(ended) == [], ended


def test_twin_a_door_that_waits_on_every_caller(docker_client, box_image, topology, agents, tmp_path, world):
    # The door before the fix: no time limit on a caller's request, and no limit on calls. Its
    # silent callers take the box's every process: a call in flight cannot fork, or a new one
    # is not started. (Nor had it a launcher ready before each call, whose bash slows the flood.)
    patch = door_with(
        tmp_path,
        ("        int r = poll(&p, 1, (int)left);\n", "        int r = poll(&p, 1, -1);\n"),
        ("#define MAX_CALLS 256\n", "#define MAX_CALLS 1000000\n"),
        NO_READY_LAUNCHER,
    )
    with (
        patched_image(docker_client, box_image, patch) as image,
        box_of(docker_client, image, topology, agents, tmp_path, world) as twin,
    ):
        ended = flooded(twin)
    assert held_up(ended), ended


# --- a job tries the broker's ports ---------------------------------------------------------------

LOOPBACK_PORT = 47990  # a server of the box's own on its loopback (the worker's relay, say)
SERVE = (
    'nohup node -e \'require("net").createServer((s) => s.end("imdt-box-loopback\\n"))'
    f'.listen({LOOPBACK_PORT}, "127.0.0.1")\' >/dev/null 2>&1 &'
)


def asked_through(proxy: str, target: str) -> str:
    """A CONNECT to `target` through the proxy at `proxy`, and what came back first (socat)."""
    request = f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n"
    return f"printf '{request}' | timeout 5 socat -t 2 - TCP:{proxy} 2>&1 | head -c 400; echo"


def tries(box, topology) -> tuple[str, str]:
    """From a Claude job's jail (outside Claude's sandbox): a CONNECT to the box's loopback
    through each port of the broker's it could try, and TLS to its 443 for another host; from
    the box (box shell's way), the broker's proxy asked for the loopback, a private address and
    a host that is not Anthropic's. What each saw."""
    as_imd(box, SERVE)
    private = topology.targets["router"].ip
    loopback = f"127.0.0.1:{LOOPBACK_PORT}"
    try:
        job = "; ".join(
            [
                f"echo 443:; {asked_through('127.0.0.1:443', loopback)}",
                f"echo proxy:; {asked_through(f'127.0.0.1:{layout.BROKER_PORT}', loopback)}",
                "echo sni:; curl -q -sS --max-time 5 --resolve imdt-elsewhere.invalid:443:127.0.0.1 "
                "https://imdt-elsewhere.invalid/ 2>&1; echo",
            ]
        )
        code, from_the_job = jobs.in_jail(box, job)
        assert code == 0, from_the_job
        proxy = f"127.0.0.1:{layout.BROKER_PORT}"
        box_side = "; ".join(
            f"echo {name}:; {asked_through(proxy, target)}"
            for name, target in (
                ("loopback", loopback),
                ("private", f"{private}:80"),
                ("elsewhere", "imdt-elsewhere.invalid:443"),
            )
        )
        _, from_the_box = as_imd(box, box_side)
    finally:
        as_imd(box, f"pkill -f 'listen\\({LOOPBACK_PORT}'; true")
    return from_the_job, from_the_box


def test_a_jobs_connect_through_the_broker_reaches_nothing_but_anthropic(box, topology):
    from_the_job, from_the_box = tries(box, topology)
    assert "imdt-box-loopback" not in from_the_job + from_the_box, (from_the_job, from_the_box)
    # The broker's own answers, each naming why.
    assert "sni:" in from_the_job and "curl: (35)" in from_the_job.split("sni:")[1], from_the_job
    for name, why in (
        ("loopback", "the box's loopback"),
        ("private", "a private address"),
        ("elsewhere", "not one of Anthropic's login hosts"),
    ):
        part = from_the_box.split(f"{name}:")[1]
        assert part.lstrip().startswith("HTTP/1.1 403") and why in part, from_the_box
    logs = box.logs().decode(errors="replace")
    assert f"imd-box broker: refused 127.0.0.1:{LOOPBACK_PORT}: the box's loopback" in logs, logs[-2000:]


# The broker's CONNECT before the fix, for every host but Anthropic's: a plain tunnel.
TUNNEL = """  if (reason) {
    const upstream = net.connect(port, host, () => {
      client.write("HTTP/1.1 200 Connection Established\\r\\n\\r\\n");
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => client.destroy());
    return;
"""


def test_twin_a_broker_that_tunnels_anywhere(docker_client, box_image, topology, agents, tmp_path, world):
    # The broker before the fix: every CONNECT tunnelled as it came, and its proxy's port in each
    # Claude job's network, as HTTPS_PROXY had it.
    anywhere = {
        **script_with("worker/broker/broker.mjs", layout.BROKER, ("  if (reason) {\n", TUNNEL)),
        **script_with(
            "worker/jail.d/network",
            f"{layout.JAIL_ROOMS}/network",
            ('ports+=("443:$login_port")', 'ports+=("443:$login_port" "$BROKER_PORT")'),
        ),
    }  # fmt: skip
    with (
        patched_image(docker_client, box_image, anywhere) as image,
        box_of(docker_client, image, topology, agents, tmp_path, world) as twin,
    ):
        as_imd(twin, in_view("true"))  # the worker's start, which starts the broker
        from_the_job, from_the_box = tries(twin, topology)
    assert "imdt-box-loopback" in from_the_job.split("proxy:")[1], from_the_job
    assert "imdt-box-loopback" in from_the_box.split("loopback:")[1], from_the_box


# --- the worker's npm links, which the jail runs --------------------------------------------------

CODEX_LINK = f"{HOME}/.npm-global/bin/codex"


def turned_link(box, space: str) -> tuple[int, str]:
    """The worker turns Codex's npm link to a program of its own (its npm prefix is its own), which
    copies what its jail holds to the workspace, then starts Codex as it does, through the door
    (run in its view, the program sees the view's empty ~/.codex): its exit code and output."""
    fake = f"{HOME}/.npm-global/imdt-not-codex"  # in the npm prefix, which the jail holds
    code, out = as_imd(
        box,
        f"cp -P {CODEX_LINK} {CODEX_LINK}.imdt && printf '#!/bin/sh\\ncat {CODEX_LOGIN} > \"$PWD/seized\"\\n' > {fake} "
        f"&& chmod 755 {fake} && ln -sfn {fake} {CODEX_LINK}",
    )
    assert code == 0, out
    try:
        return as_imd(
            box,
            in_view(
                f'mkdir -p {space} && cd {space} && "$IDENTITYMD_CODEX_BIN" exec --json --sandbox workspace-write --ignore-user-config hello 2>&1'
            ),
        )
    finally:
        as_imd(box, f"mv -fT {CODEX_LINK}.imdt {CODEX_LINK}; rm -f {fake}")


def test_a_cli_link_the_worker_turned_runs_nothing(box):
    space = jobs.workspace()
    with codex_login(box):
        code, out = turned_link(box, space)
    assert code == 70 and f"its npm link ({CODEX_LINK}) leads out of its package" in out, out
    assert as_imd(box, f"cat {space}/seized")[0] != 0


def test_twin_a_jail_that_runs_the_link_as_it_is(docker_client, box_image, topology, agents, tmp_path, world):
    # The jail before the fix: the CLI is whatever the worker's npm link names.
    as_it_is = script_with(
        "worker/jail", layout.JAIL, ('  cli=$(cli_program "$runtime") ||\n', "  cli=$program\n  true ||\n")
    )
    ran, seized = seized_in_a_twin(docker_client, box_image, topology, agents, tmp_path, world, as_it_is, turned_link)
    assert CODEX_MARK in seized, (ran, seized)


def seized_in_a_twin(client, image, topology, agents, folder, world, patch, plant) -> tuple:
    """In a box of the image with `patch`, signed in to Codex: `plant(box, space)` in a new job's
    workspace, then what the workspace's `seized` holds (the login, where the wall is broken)."""
    with (
        patched_image(client, image, patch) as patched,
        box_of(client, patched, topology, agents, folder, world) as twin,
        codex_login(twin),
    ):
        space = jobs.workspace()
        ran = plant(twin, space)
        return ran, as_imd(twin, f"cat {space}/seized")[1]


ASIDE = f"{HOME}/.npm-global/lib.imdt-aside"


def moved_package(box, space: str) -> tuple[int, str]:
    """In its view, the worker moves the folder that holds the CLIs' packages aside (the view's
    stand-ins go with it) and makes a Codex of its own where the npm link leads, which copies what
    its jail holds to the workspace; then it asks Codex its version, through the door. Its exit
    code and output; the volume's packages are put back after."""
    plant = (
        f'real=$(realpath -e {CODEX_LINK}) && mv {HOME}/.npm-global/lib {ASIDE} && mkdir -p "$(dirname "$real")" '
        f'&& printf \'#!/bin/sh\\ncat {CODEX_LOGIN} > "$PWD/seized"\\n\' > "$real" && chmod 755 "$real"'
    )
    try:
        return as_imd(
            box,
            in_view(f'mkdir -p {space} && cd {space} && {{ {plant}; }} 2>&1; "$IDENTITYMD_CODEX_BIN" --version 2>&1'),
        )
    finally:
        as_imd(box, f"[ ! -d {ASIDE} ] || {{ rm -rf {HOME}/.npm-global/lib && mv {ASIDE} {HOME}/.npm-global/lib; }}")


def test_the_cli_packages_are_not_moved_aside_in_the_view(box):
    space = jobs.workspace()
    with codex_login(box):
        code, out = moved_package(box, space)
    assert "Device or resource busy" in out and code == 0 and "codex-cli" in out, out
    assert as_imd(box, f"cat {space}/seized")[0] != 0


def test_twin_a_view_whose_package_folders_move(docker_client, box_image, topology, agents, tmp_path, world):
    # The view before the fix: the folders above the stand-ins are the volume's, as they are.
    as_they_are = script_with("worker/door/view", layout.WORKER_VIEW, ('  view+=(--bind "$dir" "$dir")\n', ""))
    ran, seized = seized_in_a_twin(
        docker_client, box_image, topology, agents, tmp_path, world, as_they_are, moved_package
    )
    assert CODEX_MARK in seized, (ran, seized)


def planted_pid(client, image, box, tls: dict) -> tuple[jobs.Run, bool, str]:
    """While a Claude job's command waits, the worker, in its view, writes the pid of a process
    outside the view (as another job's, or the broker) into the launcher's pid file of the job's
    network, which the launcher reads to end that network's pasta once the run ends. The run,
    whether that process outlived it, and what the worker's side said."""
    code, victim = as_imd(box, "nohup sleep 300 >/dev/null 2>&1 & echo $!")
    assert code == 0, victim
    victim = victim.strip()
    said = []
    # What the worker sees of the launchers' folder, in its view: the pid file, once pasta wrote it.
    plant = (
        f"for _ in $(seq 30); do f=$(ls {layout.RUNS}/net.*.pid 2>/dev/null | head -n 1); "
        f'[ -s "$f" ] && echo {victim} > "$f" && echo planted && break; sleep 0.1; done; ls -a {layout.RUNS}'
    )
    run = while_waiting(client, image, box, tls, lambda: said.append(as_imd(box, in_view(plant))[1]))
    alive = as_imd(box, f"kill -0 {victim}")[0] == 0
    as_imd(box, f"kill {victim} 2>/dev/null; true")
    return run, alive, "".join(said)


def test_the_launchers_folder_is_not_the_workers(docker_client, box_image, box, world):
    run, alive, said = planted_pid(docker_client, box_image, box, world[1])
    assert run.code == 0 and run.result(1, 0)["text"].strip() == "after-the-wait", run
    assert alive and "planted" not in said, said


def test_twin_a_view_that_shows_the_launchers_folder(docker_client, box_image, topology, agents, tmp_path, world):
    # The view before the fix: the launchers' folder (with the box's other own folders) is the
    # worker's to write.
    as_it_was = script_with("worker/door/view", layout.WORKER_VIEW, ('  --tmpfs "$OWN_DIR"\n', ""))
    with (
        patched_image(docker_client, box_image, as_it_was) as image,
        box_of(docker_client, image, topology, agents, tmp_path, world) as twin,
    ):
        _, alive, said = planted_pid(docker_client, image, twin, world[1])
    assert not alive and "planted" in said, said


# The worker, in its view, links each file a new view of the box would write in its folder of
# stand-ins (box starts one for each of the worker's own commands: `imd status`, `imd doctor`) to
# the owner's login, for as long as it is told ($1 seconds), or until file $2 is there.
THROUGH_A_NEW_VIEW = (
    f'end=$((SECONDS + $1)); while [ $SECONDS -lt $end ] && [ ! -e "$2" ]; do '
    f"for d in /tmp/.imd-box-view.*/ {layout.RUNS}/view.*/; do "
    f'ln -s {login.LOGIN} "${{d}}login.json" 2>/dev/null; ln -s {login.LOGIN} "${{d%/}}.info" 2>/dev/null; '
    f'ln -s {login.LOGIN} "${{d}}info" 2>/dev/null; done; done'
)


def a_new_view(box) -> str:
    """The owner's login after a new view of the box was made while the worker watched /tmp. The
    watch ends with the new view (a loop of `ln` for 20 s was some 20,000 processes a test)."""
    made = f"/tmp/imdt-view-made-{uuid.uuid4().hex}"
    watcher = threading.Thread(
        target=lambda: as_imd(box, in_view(f"set -- 20 {made}; {THROUGH_A_NEW_VIEW}"), timeout=60)
    )
    watcher.start()
    try:
        time.sleep(1)
        code, out = as_imd(box, in_view("echo in-the-view"))
        assert "in-the-view" in out, out
    finally:
        as_imd(box, f"touch {made}")
        watcher.join(60)
        as_imd(box, f"rm -f {made}")
    return as_imd(box, f"cat {login.LOGIN}")[1]


def test_a_new_views_stand_ins_are_out_of_the_workers_reach(box):
    assert a_new_view(box) == OWNER


def test_twin_a_view_whose_stand_ins_are_in_the_boxs_tmp(docker_client, box_image, topology, agents, tmp_path, world):
    # The view before the fix: its stand-ins in a folder of its own in the box's /tmp.
    as_it_was = script_with(
        "worker/door/view", layout.WORKER_VIEW, ('mktemp -d "$RUNS/view.XXXXXX"', "mktemp -d /tmp/.imd-box-view.XXXXXX")
    )
    with (
        patched_image(docker_client, box_image, as_it_was) as image,
        box_of(docker_client, image, topology, agents, tmp_path, world) as twin,
    ):
        assert a_new_view(twin) != OWNER


# --- what the worker names: the box's own folders, and a job's signals ---------------------------

# The worker's own client of the door names any working directory it likes; the door changes into
# it outside the view. From each of the box's own folders, the worker's own git on a file there
# (the login broker's TLS key), and a listing: what it printed.
IN_THE_BOXS_FOLDERS = " ; ".join(
    f"cd {folder} && {layout.DOOR} call git diff --no-index /dev/null {file} 2>&1; "
    f"{layout.DOOR} call git ls-files --others 2>&1; echo exit $?"
    for folder, file in ((layout.BROKER_DIR, "hosts.key"), (layout.RUNS, "x"), (layout.DOOR_DIR, "door.sock"))
)


def in_the_boxs_folders(box) -> str:
    code, out = as_imd(box, f"{layout.BROKER_START} && ({in_view('true')}) && {IN_THE_BOXS_FOLDERS}")
    assert code == 0, out
    return out


def test_no_working_directory_the_worker_names_is_one_of_the_boxs_folders(box):
    out = in_the_boxs_folders(box)
    assert "PRIVATE KEY" not in out and "trust.pem" not in out, out
    assert out.count("is no folder the box keeps for the worker's git") == 6 and out.count("exit 70") == 3, out


def test_twin_a_place_room_that_takes_the_boxs_folders(docker_client, box_image, topology, agents, tmp_path, world):
    with (
        patched_image(docker_client, box_image, jail_with(*PLACES_IN_THE_BOXS_FOLDERS)) as image,
        box_of(docker_client, image, topology, agents, tmp_path, world) as twin,
    ):
        out = in_the_boxs_folders(twin)
    assert "PRIVATE KEY" in out, out


def signals_from_a_jobs_jail(box) -> str:
    """What a command in a Claude job's jail (as a job's hook or MCP server runs, outside Claude's
    own sandbox) could signal of the login broker, its supervisor and the door."""
    pids = f"pgrep -f {shlex.quote(layout.BROKER)}; pgrep -f {shlex.quote('^' + layout.DOOR + ' serve$')}"
    probe = 'for p in "$@"; do kill -0 "$p" 2>/dev/null && echo "signalled $p" || echo "refused $p"; done'
    space = jobs.workspace()
    code, out = as_imd(
        box,
        f"{layout.BROKER_START} && ({in_view('true')}) && mkdir -p {space} && cd {space} && "
        f"{layout.JAIL} claude --program /bin/bash -c {shlex.quote(probe)} probe $({pids}) 2>&1",
    )
    assert code == 0 and ("refused" in out or "signalled" in out), out
    return out


def test_a_jobs_jail_signals_nothing_outside_it(box):
    out = signals_from_a_jobs_jail(box)
    assert out.count("refused ") >= 3 and "signalled" not in out, out


def test_twin_a_jail_in_no_landlock_domain(docker_client, box_image, topology, agents, tmp_path, world):
    with (
        patched_image(docker_client, box_image, jail_with(*JAIL_IN_NO_DOMAIN)) as image,
        box_of(docker_client, image, topology, agents, tmp_path, world) as twin,
    ):
        out = signals_from_a_jobs_jail(twin)
    assert out.count("signalled ") >= 3, out  # (a pid refused is pgrep's own shell, gone)
