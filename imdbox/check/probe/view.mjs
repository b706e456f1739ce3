// box check's probe, the worker's view (line 24): what the worker can run and read there.
// One script with the other parts when it runs (imdbox/check/runner.py probe_source).
import fs from "node:fs";
import path from "node:path";
import { tool, HOME, run, short, unusable } from "./base.mjs";
import { CANARY, CLAUDE_SENTINEL, makeCanary, makeDirs, secretPaths } from "./jail.mjs";

export const MADE_VIEW = [];

// Run in the worker's view (worker/door/view), in a job's node: every program a worker could
// start an agent CLI or a hand by (by name, the npm links and their realpath, every program of
// the CLIs' packages, the launchers, git and forge by path) must be a stand-in that calls the
// door; no login may be there (but the login broker's stand-in of Claude's); the door must be
// out of reach (its /proc, the view's user namespace; its signals, Landlock); and the worker's
// git must run in a job's jail, where the canary in the home is not.
const VIEW_SCRIPT = `
door=$1 canary=$2 root=$3; shift 3
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
  [ "$f" = ~/.claude/.credentials.json ] && grep -q '"accessToken":"${CLAUDE_SENTINEL}' "$f" && continue
  echo "login $f"
done
d=$(pgrep -o -f "^$door serve$") || d=
if [ -z "$d" ]; then echo "no door"; else
  ! cat "/proc/$d/environ" >/dev/null 2>&1 || echo "read the door"
  ! kill -0 "$d" 2>/dev/null || echo "signalled the door"
fi
echo "hand $(git -c alias.where="!if [ -e $canary ]; then echo unjailed; else echo jailed; fi" where 2>&1 | head -n 1)"
`;

export async function workerView() {
  for (const name of ["view", "door", "claude", "codex", "jail", "git", "forge"])
    if (!fs.existsSync(tool(name))) return { ok: false, detail: `${tool(name)} is missing from the box` };
  const p = secretPaths();
  const node = path.join(p.workRoot, `${CANARY}-view`, "node");
  const canary = path.join(HOME, `${CANARY}-view`);
  try {
    fs.rmSync(path.dirname(node), { recursive: true, force: true }); // a check cut off before its clean-up
    makeDirs(node, MADE_VIEW);
    makeCanary(canary, MADE_VIEW);
  } catch (e) {
    return { ok: false, detail: `cannot set up the test in ${HOME} (${e.code || e}): nothing proved` };
  }
  const root = path.join(HOME, ".npm-global", "lib", "node_modules");
  const paths = ["claude", "codex", "jail", "git", "forge"].map(tool);
  const r = await run(tool("view"), ["/bin/bash", "-c", VIEW_SCRIPT, "view", tool("door"), canary, root, ...paths], { cwd: node });
  const why = unusable("the worker's view", r);
  if (why) return { ok: false, detail: why };
  const lines = r.out.split("\n").filter(Boolean);
  const said = (kind) => lines.filter((l) => l.startsWith(`${kind} `)).map((l) => l.slice(kind.length + 1));
  const seen = Number(said("stand-ins")[0] || 0);
  const hand = said("hand")[0] || `nothing (exit ${r.code}: ${short(r.err, 80)})`;
  const wrong = [
    ...said("real").map((f) => `${f} is a real program there`),
    ...said("login").map((f) => `${f} is there`),
    ...(lines.includes("read the door") ? ["the door's /proc/<pid>/environ is readable there"] : []),
    ...(lines.includes("signalled the door") ? ["the door can be signalled from there (no Landlock)"] : []),
    ...(lines.includes("no door") ? ["no door is running"] : []),
    ...(hand === "jailed" ? [] : [`the worker's git ran ${hand === "unjailed" ? "outside a job's jail" : `as: ${short(hand, 80)}`}`]),
    ...(seen > 0 ? [] : [`no stand-in found (exit ${r.code}: ${short(r.err, 80)})`]),
  ];
  if (wrong.length) return { ok: false, detail: short(wrong.join("; "), 300) };
  return {
    ok: true,
    detail:
      `${seen} ways to start an agent CLI, git or forge all call the door; no login; ` +
      "the door's /proc and signals out of reach; the worker's git ran in a job's jail",
  };
}
