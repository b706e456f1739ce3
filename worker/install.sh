#!/bin/bash
# Runs as `imd` inside a one-off box with the worker's own walls (started by
# `box setup`, `box update` and `box runtime`). Everything lands in the volume:
#   install.sh all      the worker release (verified), the agent CLIs, the settings
#   install.sh agents   the agent CLIs and the settings only
#
# Environment (set by `box`):
#   IMD_WORKER_URL        where identitymd-worker.tgz, SHA256SUMS, build.json live
#   IMD_BOX_RUNTIMES      comma list: claude, codex, grok
#   IMD_BOX_CONCURRENCY   1..4
#   IMD_CLAUDE_PACKAGE, IMD_CODEX_PACKAGE, IMD_GROK_PACKAGE   npm specs (tests: a fake)
#   IMD_BOX_BROWSER_MCP   the browser's stdio MCP command, offered via `imd tools add`
set -euo pipefail

mode=${1:-all}
base=${IMD_WORKER_URL:-https://github.com/Identity-md/worker/releases/latest/download}
runtimes=${IMD_BOX_RUNTIMES:-claude}
concurrency=${IMD_BOX_CONCURRENCY:-2}
state="$HOME/.imd-box"
asset=identitymd-worker.tgz

say() { echo "imd-box: $*"; }
die() { echo "imd-box: FAILED: $*" >&2; exit 1; }

[[ "$runtimes" =~ ^[a-z]+(,[a-z]+)*$ ]] || die "bad runtime list '$runtimes'"
[[ "$concurrency" =~ ^[1-4]$ ]] || die "concurrency must be 1 to 4, not '$concurrency'"
case "$mode" in all | agents) ;; *) die "unknown mode '$mode' (all | agents)" ;; esac

export NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
mkdir -p "$NPM_CONFIG_PREFIX" "$IDENTITYMD_HOME" "$state"
# The worker's config holds its private device key: only imd may look inside
# (also for a volume set up before the box made everything private).
chmod 700 "$IDENTITYMD_HOME" "$state"
npm_global() { npm "$@" --global --loglevel=error --no-progress; }

# Each runtime's CLI: the npm package (name for uninstall) and the spec to install.
package_of() {
  case "$1" in
    claude) echo "@anthropic-ai/claude-code" ;;
    codex) echo "@openai/codex" ;;
    grok) echo "@vibe-kit/grok-cli" ;;
    *) return 1 ;;
  esac
}
spec_of() {
  case "$1" in
    claude) echo "${IMD_CLAUDE_PACKAGE:-@anthropic-ai/claude-code@latest}" ;;
    codex) echo "${IMD_CODEX_PACKAGE:-@openai/codex@latest}" ;;
    grok) echo "${IMD_GROK_PACKAGE:-@vibe-kit/grok-cli@latest}" ;;
  esac
}

install_worker() {
  local tmp expected actual
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  say "downloading the worker release from $base"
  for f in "$asset" SHA256SUMS build.json; do
    curl -fsSL --retry 2 --connect-timeout 20 -o "$tmp/$f" "$base/$f" \
      || die "could not download $base/$f; the installed worker (if any) is unchanged"
  done
  expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f {print $1; exit}' "$tmp/SHA256SUMS")
  [ -n "$expected" ] || die "SHA256SUMS has no line for $asset; refusing to install (the installed worker, if any, is unchanged)"
  actual=$(sha256sum "$tmp/$asset" | awk '{print $1}')
  if [ "$expected" != "$actual" ]; then
    die "checksum mismatch for $asset: SHA256SUMS says $expected, the download is $actual; refusing to install (the installed worker, if any, is unchanged)"
  fi
  say "checksum verified: $asset sha256 $actual"
  npm_global install "$tmp/$asset" || die "npm could not install the worker"
  cp "$tmp/build.json" "$state/worker-build.json"
  command -v imd >/dev/null || die "the worker installed but 'imd' is not on PATH"
  say "worker installed: $(imd --version 2>/dev/null || echo '?') ($(tr -d '\n' <"$tmp/build.json" | cut -c1-200))"
}

install_agents() {
  local r pkg known
  IFS=',' read -r -a wanted <<<"$runtimes"
  for r in "${wanted[@]}"; do
    package_of "$r" >/dev/null || die "unknown runtime '$r'"
  done
  for known in claude codex grok; do
    pkg=$(package_of "$known")
    if [[ ",$runtimes," == *",$known,"* ]]; then
      say "installing the $known CLI: $(spec_of "$known")"
      npm_global install "$(spec_of "$known")" || die "npm could not install $(spec_of "$known")"
    elif npm ls --global --depth=0 "$pkg" >/dev/null 2>&1; then
      say "removing the $known CLI ($pkg): $known is no longer a runtime"
      npm_global uninstall "$pkg" || die "npm could not remove $pkg"
    fi
  done
}

offer_browser() {
  [ -n "${IMD_BOX_BROWSER_MCP:-}" ] || return 0
  # shellcheck disable=SC2206
  local cmd=($IMD_BOX_BROWSER_MCP)
  if imd help 2>&1 | grep -q 'tools add'; then
    imd tools add browser -- "${cmd[@]}" || die "'imd tools add browser' failed"
    say "browser: registered with the worker as the stdio MCP tool 'browser' (${cmd[*]})"
  else
    say "browser: this worker has no 'imd tools add', so the box's browser is not offered to it (update the worker to get it)"
  fi
}

save_settings() {
  printf 'RUNTIMES=%s\nCONCURRENCY=%s\n' "$runtimes" "$concurrency" >"$state/settings.env.tmp"
  mv "$state/settings.env.tmp" "$state/settings.env"
  say "saved: runtime(s) $runtimes, concurrency $concurrency"
}

if [ "$mode" = all ]; then
  install_worker
fi
install_agents
if [ "$mode" = all ]; then
  offer_browser
fi
save_settings
say "install done"
