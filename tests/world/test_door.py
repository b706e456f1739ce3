"""The door: every way a worker might start an agent CLI or a hand ends in a job's jail, or fails.

The worker runs in its view of the box (worker/door/view), where each agent CLI, launcher, git
and forge is a stand-in that calls the door, a process outside the view that makes the job's
jail (worker/door/door.c). A newer worker release may start them some other way than today's
(tests/harness/jobs.py has today's): each way below runs from the worker's view on the real
Claude Code, Codex, git and forge, and tells whether what it started was jailed. Each way's
twin is the same way outside the view, as the worker ran before the door, which runs unjailed.

What tells: a job's jail holds none of the home but its workspace, so the device key
(~/.identitymd/config.json) is not there.
- Claude Code: the owner's own SessionStart hook (the jail keeps the owner's settings), which
  Claude Code runs outside its sandbox, writes where it ran into the workspace.
- Codex: one shell command of the scripted model's, in Codex's own sandbox, which limits
  writes but not reads.
- git: an alias that runs a shell command; forge: `forge fmt --check --raw` of a file beside the
  key, which prints it. Both run on the image's own PATH (a worker that makes its own PATH): on
  the worker's PATH the box's hands come first, and jail git and forge by name without the door.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import threading
from pathlib import Path

import pytest

from imdbox import layout
from tests.harness import agents as agents_mod
from tests.harness import boxes, jobs
from tests.harness.boxes import as_imd, in_view
from tests.harness.jobs import HOME, SECRETS
from tests.harness.twins import door_with, patched_image, put_files

pytestmark = [pytest.mark.usefixtures("box_image"), pytest.mark.xdist_group(agents_mod.GROUPS[2])]

KEY = SECRETS["device key"]
WHERE = f"if [ -e {KEY} ]; then echo UNJAILED; else echo jailed; fi"
NPM_ROOT = '"$(npm root -g)"'


def through(command: str) -> dict[str, str]:
    """The shells and env a newer worker might start `command` through."""
    return {
        "bash -c": f"bash -c 'exec {command} \"$@\"' bash",
        "sh -c": f"sh -c 'exec {command} \"$@\"' sh",
        "env": f"env {command}",
    }


def native(scope: str, name: str) -> str:
    """The platform package's own binary, by its absolute path (found where npm put it)."""
    return f'"$(find {NPM_ROOT}/{scope} -type f -name {name} -perm -u+x | head -n 1)"'


CLAUDE_WAYS = {
    "IDENTITYMD_CLAUDE_BIN": '"$IDENTITYMD_CLAUDE_BIN"',
    "by name": "claude",
    "npm bin link": f"{HOME}/.npm-global/bin/claude",
    "its realpath": f'"$(realpath {HOME}/.npm-global/bin/claude)"',
    "npm root -g": f"{NPM_ROOT}/@anthropic-ai/claude-code/bin/claude.exe",
    "native binary": native("@anthropic-ai", "claude"),
    **through("claude"),
}
CODEX_WAYS = {
    "IDENTITYMD_CODEX_BIN": '"$IDENTITYMD_CODEX_BIN"',
    "by name": "codex",
    "npm bin link": f"{HOME}/.npm-global/bin/codex",
    "its realpath": f'"$(realpath {HOME}/.npm-global/bin/codex)"',
    "node codex.js": f"node {NPM_ROOT}/@openai/codex/bin/codex.js",
    "native binary": native("@openai", "codex"),
    **through("codex"),
}
# The launchers' variables name the box's launcher, which jails without the door too.
JAILED_WITHOUT_THE_DOOR = {"IDENTITYMD_CLAUDE_BIN", "IDENTITYMD_CODEX_BIN"}
GIT_WAYS = {"by name": "git", "/usr/bin/git": "/usr/bin/git", **through("git")}
FORGE_WAYS = {"by name": "forge", "the image's path": "/usr/local/bin/forge", **through("forge")}


def sides(ways: dict) -> list:
    return [
        pytest.param(way, door, id=f"{way}-{'door' if door else 'twin-no-door'}")
        for way in ways
        for door in (True, False)
        if door or way not in JAILED_WITHOUT_THE_DOOR
    ]


