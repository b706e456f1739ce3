#!/bin/bash
# box check's probe (line 24), run in the worker's view (worker/door/view) in a job's node: every
# program a worker could start an agent CLI or a hand by (by name, the npm links and their
# realpath, every program of the CLIs' packages, the launchers, git and forge by path) must be a
# stand-in that calls the door; no login may be there (but the login broker's stand-in of
# Claude's); the door must be out of reach (its /proc, the view's user namespace; its signals,
# Landlock); and the worker's git must run in a job's jail, where the canary in the home is not.
# Its arguments: the door, the canary, the CLIs' packages' root, the login broker's stand-in
# token, then the programs to look at. Shipped as text (imdbox/check/bundle.py).
door=$1 canary=$2 root=$3 sentinel=$4
shift 4
seen=0
look() {
  local first=
  IFS= read -r first <"$1" 2>/dev/null || true
  if [[ "$first" == "#!$door stand-in:"* ]]; then seen=$((seen + 1)); else echo "real $1"; fi
}
for name in claude codex grok git forge; do
  f=$(command -v "$name") || continue
  look "$f" && look "$(realpath "$f")"
done
while IFS= read -r -d '' f; do look "$f"; done < <(find "$root"/@anthropic-ai "$root"/@openai "$root"/@vibe-kit -type f -perm -u+x -print0 2>/dev/null)
for f in "$@"; do look "$f"; done
echo "stand-ins $seen"
[ -z "$(ls -A /usr/lib/git-core 2>/dev/null)" ] || echo "real /usr/lib/git-core"
# A Claude login there is the broker's stand-in, which it refuses (line 25), or a login.
for f in ~/.claude/.credentials.json ~/.codex/auth.json ~/.grok/user-settings.json; do
  [ -e "$f" ] || continue
  [ "$f" = ~/.claude/.credentials.json ] && grep -qF "\"accessToken\":\"$sentinel" "$f" && continue
  echo "login $f"
done
d=$(pgrep -o -f "^$door serve$") || d=
if [ -z "$d" ]; then echo "no door"; else
  ! cat "/proc/$d/environ" >/dev/null 2>&1 || echo "read the door"
  ! kill -0 "$d" 2>/dev/null || echo "signalled the door"
fi
echo "hand $(git -c alias.where="!if [ -e $canary ]; then echo unjailed; else echo jailed; fi" where 2>&1 | head -n 1)"
