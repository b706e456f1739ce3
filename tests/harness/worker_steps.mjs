// The worker's own hands on a code task, as the released worker (Identity-md/worker
// dist/cli.js e86778a5, executeTask) does them before and after its agent CLI, written
// down once here (facts, not its code). It runs in the box as imd, where the worker runs.
//
// Before the agent, in the work root:
//   git clone --filter=blob:none --no-checkout <repo> <work>/<job>/<node> (cwd: the work
//   root), then in the workspace `checkout --detach <base>`; .git/info/exclude written
//   with the build's artifacts and the worker's own files (excludeBuildArtifacts);
//   `ls-files --stage -- .gitmodules`, and when that names any, `-c protocol.allow=never -c
//   protocol.https.allow=always submodule update --init --recursive`; each read written to
//   .imd/reads/<path> by mkdir -p of its folder and writeFile (no rm first, links followed).
// After the agent, in the workspace:
//   the findings files .imd-findings.json and .imd-responses.json read (readFile), then
//   unlinked; `rm -rf test/scratch/ .imd/reads/` (fs.rm); `forge config --json`; `forge fmt
//   <each changed .sol>` (from `git status --porcelain --untracked-files=all`, with
//   FOUNDRY_OFFLINE=true); the local checks `forge build`, then `forge test`, each output's
//   last 16,000 characters sent; then the package: `checkout -B imd-submission`, `add -A`,
//   `write-tree`, `diff --cached --name-only --no-renames <base>`, `commit-tree <tree> -p
//   <base> -m "imd <node>"`, `update-ref refs/heads/imd-submission <commit>`, `bundle create
//   <job>/<node>.bundle <base>..imd-submission` (beside the workspace), read and unlinked.
//   A repair pass writes the reads again, runs the agent, and repeats all of this.
// Environments: every git gets the worker's own environment (tools.env's keys copied in
// at start, applyToolsEnv) plus GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null,
// GIT_TERMINAL_PROMPT=0, GIT_ASKPASS=""; forge gets only PATH, HOME, LANG, LC_ALL, TMPDIR,
// TERM and SHELL of it, plus CI=1 and NO_COLOR=1. Both by bare name, through PATH.
//
// usage: node worker_steps.mjs before|after <workspace> <json: {repo, base, reads}>
// prints one line: `sent <json>`, what the worker would send (or hand back to the agent),
// and `ms`, how long its steps took.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const [phase, workspace, task] = [process.argv[2], process.argv[3], JSON.parse(process.argv[4] || "{}")];
const workRoot = path.join(os.homedir(), ".identitymd", "work");

// applyToolsEnv: tools.env's values into the worker's own environment.
try {
  for (const line of fs.readFileSync(path.join(os.homedir(), ".identitymd", "tools.env"), "utf8").split("\n")) {
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m && !process.env[m[1]]) process.env[m[1]] = m[2];
  }
} catch {}

const gitEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_TERMINAL_PROMPT: "0", GIT_ASKPASS: "" };
const EXCLUDED = [
  "out/", "cache/", "broadcast/", "artifacts/", "**/node_modules/", "**/.npm/", "**/.pnpm-store/", "**/.yarn/cache/",
  "**/.cache/", "**/.vite/", "**/.next/cache/", "test/scratch/", ".imd/reads/", ".imd-findings.json", ".imd-responses.json",
]; // prettier-ignore
const identity = ["-c", "user.name=IdentityMD Worker", "-c", "user.email=worker@identitymd.invalid"];
async function git(cwd, args) {
  try {
    return (await run("git", args, { cwd, env: gitEnv, maxBuffer: 32 << 20 })).stdout;
  } catch (e) {
    return `${e.stdout || ""}${e.stderr || ""}`;
  }
}
function forgeEnv(offline) {
  const env = { CI: "1", NO_COLOR: "1", ...(offline ? { FOUNDRY_OFFLINE: "true" } : {}) };
  for (const k of ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM", "SHELL"]) if (process.env[k]) env[k] = process.env[k];
  return env;
}
async function forge(args, offline = false) {
  try {
    const r = await run("forge", args, { cwd: workspace, env: forgeEnv(offline), maxBuffer: 8 << 20, timeout: 120000 });
    return { passed: true, output: r.stdout + r.stderr };
  } catch (e) {
    return { passed: false, output: `${e.stdout || ""}${e.stderr || ""}${e.code === "ENOENT" ? "forge: not found" : ""}` };
  }
}
// A read that cannot be written fails the task (the worker's materializeReads throws).
async function writeReads() {
  try {
    for (const [p, text] of Object.entries(task.reads || {})) {
      const target = path.join(workspace, p);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, text, "utf8");
    }
  } catch (e) {
    sent.readsFailed = e.code || String(e);
  }
}
const sent = {};
const started = performance.now(); // the steps' own time, for the bench
if (phase === "before") {
  sent.clone = await git(workRoot, ["clone", "--filter=blob:none", "--no-checkout", task.repo, workspace]);
  sent.checkout = await git(workspace, ["checkout", "--detach", task.base]);
  fs.writeFileSync(path.join(workspace, ".git", "info", "exclude"), `${EXCLUDED.join("\n")}\n`);
  if ((await git(workspace, ["ls-files", "--stage", "--", ".gitmodules"])).trim())
    sent.submodules = await git(workspace, ["-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "submodule", "update", "--init", "--recursive"]);
  await writeReads();
} else {
  for (const f of [".imd-findings.json", ".imd-responses.json"]) {
    try {
      sent[f] = fs.readFileSync(path.join(workspace, f), "utf8");
      fs.unlinkSync(path.join(workspace, f));
    } catch {}
  }
  for (const d of ["test/scratch/", ".imd/reads/"]) fs.rmSync(path.join(workspace, d), { recursive: true, force: true });
  sent.config = (await forge(["config", "--json"])).output;
  const changed = (await git(workspace, ["status", "--porcelain", "--untracked-files=all"]))
    .split("\n")
    .map((l) => l.slice(3).split(" -> ").at(-1))
    .filter((f) => f.endsWith(".sol"));
  if (changed.length) sent.fmt = (await forge(["fmt", ...changed], true)).output;
  sent.localChecks = [];
  for (const name of ["build", "test"]) {
    const r = await forge([name]);
    sent.localChecks.push({ name, passed: r.passed, output: r.output.slice(-16000) });
    if (!r.passed) break;
  }
  await git(workspace, ["checkout", "-B", "imd-submission"]);
  await git(workspace, [...identity, "add", "-A"]);
  const tree = (await git(workspace, ["write-tree"])).trim();
  sent.changed = (await git(workspace, ["diff", "--cached", "--name-only", "--no-renames", task.base])).split("\n").filter(Boolean);
  const node = path.basename(workspace);
  const commit = (await git(workspace, [...identity, "commit-tree", tree, "-p", task.base, "-m", `imd ${node}`])).trim();
  await git(workspace, ["update-ref", "refs/heads/imd-submission", commit]);
  const bundle = path.join(workspace, "..", `${node}.bundle`);
  sent.bundleCreate = await git(workspace, ["bundle", "create", bundle, `${task.base}..imd-submission`]);
  // What the bundle carries: every file of the submitted commit, as text.
  sent.bundled = await git(workspace, ["grep", "-I", "-h", "-e", "", commit]);
  sent.bundleBytes = fs.existsSync(bundle) ? fs.statSync(bundle).size : 0;
  fs.rmSync(bundle, { force: true });
  await writeReads(); // the repair pass writes them again before its agent
}
sent.ms = performance.now() - started;
console.log(`sent ${JSON.stringify(sent)}`);
