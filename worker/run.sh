#!/bin/bash
# The image's CMD: runs the worker installed in the volume (by `box setup`) as
# `imd`, with the runtime(s) and concurrency saved in the volume.
set -euo pipefail

settings="${HOME:-/home/imd}/.imd-box/settings.env"
die() { echo "imd-box: $*; the worker was not started" >&2; exit 1; }

command -v imd >/dev/null 2>&1 \
  || die "the worker (imd) is not installed in the volume: run 'box setup' first"

runtimes=claude
concurrency=2
if [ -f "$settings" ]; then
  while IFS='=' read -r key value; do
    case "$key" in
      RUNTIMES) runtimes=$value ;;
      CONCURRENCY) concurrency=$value ;;
    esac
  done <"$settings"
fi
[[ "$runtimes" =~ ^[a-z]+(,[a-z]+)*$ ]] || die "bad RUNTIMES in $settings: '$runtimes' (run 'box runtime claude')"
[[ "$concurrency" =~ ^[1-4]$ ]] || die "bad CONCURRENCY in $settings: '$concurrency' (1 to 4)"

echo "imd-box: starting the worker: imd start --auto-update --runtime $runtimes --concurrency $concurrency" >&2
exec imd start --auto-update --runtime "$runtimes" --concurrency "$concurrency"