@pytest.fixture(scope="module")
def box(docker_client, box_image, topology, agents):
    """A walled box on the real CLIs' volume, with a device key and the owner's SessionStart
    hook; both go again with the module, as the volume serves other tests."""
    container = boxes.start_walled(docker_client, box_image, topology, volume=agents)
    settings = f"{HOME}/.claude/settings.json"
    hook = f'{WHERE} > "$CLAUDE_PROJECT_DIR/imdt-where"'
    try:
        keep = f"[ ! -e {settings} ] || mv {settings} {settings}.imdt; [ ! -e {KEY} ] || mv {KEY} {KEY}.imdt"
        assert as_imd(container, keep)[0] == 0
        jobs.seed(
            container,
            {
                KEY: json.dumps({"imdtDeviceKey": jobs.mark("key")}),
                settings: json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": hook}]}]}}),
                f"{HOME}/.identitymd/imdt-where.sol": "contract   UNJAILED   {  }\n",
            },
        )
        yield container
    finally:
        as_imd(
            container,
            f"rm -f {settings} {KEY} {HOME}/.identitymd/imdt-where.sol; "
            f"[ ! -e {settings}.imdt ] || mv {settings}.imdt {settings}; [ ! -e {KEY}.imdt ] || mv {KEY}.imdt {KEY}",
        )
        container.remove(force=True)


@pytest.mark.parametrize("way, door", sides(CLAUDE_WAYS))
def test_claude_by_every_way(docker_client, box_image, box, way, door):
    space = jobs.workspace()
    run = jobs.play(docker_client, box_image, box, [], cwd=space, way=CLAUDE_WAYS[way], view=door)
    code, where = as_imd(box, f"cat {space}/imdt-where")
    assert code == 0, f"the hook did not run:\n{run}"
    assert where.strip() == ("jailed" if door else "UNJAILED"), run
    assert run.code == 0, run


@pytest.mark.parametrize("way, door", sides(CODEX_WAYS))
def test_codex_by_every_way(docker_client, box_image, box, way, door):
    run = jobs.codex_play(docker_client, box_image, box, [WHERE], way=CODEX_WAYS[way], view=door)
    assert run.results, run
    # The command's own output, within what Codex reports of it.
    assert re.findall(r"\b(?:UNJAILED|jailed)\b", run.results[0]["output"]) == ["jailed" if door else "UNJAILED"], run


def hand(box, way: str, args: str, door: bool) -> tuple[int, str]:
    """A git or forge call the worker makes on a job's node, `way` naming the program."""
    space = jobs.workspace()
    script = f"export PATH=/usr/local/bin:/usr/bin:/bin && mkdir -p {space} && cd {space} && exec {way} {args} 2>&1"
    return as_imd(box, in_view(script) if door else script)


@pytest.mark.parametrize("way, door", sides(GIT_WAYS))
def test_git_by_every_way(box, way, door):
    code, out = hand(box, GIT_WAYS[way], f"-c alias.where={shlex.quote('!' + WHERE)} where", door)
    assert (code, out.strip()) == (0, "jailed" if door else "UNJAILED")


@pytest.mark.parametrize("way, door", sides(FORGE_WAYS))
def test_forge_by_every_way(box, way, door):
    code, out = hand(box, FORGE_WAYS[way], f"fmt --check --raw {HOME}/.identitymd/imdt-where.sol", door)
    if door:
        assert code == 1 and "UNJAILED" not in out and "imdt-where.sol not found" in out, out
    else:
        assert (code, "contract UNJAILED {}" in out) == (1, True), out


def test_the_view_holds_no_real_cli_and_no_login(box):
    """What a worker could run or read by path in its view: stand-ins, and no login."""
    login = SECRETS["login"]
    script = (
        f"for f in {NPM_ROOT}/@anthropic-ai/claude-code/bin/claude.exe {NPM_ROOT}/@openai/codex/bin/codex.js; do"
        ' head -c 64 "$f" | head -n 1; done; '
        f"ls /usr/lib/git-core | wc -l; head -n 1 /usr/bin/git; "
        f'for f in {login} {SECRETS["codex login"]} {SECRETS["grok login"]}; do [ -e "$f" ] && echo "has $f"; done; true'
    )
    code, out = as_imd(box, in_view(script))
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == f"#!{layout.DOOR} stand-in:claude", out
    assert lines[1] == f"#!{layout.DOOR} stand-in:codex", out
    assert lines[2:] == ["0", f"#!{layout.DOOR} stand-in:git"], out
    # The twin: outside the view the same paths are the real programs.
    code, out = as_imd(box, f"head -c 4 {NPM_ROOT}/@anthropic-ai/claude-code/bin/claude.exe | od -c | head -n 1")
    assert "E   L   F" in out, out


