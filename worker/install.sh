#!/bin/bash
# Runs as `imd` inside a one-off box with the worker's own walls (started by
# `box setup`, `box update` and `box runtime`). Everything lands in the volume:
#   install.sh worker   the worker release (verified), then the browser offered to it,
#                       then the worker's help passed on to box
#   install.sh agents   the agent CLIs, the Grok CLI's key if handed in, the settings
# Which runtimes the worker can run is decided by `box` (from the worker's own
# help) between the two.
#
# Environment (set by `box`):
#   IMD_WORKER_URL        where identitymd-worker.tgz, SHA256SUMS, build.json live
#   IMD_BOX_RUNTIMES      comma list: claude, codex, grok
#   IMD_BOX_CONCURRENCY   1..4
#   IMD_CLAUDE_PACKAGE, IMD_CODEX_PACKAGE, IMD_GROK_PACKAGE   npm specs (tests: a fake)
#   IMD_BOX_BROWSER_MCP   the browser's stdio MCP command (an absolute path)
#   IMD_BOX_BROWSER_TOOLS the MCP methods the worker may call, space separated
#   IMD_BOX_GROK_KEY_FILE a file box put into this box, holding the Grok CLI's
#                         API key (only the path is in the environment)
#   IMD_BOX_SOLC_VERSIONS the compilers to keep (agents, for setup and update): versions,
#                         or a line such as 0.8 for its newest release, space separated
#   IMD_BOX_SOLC_URL      where svm's release lists live (<url>/<platform>/list.json)
#   IMD_BOX_VIEW          what runs the worker's own commands in its view (worker/door/view)
set -euo pipefail

mode=${1:-}
# box hands every setting in (imdbox/settings.py and install.py decide the defaults):
# nothing is guessed here.
base=${IMD_WORKER_URL:-}
runtimes=${IMD_BOX_RUNTIMES:?IMD_BOX_RUNTIMES is set by box}
concurrency=${IMD_BOX_CONCURRENCY:?IMD_BOX_CONCURRENCY is set by box}
view=${IMD_BOX_VIEW:?IMD_BOX_VIEW is set by box}
state="$HOME/.imd-box"
asset=identitymd-worker.tgz
worker_pkg=@identitymd/worker

say() { echo "imd-box: $*"; }
# A failure on a full volume says so, whatever step hit it (curl, npm and tar
# each word ENOSPC their own way). The staging folder is still there then, so a
# nearly full volume is seen before the clean-up frees it.
volume_full() {
  local avail
  avail=$(df -Pk "$HOME" 2>/dev/null | awk 'NR == 2 {print $4}')
  [ -n "$avail" ] && [ "$avail" -lt 1024 ]
}
die() {
  if volume_full; then
    echo "imd-box: FAILED: the volume is full (no space left on device) while: $*; nothing installed was changed" >&2
  else
    echo "imd-box: FAILED: $*" >&2
  fi
  exit 1
}

# Installs are atomic: everything is downloaded, verified and installed into a
# staging folder in the volume (same filesystem), then swapped in by rename.
# A failure, a full volume or an interrupt (box sends SIGTERM on Ctrl-C) removes
# the staging folder; one left by a SIGKILL is removed by the next run.
stage=
child=
tools_home= # curl's and npm's own home (below)
cleanup() {
  if [ -n "$stage" ]; then rm -rf "$stage"; fi
  stage=
}
on_signal() {
  if [ -n "$child" ]; then kill "$child" 2>/dev/null || true; fi
  cleanup
  echo "imd-box: interrupted; nothing installed was changed" >&2
  exit 143
}
trap 'cleanup; [ -z "$tools_home" ] || rm -rf -- "$tools_home"' EXIT
trap on_signal TERM INT
# A long step runs in the background so that a signal is handled at once
# (bash runs a trap only after a foreground command ends).
bg() {
  local rc=0
  "$@" &
  child=$!
  wait "$child" || rc=$?
  child=
  return "$rc"
}
new_stage() {
  cleanup
  stage=$(mktemp -d "$state/.staging.XXXXXX")
}

[[ "$runtimes" =~ ^[a-z]+(,[a-z]+)*$ ]] || die "bad runtime list '$runtimes'"
[[ "$concurrency" =~ ^[1-4]$ ]] || die "concurrency must be 1 to 4, not '$concurrency'"
case "$mode" in worker | agents) ;; *) die "unknown mode '$mode' (worker | agents)" ;; esac

export NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
# This box holds the owner's logins, and the home is the worker's to write: npm reads no ~/.npmrc
# here (its script-shell or node-options would run the worker's code), and the worker's own
# commands run in its view (IMD_BOX_VIEW), as in its own box. The worker's release runs no install
# script (--ignore-scripts: it needs none; its own updates install it so too).
export NPM_CONFIG_USERCONFIG=/dev/null NPM_CONFIG_GLOBALCONFIG=/nonexistent/npmrc
# Nor do curl and npm take anything else from the volume but what they install into: curl reads no
# configuration (-q, first: the worker's ~/.curlrc named the login as a download's source), and
# each runs with a home and npm a cache of this box's own, new at each run, in this box's /tmp
# (the volume's ~/.npm is the worker's: an entry it rewrote would install its package here).
tools_home=$(mktemp -d /tmp/imd-box-install.XXXXXX)
export NPM_CONFIG_CACHE=$tools_home/npm-cache
curl() { HOME=$tools_home command curl -q "$@"; }
npm() { HOME=$tools_home command npm "$@"; }
mkdir -p "$NPM_CONFIG_PREFIX" "$IDENTITYMD_HOME" "$state"
# The worker's config holds its private device key: only imd may look inside
# (also for a volume set up before the box made everything private).
chmod 700 "$IDENTITYMD_HOME" "$state"
rm -rf "$state"/.staging.* "$state"/settings.env.tmp # left by a run that was killed
npm_global() { npm "$@" --global --loglevel=error --no-progress; }

# Where npm keeps a global package: a folder is all that says it is installed (asking
# `npm ls` costs a node start, and calls a broken install not installed).
package_dir() { echo "$NPM_CONFIG_PREFIX/lib/node_modules/$1"; }

# npm installs <spec> into the staging prefix; the package's folder is then
# exchanged with the installed one in one rename (renameat2 RENAME_EXCHANGE),
# and each of its bin links is replaced by a rename. Until that moment the
# installed package is untouched.
npm_swap() { # <package name> <spec> [npm option...]
  local name=$1 spec=$2 live link bin
  live=$(package_dir "$1")
  bg npm install --global --prefix "$stage/prefix" --loglevel=error --no-progress "${@:3}" "$spec" || return 1
  [ -d "$stage/prefix/lib/node_modules/$name" ] || { echo "the package is not $name" >&2; return 1; }
  mkdir -p "$(dirname "$live")" "$NPM_CONFIG_PREFIX/bin"
  if [ ! -e "$live" ]; then
    mv -T "$stage/prefix/lib/node_modules/$name" "$live"
  elif ! mv --exchange -T "$stage/prefix/lib/node_modules/$name" "$live" 2>/dev/null; then
    mv -T "$live" "$stage/old" && mv -T "$stage/prefix/lib/node_modules/$name" "$live"
  fi
  for link in "$stage/prefix/bin/"*; do
    [ -L "$link" ] || continue
    bin=$(basename "$link")
    cp -P "$link" "$NPM_CONFIG_PREFIX/bin/.$bin.new"
    mv -T "$NPM_CONFIG_PREFIX/bin/.$bin.new" "$NPM_CONFIG_PREFIX/bin/$bin"
  done
}

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
  local expected actual
  new_stage
  [ -n "$base" ] || die "IMD_WORKER_URL is set by box"
  say "downloading the worker release from $base"
  for f in "$asset" SHA256SUMS build.json; do
    # curl says its error at every try: its last word goes in the one line that fails.
    bg curl -fsSL --retry 2 --connect-timeout 20 -o "$stage/$f" "$base/$f" 2>"$stage/.curl-said" \
      || die "could not download $base/$f ($(tail -n 1 "$stage/.curl-said" | sed -E 's/^curl: (\([0-9]+\) )?//')); the installed worker (if any) is unchanged"
  done
  expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f {print $1; exit}' "$stage/SHA256SUMS")
  [ -n "$expected" ] || die "SHA256SUMS has no line for $asset; refusing to install (the installed worker, if any, is unchanged)"
  actual=$(sha256sum "$stage/$asset" | awk '{print $1}')
  if [ "$expected" != "$actual" ]; then
    die "checksum mismatch for $asset: SHA256SUMS says $expected, the download is $actual; refusing to install (the installed worker, if any, is unchanged)"
  fi
  say "checksum verified: $asset sha256 $actual"
  # A release cut short before its sums were made passes the checksum: read it whole first.
  tar -tzf "$stage/$asset" >/dev/null 2>&1 \
    || die "the release's $asset is not a whole archive (cut off or damaged); refusing to install (the installed worker, if any, is unchanged)"
  npm_swap "$worker_pkg" "$stage/$asset" --ignore-scripts || die "npm could not install the worker (the installed worker, if any, is unchanged)"
  mv -T "$stage/build.json" "$state/worker-build.json"
  command -v imd >/dev/null || die "the worker installed but 'imd' is not on PATH"
  cleanup
  # The worker has no --version: line 1 of its help names it,
  # `imd — IdentityMD contributor daemon (v<daemonVersion>)`, as build.json does.
  local version
  help_code=0
  worker_help=$("$view" imd help 2>&1) || help_code=$? # offer_browser is given it too, and box (pass_on_help)
  version=$(sed -n '1s/.*(v\([^()]*\))$/\1/p' <<<"$worker_help")
  say "worker installed: ${version:-?} (the release's build.json: daemonVersion $(build_field daemonVersion "$state/worker-build.json"), sourceCommit $(build_field sourceCommit "$state/worker-build.json"))"
}

