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

# A list reaches only a worker whose help takes one: its --runtime placeholder
# has a comma (`--runtime <id,...>`; imdbox/worker.py reads the help the same
# way). Released workers take one runtime (`--runtime <id>`) and exit at once on a list.
if [[ "$runtimes" == *,* ]]; then
  help=$(imd help 2>&1 || true)
  if ! grep -qE -- '^ *--runtime <[^>]*,' <<<"$help"; then
    die "the saved runtimes are '$runtimes', but this worker runs one runtime at a time: run 'box runtime ${runtimes%%,*}' (or another one of them)"
  fi
fi

echo "imd-box: starting the worker: imd start --auto-update --runtime $runtimes --concurrency $concurrency" >&2
exec imd start --auto-update --runtime "$runtimes" --concurrency "$concurrency"