def test_a_link_planted_in_the_view_never_reaches_the_home(box):
    """The CLIs' state folders are empty folders of the view's own, made first where they are
    missing: a link the worker plants there, for the owner's first login to be written through
    (`box shell`, /login), stays in the view. Outside it the folder holds no link."""
    state = f"{HOME}/.grok"
    plant = f"mkdir -p {state} && ln -s {HOME}/imdt-visible {state}/user-settings.json && echo planted"
    try:
        assert as_imd(box, f"[ ! -e {state} ] || mv {state} {state}.imdt")[0] == 0
        code, out = as_imd(box, in_view(plant))
        assert (code, out.strip()) == (0, "planted"), out
        code, out = as_imd(box, f"ls -A {state}; [ -d {state} ] && stat -c %a {state}")
        assert (code, out.split()) == (0, ["700"]), out
    finally:
        as_imd(box, f"rm -rf {state}; [ ! -e {state}.imdt ] || mv {state}.imdt {state}")


NAP = f"-c alias.nap={shlex.quote('!sleep 30')} nap"
NAPPING = "pgrep -f '^sleep 30$' >/dev/null"  # a call's nap has begun
# Shell that waits up to 5 s for a command to succeed.
WAIT_FOR = "for _ in $(seq 100); do {} && break; sleep 0.05; done; ".format


def test_the_view_cannot_reach_the_door_or_a_jail(box):
    """From the view, neither the door nor a job's jail can be read through /proc (the view's
    user namespace) or signalled (its Landlock domain). The twin reads and signals both from
    outside the view."""
    space = jobs.workspace()
    reach = (
        "door=$(pgrep -o -f '/door serve$'); nap=$(pgrep -n -f '^sleep 30$'); echo \"pids $door $nap\"; "
        "for p in $door $nap; do cat /proc/$p/environ >/dev/null 2>&1 && echo read || echo no-read; "
        "ls /proc/$p/root/ >/dev/null 2>&1 && echo root || echo no-root; "
        "kill -0 $p 2>/dev/null && echo signal || echo no-signal; done"
    )
    start = f"mkdir -p {space} && cd {space} && {{ git {NAP} & }} && sleep 1"
    try:
        code, out = as_imd(box, in_view(f"{start} && {reach}; kill %1"))
        assert code == 0, out
        assert out.splitlines()[1:] == ["no-read", "no-root", "no-signal"] * 2, out
        code, out = as_imd(box, f"{start} && {reach}; kill %1")
        assert out.splitlines()[1:] == ["read", "root", "signal"] * 2, out
    finally:
        as_imd(box, "pkill -f '^sleep 30$'; true")


@pytest.mark.parametrize("how", ["SIGKILL to its group", "SIGTERM to its group"])
def test_a_caller_that_ends_ends_its_jail(box, how):
    """The worker ends a run by its process group (SIGTERM, then SIGKILL 1 s later): the jail and
    everything in it end with the caller. How fast is printed."""
    space = jobs.workspace()
    sig = "KILL" if "KILL" in how else "TERM"
    script = (
        f"mkdir -p {space} && cd {space} && set -m && {{ git {NAP} & }} && "
        + WAIT_FOR(NAPPING)
        + f"started=$(date +%s%N); kill -{sig} -- -$!; "
        "while pgrep -f '^sleep 30$' >/dev/null; do sleep 0.005; done; echo gone $(( ($(date +%s%N) - started) / 1000000 ))"
    )
    try:
        code, out = as_imd(box, in_view(script), timeout=20)
    finally:
        as_imd(box, "pkill -f '^sleep 30$'; true")
    found = re.search(r"gone (\d+)", out)
    assert code == 0 and found, out
    print(f"\n[door] the jail ended {found.group(1)} ms after {how}")
    assert int(found.group(1)) < 2000, out


def test_the_door_passes_stdio_and_exit_codes(box):
    space = jobs.workspace()
    script = (
        f"mkdir -p {space} && cd {space} && "
        "echo through-stdin | git -c alias.c='!cat' c && git -c alias.e='!echo to-stderr >&2' e 2>&1 >/dev/null; "
        "git -c alias.x='!exit 7' x; echo exit $?"
    )
    code, out = as_imd(box, in_view(script))
    assert (code, out.splitlines()) == (0, ["through-stdin", "to-stderr", "exit 7"]), out


