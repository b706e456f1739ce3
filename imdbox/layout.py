"""Where things are inside the box image, and the box's other fixed facts, written once: the
Dockerfile puts them there, and every command box runs in a box names them by these absolute
paths (root never resolves a bare name, HACKING.md). tests/unit/test_browser_unit.py and the image
tests hold the Dockerfile to them. What the box's other languages need of them is generated
from here by scripts/write-facts.py: worker/paths (bash), worker/door/paths.h (C) and
worker/facts.json (the login broker's JavaScript); tests/unit/test_protocol_unit.py holds each
to what the script writes now."""

from .names import HOME

LIB = "/usr/local/lib/imd-box"  # the repo's worker/, browser/ and firewall/ folders
# What every command box runs in a box gets as PATH: the image's own directories.
# Root never looks in the volume; worker/as-imd gives `imd` its own PATH after the drop.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The worker's places in its volume: the jobs' working directories, and its npm prefix.
WORK_ROOT = f"{HOME}/.identitymd/work"
NPM_PREFIX = f"{HOME}/.npm-global"
# The agent CLIs' npm scopes in the prefix, each with the runtime it holds.
CLIS = (("@anthropic-ai", "claude"), ("@openai", "codex"), ("@vibe-kit", "grok"))
WORKER_DIR = f"{LIB}/worker"
BROWSER_DIR = f"{LIB}/browser"
# V8's compiled code for the browser's MCP server and the sandbox runtime, made by the build
# (browser/playwright-mcp; box check's srt).
NODE_COMPILE_CACHE = f"{LIB}/node-compile-cache"
# The /dev of the worker's hands' jails (worker/jail.d/home), made by the build: four of the
# box's devices and /dev's links, bound in whole.
HANDS_DEV = f"{LIB}/hands-dev"
AS_IMD = f"{WORKER_DIR}/as-imd"  # the one privilege drop
FIREWALL = f"{LIB}/firewall/init-firewall.sh"  # the walls, which the entrypoint sets
INSTALL_SH = f"{WORKER_DIR}/install.sh"
HEALTHY = f"{WORKER_DIR}/healthy"  # the image's HEALTHCHECK
# The Claude Code and the Codex the worker runs (as-imd names them in IDENTITYMD_CLAUDE_BIN
# and IDENTITYMD_CODEX_BIN): the real ones, each run in a jail of its job's own (JAIL);
# and the bubblewrap Claude's sandbox runs each command with.
JAIL = f"{WORKER_DIR}/jail"
JAIL_ROOMS = f"{WORKER_DIR}/jail.d"  # the parts it is made of, each one job (sourced)
# bash's loadable builtins (Debian's bash-builtins): the jail's stat and rm, no process each.
BASH_LOADABLES = "/usr/lib/bash"
CLAUDE_JAIL = f"{WORKER_DIR}/claude"
CODEX_JAIL = f"{WORKER_DIR}/codex"
SANDBOX_BWRAP = f"{WORKER_DIR}/bwrap"
# The worker's view of the box (its CLI runs, and its git and forge, go through the door, a
# process outside it): the image's CMD runs the worker in it, and box the worker's commands.
WORKER_VIEW = f"{WORKER_DIR}/door/view"
DOOR = f"{WORKER_DIR}/door/door"
# Bash's `take`, with which the door's ready launcher takes its call (worker/door/ready.h).
DOOR_TAKE = f"{WORKER_DIR}/door/take"
# The box's own folders (worker/paths says why there): a tmpfs of imd's (runflags.TMPFS) outside
# every place the worker may name, hidden in every jail and the worker's view.
OWN_DIR = "/run/imd-box-own"
DOOR_DIR = f"{OWN_DIR}/door"  # the door's socket's folder (read-only in the view)
DOOR_SOCKET = f"{DOOR_DIR}/door.sock"
# The launchers' records of the nodes, a job's network's pid file and the views' stand-ins.
RUNS = f"{OWN_DIR}/runs"
# The Claude login broker (worker/broker): its folder (the launchers' socket, the CA the jails
# trust), one of the box's own, and the port of its proxy in the box.
BROKER_DIR = f"{OWN_DIR}/broker"
CLAUDE_LOGIN = f"{HOME}/.claude/.credentials.json"  # the owner's, which it alone (and box shell) reads
BROKER_PORT = 47611  # its CONNECT proxy, for box shell
# TLS for Anthropic's login hosts, for the box's own programs (box check, the bench): each Claude run
# gets a port of its own, which its network has as 443 (worker/broker/broker.mjs).
BROKER_TLS_PORT = 47612
BROKER_ASK = f"{WORKER_DIR}/broker/ask"  # one request to it, on its control socket
BROKER = f"{WORKER_DIR}/broker/broker.mjs"
BROKER_START = f"{WORKER_DIR}/broker/start"  # it running, started once per box
# Where Claude Code sends its login: the hosts the broker serves, and nothing else.
BROKER_HOSTS = (
    "api.anthropic.com",
    "platform.claude.com",
    "console.anthropic.com",
    "mcp-proxy.anthropic.com",
    "claude.ai",
)
# What every token it mints for a run holds after `sk-ant-oat01-` / `sk-ant-ort01-`: how the broker
# and box check's probe tell its stand-in from a real login.
BROKER_SENTINEL = "imd-box-sentinel-"
# The box's own environment, which every program of the box outside the worker's view runs with.
OWN_ENV = f"{WORKER_DIR}/own.env"
# The paths the box's scripts share (sourced), which tests/unit/test_protocol_unit.py holds to these.
PATHS = f"{WORKER_DIR}/paths"
# `box shell`'s own commands, first on its PATH: the agent CLIs (each the real one from its
# package, never the worker's npm link) and the worker's `imd` (in its view).
OWNER_BIN = f"{WORKER_DIR}/owner"
# What `box shell` and the setup shell run (worker/owner/box-shell): the shell or command with the
# owner's own home (OWNER_HOME, which the worker's view and every jail hide), never the worker's.
OWNER_SHELL = f"{OWNER_BIN}/box-shell"
OWNER_HOME = f"{HOME}/.imd-box-owner"
# The git and forge the worker runs on a job's tree (first on its PATH): each in that job's jail.
HANDS_DIR = f"{WORKER_DIR}/hands"
# Their seccomp filter (seccomp/hands.py): nothing they run makes a link.
HANDS_FILTER = f"{WORKER_DIR}/hands.bpf"
# The worker's PATH: its hands first, then its own npm bin, then the image's (worker/as-imd).
WORKER_PATH = f"{HANDS_DIR}:{NPM_PREFIX}/bin:{SYSTEM_PATH}"
NODE = "/usr/local/bin/node"
# Claude Code's managed settings (image/claude-code/): its sandbox, the read jail.
CLAUDE_SETTINGS = "/etc/claude-code/managed-settings.json"
# Claude Code's sandbox library (@anthropic-ai/sandbox-runtime), a node script.
SANDBOX_RUNTIME = "/opt/sandbox-runtime/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js"
# The extra CA certificates a build was given (the Dockerfile's `COPY ca/`).
CA_DIR = "/usr/local/share/ca-certificates/imd-box"
# The firewall's tools: the entrypoint sets the rules with them, `box check` tries them as
# imd, and `box status` reads the rules' counters with them as root.
IPTABLES = "/usr/sbin/iptables"
IP6TABLES = "/usr/sbin/ip6tables"