# The help as it was read, for box to read the worker's runtimes from (imdbox/worker.py,
# HELP_LINE and HELP_EXIT): box asks no box of its own for it.
pass_on_help() {
  local line
  while IFS= read -r line; do
    printf 'imd-box: help| %s\n' "$line"
  done <<<"$worker_help"
  echo "imd-box: help exit $help_code"
}

build_field() {
  node -e 'const v = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]]; console.log(v ?? "?")' \
    "$2" "$1" 2>/dev/null || echo '?'
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
      new_stage
      npm_swap "$pkg" "$(spec_of "$known")" || die "npm could not install $(spec_of "$known") (the installed $known CLI, if any, is unchanged)"
      cleanup
    elif [ -d "$(package_dir "$pkg")" ]; then
      say "removing the $known CLI ($pkg): $known is no longer a runtime"
      npm_global uninstall "$pkg" || die "npm could not remove $pkg"
    fi
  done
}

# The worker offers a tool (a stdio MCP server) when its probe, the command with
# --version, exits 0 within 5 s. The same id again replaces the entry.
offer_browser() { # <the worker's help, as install_worker read it>
  [ -n "${IMD_BOX_BROWSER_MCP:-}" ] || return 0
  local help=$1 method
  local -a enable=()
  if ! grep -qF 'imd tools add <id> --command' <<<"$help"; then
    say "browser: this worker has no 'imd tools add <id> --command', so the box's browser is not offered to it (a newer worker has it)"
    return 0
  fi
  for method in ${IMD_BOX_BROWSER_TOOLS:-}; do
    enable+=(--enable "$method")
  done
  [ ${#enable[@]} -gt 0 ] || die "no browser methods to enable (IMD_BOX_BROWSER_TOOLS is empty)"
  "$view" imd tools add browser --command "$IMD_BOX_BROWSER_MCP" "${enable[@]}" \
    || die "the worker refused 'imd tools add browser' (its message is above)"
  say "browser: offered to the worker as the tool 'browser' ($IMD_BOX_BROWSER_MCP, $(( ${#enable[@]} / 2 )) methods)"
}

# Where @vibe-kit/grok-cli reads its key when GROK_API_KEY is unset: "apiKey" in
# ~/.grok/user-settings.json. node moves it from the handed-in file into the
# settings: the key is never an argument, and never printed.
store_grok_key() {
  local staged=${IMD_BOX_GROK_KEY_FILE:-}
  [ -n "$staged" ] || return 0
  [ -f "$staged" ] || die "the Grok CLI's key was not handed in ($staged is missing)"
  mkdir -p "$HOME/.grok"
  chmod 700 "$HOME/.grok"
  node - "$staged" "$HOME/.grok/user-settings.json" <<'JS' || die "could not store the Grok CLI's key"
const fs = require("fs");
const [staged, target] = process.argv.slice(2);
let settings = {};
try {
  settings = JSON.parse(fs.readFileSync(target, "utf8"));
} catch {}
settings.apiKey = fs.readFileSync(staged, "utf8").trim();
fs.writeFileSync(`${target}.tmp`, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
fs.chmodSync(`${target}.tmp`, 0o600);
fs.renameSync(`${target}.tmp`, target);
JS
  rm -f "$staged"
  say "grok: the API key is stored in ~/.grok/user-settings.json (imd's alone), where the Grok CLI reads it"
}

# The compilers contract jobs pin, where forge keeps those it downloads (svm:
# ~/.svm/<v>/solc-<v>), verified as svm verifies a download: the sha256 its release list
# gives the build. Every job's jail sees them read-only (worker/jail.d/home), the box's own
# record of them ($state/compilers) is what `box status` lists. One that cannot be fetched
# or verified is said and not kept: a job then downloads its own, as without it.
keep_compilers() {
  local platform url=${IMD_BOX_SOLC_URL:-} version artifact sum actual target kept=()
  case "$(uname -m)" in
    x86_64) platform=linux-amd64 ;;
    *)
      say "compilers: none kept on $(uname -m) (svm's release list is linux-amd64's): a job downloads its own"
      return 0
      ;;
  esac
  [ -n "$url" ] || die "IMD_BOX_SOLC_URL is set by box"
  new_stage
  if ! bg curl -fsSL --retry 2 --connect-timeout 20 -o "$stage/list.json" "$url/$platform/list.json"; then
    say "compilers: could not download $url/$platform/list.json: none kept, a job downloads its own ('box update' tries again)"
    cleanup
    return 0
  fi
  # Each wanted version as "<version> <artifact> <sha256>" from the list ("-" where it has none).
  node - "$stage/list.json" "$IMD_BOX_SOLC_VERSIONS" >"$stage/wanted" <<'JS' || { say "compilers: the release list is not svm's list.json: none kept"; cleanup; return 0; }
const fs = require("fs");
const [list, wanted] = process.argv.slice(2);
const { builds = [], releases = {} } = JSON.parse(fs.readFileSync(list, "utf8"));
const parts = (v) => v.split(".").map(Number);
const newer = (a, b) => { const [x, y] = [parts(a), parts(b)]; for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] > y[i]; return false; };
for (const want of wanted.split(/\s+/).filter(Boolean)) {
  let v = releases[want] ? want : null;
  for (const r of Object.keys(releases)) if (/^\d+\.\d+\.\d+$/.test(r) && r.startsWith(`${want}.`) && (!v || newer(r, v))) v = r;
  const build = v && builds.find((b) => b.path === releases[v]);
  console.log(v && build ? `${v} ${build.path} ${String(build.sha256).replace(/^0x/, "")}` : `${want} - -`);
}
JS
  while read -r version artifact sum; do
    if [[ ! "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ || ! "$artifact" =~ ^[A-Za-z0-9._+-]+$ || ! "$sum" =~ ^[0-9a-f]{64}$ ]]; then
      say "compilers: the release list has no build of solc ${version//[^0-9.]/?}: not kept"
      continue
    fi
    target=$HOME/.svm/$version/solc-$version
    actual=
    [ ! -f "$target" ] || actual=$(sha256sum "$target" | awk '{print $1}')
    if [ "$actual" != "$sum" ]; then
      if ! bg curl -fsSL --retry 2 --connect-timeout 20 -o "$stage/solc-$version" "$url/$platform/$artifact"; then
        say "compilers: could not download solc $version ($url/$platform/$artifact): not kept"
        continue
      fi
      actual=$(sha256sum "$stage/solc-$version" | awk '{print $1}')
      if [ "$actual" != "$sum" ]; then
        say "compilers: REFUSED solc $version: the release list gives sha256 $sum, the download is $actual; not kept"
        # Nor one kept before, which the list no longer vouches for.
        rm -f -- "$target" && rmdir -- "${target%/*}" 2>/dev/null || true
        continue
      fi
      chmod 755 "$stage/solc-$version"
      mkdir -p "${target%/*}"
      mv -T "$stage/solc-$version" "$target"
    fi
    say "compilers: solc $version kept in ~/.svm for every job (sha256 $sum, as the release list gives it)"
    kept+=("$version")
  done <"$stage/wanted"
  { printf '%s\n' "${kept[@]}" >"$state/compilers.tmp" && mv "$state/compilers.tmp" "$state/compilers"; } ||
    { rm -f "$state/compilers.tmp"; die "could not note the compilers kept in ~/.svm"; }
  cleanup
}

save_settings() {
  printf 'RUNTIMES=%s\nCONCURRENCY=%s\n' "$runtimes" "$concurrency" >"$state/settings.env.tmp" \
    || { rm -f "$state/settings.env.tmp"; die "could not save the settings (they are as they were)"; }
  mv "$state/settings.env.tmp" "$state/settings.env"
  say "saved: runtime(s) $runtimes, concurrency $concurrency"
}

if [ "$mode" = worker ]; then
  install_worker
  offer_browser "$worker_help"
  pass_on_help
else
  install_agents
  store_grok_key
  save_settings
  [ -z "${IMD_BOX_SOLC_VERSIONS:-}" ] || keep_compilers
fi
say "install done"