def test_a_door_that_dies_starts_again(box):
    """Killed (from outside the view: nothing inside may signal it), the door starts again at
    once; a call that comes while it is down fails in one line."""
    space = jobs.workspace()
    calls = f"cd {space} && for i in $(seq 80); do git --version 2>&1 | head -n 1; sleep 0.02; done"
    server = "pgrep -P $(pgrep -o -f '/door serve$') -f '/door serve$'"
    script = (
        f"mkdir -p {space} && {{ {in_view(calls)} > {space}/calls & }} && sleep 1.2 && killed=$({server}) && "
        f'kill -KILL $killed && sleep 0.3 && echo "server $killed $({server})"; wait; cat {space}/calls'
    )
    code, out = as_imd(box, script)
    server, *lines = out.splitlines()
    _, killed, now = server.split()
    assert killed != now, out
    down = [line for line in lines if line.startswith("imd-box: git was not started: the box's door")]
    assert len(lines) == 80 and {*lines} - {*down} == {"git version 2.47.3"} and lines[-1] == "git version 2.47.3", out
    print(f"\n[door] {len(down)} of {len(lines)} calls 20 ms apart failed while the door started again")


# --- the ready launcher -------------------------------------------------------------------------

READY = f"pgrep -f '^/bin/bash {layout.JAIL} --ready$'"
# The door, but each call gets a launcher of its own: the ready one is ended, as for Claude's.
NEVER_HANDED_OVER = (
    "    if (ready > 0 && strcmp(rq.rt->launcher, JAIL) == 0 && hand_over(ready_sock, &rq, env_fd) == 0) {\n",
    "    if (ready < 0 && strcmp(rq.rt->launcher, JAIL) == 0 && hand_over(ready_sock, &rq, env_fd) == 0) {\n",
)
# The door, but a call whose ready launcher is gone is not started.
NO_LAUNCHER_OF_ITS_OWN = (
    "        child = start_launcher(&rq, env_fd);\n    }\n",
    "        child = ready > 0 ? -1 : start_launcher(&rq, env_fd);\n    }\n",
)


def ready_launchers(box, space: str, before: str = ":") -> tuple[str, list[str], list[str]]:
    """The door's ready launcher around a git call that says its version and naps, in a node of its
    own (`before`: shell run first, outside the view): whether the one ready before the call
    ("none" if none) was "alive" or "gone" while the call ran, the ones ready after it but for
    that one, and the call's output."""
    # The door's own client, as a stand-in is: a view's start would take the ready one first (its
    # `door ping` is a call's connection too).
    call = f"cd {space} && {layout.DOOR} call git -c alias.nap={shlex.quote('!git --version && sleep 30')} nap"
    script = (
        # The door runs once a view has started it, and makes a launcher ready.
        f"mkdir -p {space}; ({in_view(':')}); {WAIT_FOR(READY + ' >/dev/null')}"
        f"{before}; sleep 0.2; was=$({READY}); {{ {call} > {space}/out 2>&1 & }}; "
        + WAIT_FOR(NAPPING)
        + 'if [ -z "$was" ]; then echo none; elif kill -0 $was 2>/dev/null; then echo alive $was; else echo gone; fi; '
        + WAIT_FOR(f'[ -n "$({READY} | grep -vx "${{was:-none}}")" ]')
        + f'echo $({READY}); pkill -f "^sleep 30$"; wait; cat {space}/out'
    )
    code, out = as_imd(box, script)
    assert code == 0, out
    state, after, *lines = out.splitlines()
    state, *was = state.split()
    return state, [pid for pid in after.split() if pid not in was], lines


def test_a_jail_call_is_taken_by_the_launcher_made_before_it(box):
    """The door starts the jail's launcher before a call comes (worker/door/ready.h): that one
    runs the next git call (it lives while the call does), and another waits after it."""
    state, after, out = ready_launchers(box, f"{jobs.workspace()}/node")
    assert (state, len(after), out[:1]) == ("alive", 1, ["git version 2.47.3"]), (state, after, out)


