#!/bin/bash
# The image's CMD: runs the worker installed in the volume (by `box setup`) as
# `imd`, with the runtime(s) and concurrency saved in the volume.
set -euo pipefail

settings="$HOME/.imd-box/settings.env"
die() { echo "imd-box: $*; the worker was not started" >&2; exit 1; }
# The box command as the Mac names it for this box's seat (box sets it; plain `box` when
# this script runs outside a box).
box=${IMD_BOX_COMMAND:-box}
fix="run '$box runtime claude' (or '$box setup') on your Mac to write it again"
damaged() { die "$settings is damaged ($1): $fix"; }
shown() { local v=${1:0:24}; printf '%s' "${v//[^[:print:]]/?}"; } # a value from the file, for one line

command -v imd >/dev/null 2>&1 \
  || die "the worker (imd) is not installed in the volume: run '$box setup' first"

# The settings, read as strictly as box's own parser (imdbox/settings.py; the cases
# both are held to are tests/vectors/settings.json): exactly the keys RUNTIMES and
# CONCURRENCY, once each, lines ending in \n, nothing guessed. No file: the defaults.
runtimes=claude
concurrency=2
if [ -e "$settings" ]; then
  export LC_ALL=C
  size=$(wc -c <"$settings")
  [ "$(tr -d '\000' <"$settings" | wc -c)" = "$size" ] || damaged "it holds a NUL byte"
  seen=" "
  n=0
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    [ -n "$line" ] || continue
    [[ "$line" == *=* ]] || damaged "line $n has no '='"
    key=${line%%=*}
    value=${line#*=}
    case "$key" in
      RUNTIMES | CONCURRENCY) ;;
      *) damaged "line $n: unknown key '$(shown "$key")'" ;;
    esac
    [[ "$seen" != *" $key "* ]] || damaged "line $n: $key is given twice"
    seen="$seen$key "
    case "$key" in
      RUNTIMES) runtimes=$value ;;
      CONCURRENCY) concurrency=$value ;;
    esac
  done <"$settings"
  [[ "$seen" == *" RUNTIMES "* ]] || damaged "no RUNTIMES"
  [[ "$seen" == *" CONCURRENCY "* ]] || damaged "no CONCURRENCY"
  [[ "$runtimes" =~ ^[a-z]+(,[a-z]+)*$ ]] || damaged "bad RUNTIMES '$(shown "$runtimes")'"
  listed=" "
  for r in ${runtimes//,/ }; do
    case "$r" in
      claude | codex | grok) ;;
      *) damaged "unknown runtime '$r'" ;;
    esac
    [[ "$listed" != *" $r "* ]] || damaged "a runtime is named twice"
    listed="$listed$r "
  done
  [[ "$concurrency" =~ ^[1-4]$ ]] || damaged "bad CONCURRENCY '$(shown "$concurrency")', not 1 to 4"
  unset LC_ALL
fi

# A list reaches only a worker whose help takes one: its --runtime placeholder
# has a comma (`--runtime <id,...>`; imdbox/worker.py reads the help the same
# way). Released workers take one runtime (`--runtime <id>`) and exit at once on a list.
if [[ "$runtimes" == *,* ]]; then
  help=$(imd help 2>&1 || true)
  if ! grep -qE -- '^ *--runtime <[^>]*,' <<<"$help"; then
    die "the saved runtimes are '$runtimes', but this worker runs one runtime at a time: run '$box runtime ${runtimes%%,*}' (or another one of them)"
  fi
fi

echo "imd-box: starting the worker: imd start --auto-update --runtime $runtimes --concurrency $concurrency" >&2
# The worker runs as this script's child, so that when it dies its end is in the log
# (`box status` shows it as the last error): its exit code, or the signal that killed
# it. `docker stop`'s SIGTERM (from tini, PID 1) is passed on to it.
imd start --auto-update --runtime "$runtimes" --concurrency "$concurrency" &
worker=$!
stopping=""
# shellcheck disable=SC2329 # invoked by the traps below
pass_on() {
  stopping=$1
  kill -s "$1" "$worker" 2>/dev/null || true
}
trap 'pass_on TERM' TERM
trap 'pass_on INT' INT
while :; do
  code=0
  wait "$worker" || code=$?
  kill -0 "$worker" 2>/dev/null || break # else a signal cut the wait short: wait again
done
if [ -z "$stopping" ] && [ "$code" -ne 0 ]; then
  if [ "$code" -gt 128 ] && name=$(kill -l "$((code - 128))" 2>/dev/null); then
    echo "imd-box: the worker was killed by SIG$name (exit code $code)" >&2
  else
    echo "imd-box: the worker exited with code $code" >&2
  fi
fi
exit "$code"
