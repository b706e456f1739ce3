#!/bin/bash
# PID 1: this runs as root, sets and verifies the walls, then becomes
# `imd` with every capability gone and execs the worker (or the command given,
# so setup, shell and check run behind exactly the same walls).
# Any failure exits non-zero before the command starts: fail closed.
#
# Root resolves commands only from the image's own system directories (the
# volume is imd's: anything there may be planted); every step is named by path.
set -euo pipefail
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# shellcheck source=worker/paths
. /usr/local/lib/imd-box/worker/paths

die() { echo "imd-box: $*; the worker was not started" >&2; exit 78; }

[ "$EUID" = 0 ] || die "the entrypoint must start as root (got uid $EUID)"
[ $# -gt 0 ] || die "no command given"

"$FIREWALL" || die "the firewall could not be set up"
# For the HEALTHCHECK (worker/healthy): the walls were verified in this start.
# /run is a fresh root-owned tmpfs each start; imd can read the marker, never write it.
/usr/bin/install -d -m 755 /run/imd-box
echo "verified" >/run/imd-box/walls-verified

# The TUN device (the run flags'), which Docker makes root's alone: `imd` opens it for each
# job's own network (worker/jail), as most distributions ship it.
[ ! -c /dev/net/tun ] || /usr/bin/chmod 0666 /dev/net/tun || die "/dev/net/tun could not be opened to imd"

# The box's log (this process's stdout and stderr, which tini keeps as PID 1): the box's own
# programs that outlive the command that started them (the door, the login broker) write there
# by /proc/1/fd/2. Docker's pipes are root's, 0600; root owns them, so it may open them to imd's
# writes. Nothing in the worker's view or a job's jail reaches /proc/1/fd (a user namespace of
# its own).
for log in "/proc/$$/fd/1" "/proc/$$/fd/2"; do
  [ ! -p "$log" ] || /usr/bin/chmod 0622 "$log" || die "the box's log could not be opened to imd"
done

# Drop to `imd` (worker/as-imd: no capabilities, no_new_privs, private umask).
# tini becomes PID 1 as `imd`: it reaps zombies and forwards `docker stop`'s
# SIGTERM to the worker, which a root PID 1 without CAP_KILL cannot do.
exec "$AS_IMD" /usr/bin/tini -- "$@"