def test_a_call_whose_ready_launcher_is_gone_gets_one_of_its_own(box):
    """The ready launcher killed (from outside the view), the next call starts a launcher of its
    own, as before there was a ready one; it runs, and a new one waits after it."""
    state, after, out = ready_launchers(box, f"{jobs.workspace()}/node", before=f"kill -KILL $({READY})")
    assert (state, len(after), out[:1]) == ("none", 1, ["git version 2.47.3"]), (state, after, out)


@pytest.mark.parametrize("twin", ["never handed over", "no launcher of its own"])
def test_twin_the_ready_launcher(docker_client, box_image, topology, test_volume, tmp_path, twin):
    """The two tests above fail on a door that ends every ready launcher, and on one that starts no
    launcher of its own where the ready one is gone."""
    patch = door_with(tmp_path, NEVER_HANDED_OVER if twin == "never handed over" else NO_LAUNCHER_OF_ITS_OWN)
    with patched_image(docker_client, box_image, patch) as image:
        twin_box = boxes.start_walled(docker_client, image, topology, volume=test_volume)
        try:
            space = f"{jobs.workspace()}/node"
            if twin == "never handed over":
                state, after, out = ready_launchers(twin_box, space)
                assert (state, len(after), out[:1]) == ("gone", 1, ["git version 2.47.3"]), (state, after, out)
            else:
                state, after, out = ready_launchers(twin_box, space, before=f"kill -KILL $({READY})")
                assert state == "none" and "git version 2.47.3" not in out, (state, after, out)
        finally:
            twin_box.remove(force=True)


# --- slow senders at the door's slot limit ------------------------------------------------------

# A caller that sends its request a byte at a time: in the worker's view, with the worker's powers
# (its own program in its home). Node cannot send descriptors, so it is C, built by this
# machine's gcc (the image has none; static, so no libc of this machine's is needed in the box).
SLOW_SENDERS_C = r"""
/* slow N SECONDS SOCKET DONE: N callers of the door at SOCKET, each sending a call's header at once
 * (its length, 1 MiB, and three descriptors), then one byte every 4 s; a caller the door lets go
 * calls again at once. It ends after SECONDS, or once the file DONE is there. Prints "callers K",
 * the most connected at once. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int caller(const char *path) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    if (s < 0) return -1;
    if (connect(s, (struct sockaddr *)&addr, sizeof addr) < 0) {
        close(s);
        return -1;
    }
    uint32_t len = 1 << 20;
    int fds[3] = {0, 1, 2};
    char control[CMSG_SPACE(sizeof fds)] = {0};
    struct iovec iov = {.iov_base = &len, .iov_len = sizeof len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cm), fds, sizeof fds);
    if (sendmsg(s, &msg, MSG_NOSIGNAL) != sizeof len) {
        close(s);
        return -1;
    }
    return s;
}

int main(int argc, char **argv) {
    if (argc != 5) return 64;
    int n = atoi(argv[1]), open = 0, most = 0;
    long end = now() + atol(argv[2]) * 1000;
    struct pollfd *p = calloc((size_t)n, sizeof *p);
    long *next = calloc((size_t)n, sizeof *next);
    for (int i = 0; i < n; i++) p[i].fd = -1;
    while (now() < end && access(argv[4], F_OK) != 0) {
        open = 0;
        for (int i = 0; i < n; i++) {
            if (p[i].fd < 0) {
                p[i].fd = caller(argv[3]);
                p[i].events = POLLRDHUP;
                next[i] = now() + 4000;
            } else if (now() >= next[i]) {
                next[i] = now() + 4000;
                if (send(p[i].fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) {
                    close(p[i].fd);
                    p[i].fd = -1;
                }
            }
            open += p[i].fd >= 0;
        }
        if (open > most) most = open;
        if (poll(p, (nfds_t)n, 100) > 0)
            for (int i = 0; i < n; i++)
                if (p[i].fd >= 0 && p[i].revents) {
                    close(p[i].fd);
                    p[i].fd = -1;
                }
    }
    printf("callers %d\n", most);
    return 0;
}
"""
SLOW_SENDERS = f"{HOME}/imdt-slow-senders"
# Made once the probes are done: the flood ends there, not at FLOOD_SECONDS (the good door's
# probes take some 15 s of the 60).
FLOOD_DONE = f"{HOME}/imdt-slow-senders.done"
# The door's call slots (door.c MAX_CALLS), its queue (listen's 64) full, and more waiting for room.
CALLERS = 400
FLOOD_SECONDS = 60  # past every probe, the twin's timeouts too