# Every program of the box that runs outside the worker's view, next to the owner's logins: each
# runs with the box's own environment (OWN_ENV), none of its caller's; a new one joins here, and
# tests/unit/test_own_env_unit.py holds each to it. The rest of the box's programs run in the view
# (worker/run.sh and the worker), in a job's jail (worker/bwrap, the browser's launcher), or as
# root before the worker exists (the entrypoint, the firewall, as-imd: tests/world/test_planted.py).
OUTSIDE_VIEW = (
    CLAUDE_JAIL,
    JAIL,
    BROKER_START,
    BROKER_ASK,
    HEALTHY,
    CODEX_JAIL,
    WORKER_VIEW,
    DOOR,
    BROKER,
    INSTALL_SH,
)

# The special-purpose and private IPv4 ranges the worker must never reach, in the order the
# firewall refuses them (firewall/init-firewall.sh), each with the wall `box status` counts its
# refusals under (imdbox/refused.py). 240.0.0.0/4 includes the limited broadcast 255.255.255.255.
REFUSED_V4 = {
    "0.0.0.0/8": "reserved ranges",
    "10.0.0.0/8": "home network",
    "100.64.0.0/10": "Tailscale",
    "127.0.0.0/8": "reserved ranges",
    "169.254.0.0/16": "cloud metadata",
    "172.16.0.0/12": "home network",
    "192.0.0.0/24": "reserved ranges",
    "192.168.0.0/16": "home network",
    "198.18.0.0/15": "reserved ranges",
    "224.0.0.0/4": "multicast/broadcast",
    "240.0.0.0/4": "multicast/broadcast",
}
# The loopback range, which the firewall refuses on every device but the loopback's own.
LOOPBACK_V4 = "127.0.0.0/8"
# What the login broker's CONNECT proxy names "a private address" (worker/broker/broker.mjs why()):
# the refused ranges a network of one's own is on, and 0.0.0.0/8, which Linux takes as the box
# itself. A subset on purpose: the broker refuses every host but Anthropic's login hosts whatever
# this says, so the list only names the reason; the loopback is named apart ("the box's loopback"),
# and multicast and the reserved ranges are "not one of Anthropic's login hosts", as any other
# address. IPv6, which the firewall refuses whole: the unique local and link-local ranges, and
# the unspecified address.
BROKER_PRIVATE_V4 = tuple(
    net
    for net, wall in REFUSED_V4.items()
    if wall in ("home network", "Tailscale", "cloud metadata") or net == "0.0.0.0/8"
)
BROKER_PRIVATE_V6 = ("fc00::/7", "fe80::/10", "::/128")
