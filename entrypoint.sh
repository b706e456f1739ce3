#!/bin/bash
# PID 1: this runs as root, sets and verifies the walls, then becomes
# `imd` with every capability gone and execs the worker (or the command given,
# so setup, shell and check run behind exactly the same walls).
# Any failure exits non-zero before the command starts: fail closed.
set -euo pipefail

die() { echo "imd-box: $*; the worker was not started" >&2; exit 78; }

[ "$(id -u)" = 0 ] || die "the entrypoint must start as root (got uid $(id -u))"
[ $# -gt 0 ] || die "no command given"

/usr/local/lib/imd-box/firewall/init-firewall.sh || die "the firewall could not be set up"

# Drop to `imd` (worker/as-imd: no capabilities, no_new_privs, private umask).
# tini becomes PID 1 as `imd`: it reaps zombies and forwards `docker stop`'s
# SIGTERM to the worker, which a root PID 1 without CAP_KILL cannot do.
exec /usr/local/lib/imd-box/worker/as-imd /usr/bin/tini -- "$@"