def slow_senders(folder: Path) -> bytes:
    (folder / "slow.c").write_text(SLOW_SENDERS_C)
    build = ["gcc", "-O2", "-static", "-Wall", "-Werror", "-o", str(folder / "slow"), str(folder / "slow.c")]
    subprocess.run(build, check=True)
    return (folder / "slow").read_bytes()


def timed(name: str, seconds: int, command: str) -> str:
    """`command` given `seconds`; its line: NAME EXIT-CODE MILLISECONDS."""
    return (
        f"s=$(date +%s%N); timeout {seconds} {command} >/dev/null 2>&1; c=$?; "
        f'echo "{name} $c $(( ($(date +%s%N) - s) / 1000000 ))"'
    )


def held_up_by_slow_senders(client, image, topology, volume, folder: Path) -> list[str]:
    """A walled box whose worker keeps CALLERS slow senders at the door (each let go calls
    again); eight seconds in: `door ping` (the health check's), the view's start (what `box
    status`, `box seats` and the worker's start wait on first) and a call through the door. What
    the slow senders held up; empty when nothing."""
    # In the worker's home, the volume (the box's root is read-only): put there before it starts.
    staging = client.containers.create(
        image, command=["true"], volumes={volume: {"bind": HOME}}, labels={"imd-test": "1"}
    )
    try:
        put_files(staging, {SLOW_SENDERS: slow_senders(folder)})
    finally:
        staging.remove(force=True)
    box = boxes.start_walled(client, image, topology, volume=volume)
    try:
        space = jobs.workspace()
        assert as_imd(box, in_view(f"mkdir -p {space} && git --version"))[0] == 0  # the door is up
        flood: dict = {}
        script = (
            f"rm -f {FLOOD_DONE}; {SLOW_SENDERS} {CALLERS} {FLOOD_SECONDS} {layout.DOOR_DIR}/door.sock {FLOOD_DONE}"
        )
        senders = threading.Thread(target=lambda: flood.update(out=as_imd(box, in_view(script), timeout=90)))
        senders.start()
        probes = [
            "sleep 8",
            timed("ping", 10, f"{layout.DOOR} ping"),
            timed("view", 10, f"{layout.WORKER_VIEW} /bin/true"),
            timed("call", 20, f"{layout.WORKER_VIEW} /bin/bash -c {shlex.quote(f'cd {space} && git --version')}"),
        ]
        code, out = as_imd(box, "; ".join(probes) + f"; touch {FLOOD_DONE}", timeout=60)
        senders.join(90)
    finally:
        box.remove(force=True)
    print(f"\n[door] {CALLERS} slow senders ({flood.get('out')}): {' | '.join(out.splitlines())}")
    assert int(flood["out"][1].split("callers ")[1].split()[0]) >= 256, flood
    took = {name: (int(c), int(ms)) for name, c, ms in (line.split() for line in out.splitlines())}
    harm = []
    if took["ping"][0] not in (0, 75) or took["ping"][1] > 2000:
        harm.append(f"door ping ended {took['ping'][0]} after {took['ping'][1]} ms")
    if took["view"][0] != 0 or took["view"][1] > 2000:
        harm.append(f"the view's start ended {took['view'][0]} after {took['view'][1]} ms")
    if took["call"][0] != 0:
        harm.append(f"a call ended {took['call'][0]} after {took['call'][1]} ms")
    return harm


def test_slow_senders_at_the_slot_limit_hold_nothing_up(docker_client, box_image, topology, test_volume, tmp_path):
    assert held_up_by_slow_senders(docker_client, box_image, topology, test_volume, tmp_path) == []


def test_twin_a_door_that_times_each_read(docker_client, box_image, topology, test_volume, tmp_path):
    # The door before the fix: REQUEST_MS for each read, so a byte every 4 s holds a call slot
    # for good, and a `door ping` that waits on a full queue as long as it stays full.
    patch = door_with(
        tmp_path,
        ("        long left = deadline - ms_now();\n", "        long left = REQUEST_MS;\n"),
        ("        int s = connect_door(SOCK_NONBLOCK);\n", "        int s = connect_door(0);\n"),
    )
    with patched_image(docker_client, box_image, patch) as image:
        harm = held_up_by_slow_senders(docker_client, image, topology, test_volume, tmp_path)
    assert any(h.startswith("door ping") for h in harm) and any(h.startswith("a call") for h in harm), harm
