"""Where things are inside the box image: the Dockerfile puts them there, and every
command box runs in a box names them by these absolute paths (root never resolves a
bare name, HACKING.md). tests/test_browser_unit.py and the image tests hold the
Dockerfile to them."""

from .names import HOME

LIB = "/usr/local/lib/imd-box"  # the repo's worker/, browser/ and firewall/ folders
WORKER_DIR = f"{LIB}/worker"
BROWSER_DIR = f"{LIB}/browser"
# V8's compiled code for the browser's MCP server, made by the build (browser/playwright-mcp).
NODE_COMPILE_CACHE = f"{LIB}/node-compile-cache"
AS_IMD = f"{WORKER_DIR}/as-imd"  # the one privilege drop
FIREWALL = f"{LIB}/firewall/init-firewall.sh"  # the walls, which the entrypoint sets
INSTALL_SH = f"{WORKER_DIR}/install.sh"
# The Claude Code and the Codex the worker runs (as-imd names them in IDENTITYMD_CLAUDE_BIN
# and IDENTITYMD_CODEX_BIN): the real ones, each run in a jail of its job's own (JAIL);
# and the bubblewrap Claude's sandbox runs each command with.
JAIL = f"{WORKER_DIR}/jail"
JAIL_ROOMS = f"{WORKER_DIR}/jail.d"  # the parts it is made of, each one job (sourced)
CLAUDE_JAIL = f"{WORKER_DIR}/claude"
CODEX_JAIL = f"{WORKER_DIR}/codex"
SANDBOX_BWRAP = f"{WORKER_DIR}/bwrap"
# The worker's view of the box (its CLI runs, and its git and forge, go through the door, a
# process outside it): the image's CMD runs the worker in it, and box the worker's commands.
WORKER_VIEW = f"{WORKER_DIR}/door/view"
DOOR = f"{WORKER_DIR}/door/door"
# The box's own folders (worker/paths says why there): a tmpfs of imd's (runflags.TMPFS) outside
# every place the worker may name, hidden in every jail and the worker's view.
OWN_DIR = "/run/imd-box-own"
DOOR_DIR = f"{OWN_DIR}/door"  # the door's socket's folder (read-only in the view)
# The launchers' marks of a node's runs, a job's network's pipes and the views' stand-ins.
RUNS = f"{OWN_DIR}/runs"
# The Claude login broker (worker/broker): its folder (the launchers' socket, the CA the jails
# trust), one of the box's own, and the port of its proxy in the box.
BROKER_DIR = f"{OWN_DIR}/broker"
CLAUDE_LOGIN = f"{HOME}/.claude/.credentials.json"  # the owner's, which it alone (and box shell) reads
BROKER_PORT = 47611  # its CONNECT proxy, for box shell
BROKER_TLS_PORT = 47612  # TLS for Anthropic's login hosts, forwarded into a Claude job's network as 443
BROKER_ASK = f"{WORKER_DIR}/broker/ask"  # one request to it, on its control socket
BROKER = f"{WORKER_DIR}/broker/broker.mjs"
BROKER_START = f"{WORKER_DIR}/broker/start"  # it running, started once per box
# The box's own environment, which every program of the box outside the worker's view runs with.
OWN_ENV = f"{WORKER_DIR}/own.env"
# The paths the box's scripts share (sourced), which tests/test_protocol_unit.py holds to these.
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
