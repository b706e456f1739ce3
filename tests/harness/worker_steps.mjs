// The worker's own hands on each kind of job it takes, as the released worker (Identity-md/worker
// dist/cli.js fd511610: executeTask, answerQuestion) does them around its agent CLI, written
// down once here (facts, not its code). It runs in the box as imd, where the worker runs.
//
// A code task, before the agent:
//   the workspace <work>/<job>/<node> removed and made again (clearWorkspace, mkdir -p). An
//   empty repository (the task's repoUrl is the network's empty-repository mark): in the
//   workspace `git init --initial-branch=main --object-format=sha1`, then `git -c
//   commit.gpgsign=false commit --allow-empty -m "Empty workspace"`, then `rev-parse HEAD`,
//   which must be the task's base commit (a fixed author, committer and date make it one
//   commit everywhere). Any other: `clone --filter=blob:none --no-checkout <repo> <workspace>`
//   (cwd: the work root), then in the workspace `checkout --detach <base>`.
//   .git/info/exclude written with the build's artifacts and the worker's own files.
//   Accepted dependencies (the baseline's bundles, then the task's): each bundle's bytes,
//   fetched from the network and hash-checked, written beside the workspace as
//   <job>/dep<i>-<first 16 hex of its sha256>.bundle, `fetch <that path>
//   +refs/heads/*:refs/remotes/dep<i>/*`, the file unlinked, `for-each-ref
//   --format=%(objectname) refs/remotes/dep<i>` (its first line is the head); then `checkout
//   --detach <head 0>`, `merge --no-edit -m "imd: combine accepted dependencies" <the other
//   heads>` when there are more, and `update-ref -d refs/remotes/dep<i>/head` for each.
//   `rev-parse HEAD^{tree}`. Prior work (the node's own accepted bundle) the same way as
//   remote "prior", then `checkout --detach <head>` alone, or with dependencies `merge
//   --no-edit -m "imd: reapply this node's accepted work" <head>`. `ls-files --stage --
//   .gitmodules`, and when that names any, `-c protocol.allow=never -c
//   protocol.<p>.allow=always submodule update --init --recursive` for each p of
//   $IDENTITYMD_SUBMODULE_PROTOCOLS (else https). Each read written to .imd/reads/<path>
//   (mkdir -p, writeFile); each task input's bytes to .imd/reads/artifacts/<name>, each
//   folder made one by one and refused if a link, the file created exclusively (wx, 0600).
//   `rev-parse HEAD` is the start commit; each named output must not be tracked there
//   (`cat-file -e <start>:<path>` fails). A foundry task: `forge config --json` (preflight).
// After the agent, in the workspace:
//   .imd-findings.json read and unlinked, and with prior work .imd-responses.json; `rm -rf
//   test/scratch/ .imd/reads/`. A review: `checkout -- .`, and nothing is bundled (the
//   findings are what it sends). Otherwise, a foundry task: `forge config --json`, `forge fmt
//   <each changed .sol>` (from `status --porcelain --untracked-files=all`), `forge build`,
//   then `forge test`, each output's last 16,000 characters sent; each named output described
//   (no link on its path, inside the workspace, a file: its size and sha256); then the
//   package: `checkout -B imd-submission`, `add -A`, `update-index --force-remove -- <each
//   output's path>`, `write-tree`, `diff --cached --name-only --no-renames <start>`,
//   `commit-tree <tree> -p <start> -m "imd <node>"`, `update-ref refs/heads/imd-submission
//   <commit>`, `bundle create <job>/<node>.bundle <base>..imd-submission` (beside the
//   workspace), read and unlinked; each output's file uploaded, then unlinked. A repair pass
//   writes the reads and inputs again, runs the agent, and repeats all of this.
// Environments: every git gets the worker's own environment (tools.env's keys copied in at
//   start) plus GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null, GIT_TERMINAL_PROMPT=0,
//   GIT_ASKPASS=""; the empty repository's git and every forge get only PATH, HOME, LANG,
//   LC_ALL, TMPDIR, TERM and SHELL of it, plus CI=1 and NO_COLOR=1, and FOUNDRY_OFFLINE=true
//   but for `forge build` and `forge test`. Both by bare name, through PATH.
// A research task: the agent runs in the work root itself (tests/harness/jobs.py); its final
//   message ends with a fenced json block {"citations": [{url, quote}]}, of which those whose
//   URL starts with "http" and whose quote is not empty are kept. The worker fetches each
//   itself (Node's fetch, redirects followed, 20 s), keeps the first 2 Mi characters of the
//   text of an answer that is ok, strips its markup, and keeps the citation when the page,
//   whitespace folded and lower-cased, holds the quote so folded: {url, sha256 of the
//   stripped page, the quote's first 2,000 characters}. The rest are named under the answer.
//
// usage: node worker_steps.mjs before|after|research <workspace> <json: the task>
//   task: {repo ("empty" for an empty repository), base, reads: {path: text}, deps and prior:
//   paths of the bundles the network sends, inputs: {name: text}, outputs: [{name, path}],
//   role, profile ("foundry" or "none"), start: the start commit `before` sent}; research:
//   {final: the agent's final message}.
// prints one line: `sent <json>`, what the worker would send (or hand back to the agent),
// and `ms`, how long its steps took.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const [phase, workspace, task] = [process.argv[2], process.argv[3], JSON.parse(process.argv[4] || "{}")];
const workRoot = path.join(os.homedir(), ".identitymd", "work");
const sha256 = (data) => createHash("sha256").update(data).digest("hex");

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
const EMPTY_ENV = {
  GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1", GIT_AUTHOR_NAME: "IdentityMD",
  GIT_AUTHOR_EMAIL: "workspace@identitymd.invalid", GIT_COMMITTER_NAME: "IdentityMD",
  GIT_COMMITTER_EMAIL: "workspace@identitymd.invalid", GIT_AUTHOR_DATE: "2000-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2000-01-01T00:00:00Z",
}; // prettier-ignore
// Every step's output, in order, for a report when one fails.
const log = [];
async function git(cwd, args) {
  try {
    const out = (await run("git", args, { cwd, env: gitEnv, maxBuffer: 32 << 20 })).stdout;
    log.push({ cwd, args, ok: true });
    return out;
  } catch (e) {
    log.push({ cwd, args, ok: false, output: `${e.stdout || ""}${e.stderr || ""}` });
    return `${e.stdout || ""}${e.stderr || ""}`;
  }
}
const ok = () => log.at(-1).ok;
// The worker's exec: the scrubbed environment, and FOUNDRY_OFFLINE=true unless asked not to.
function scrubbed(extra, offline) {
  const env = { CI: "1", NO_COLOR: "1", ...(offline ? { FOUNDRY_OFFLINE: "true" } : {}) };
  for (const k of ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM", "SHELL"]) if (process.env[k]) env[k] = process.env[k];
  return { ...env, ...extra };
}
async function exec(program, args, { extra = {}, offline = true } = {}) {
  try {
    const opts = { cwd: workspace, env: scrubbed(extra, offline), maxBuffer: 8 << 20, timeout: 120000 };
    const r = await run(program, args, opts);
    log.push({ cwd: workspace, args: [program, ...args], ok: true });
    return { passed: true, output: r.stdout + r.stderr };
  } catch (e) {
    const output = `${e.stdout || ""}${e.stderr || ""}${e.code === "ENOENT" ? `${program}: not found` : ""}`;
    log.push({ cwd: workspace, args: [program, ...args], ok: false, output });
    return { passed: false, output };
  }
}
const forge = (args, offline = true) => exec("forge", args, { offline });
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
// materializeArtifact: the task's inputs under .imd/reads/artifacts, no folder a link, no file overwritten.
async function writeInputs() {
  try {
    for (const [name, text] of Object.entries(task.inputs || {})) {
      let parent = fs.realpathSync(workspace);
      for (const part of [".imd", "reads", "artifacts"]) {
        parent = path.resolve(parent, part);
        try {
          fs.mkdirSync(parent);
        } catch (e) {
          if (e.code !== "EEXIST") throw e;
        }
        const st = fs.lstatSync(parent);
        if (!st.isDirectory() || st.isSymbolicLink()) throw new Error(`unsafe artifact directory: ${parent}`);
      }
      fs.writeFileSync(path.resolve(parent, name), text, { flag: "wx", mode: 0o600 });
    }
  } catch (e) {
    sent.inputsFailed = e.code || String(e);
  }
}
// fetchDependency: the bundle the network sent, beside the workspace under the worker's name, fetched.
async function fetchBundle(file, remote) {
  const bytes = fs.readFileSync(file);
  const beside = path.join(workspace, "..", `${remote}-${sha256(bytes).slice(0, 16)}.bundle`);
  fs.writeFileSync(beside, bytes);
  await git(workspace, ["fetch", beside, `+refs/heads/*:refs/remotes/${remote}/*`]);
  const fetched = ok();
  fs.rmSync(beside, { force: true });
  if (!fetched) return null;
  return (await git(workspace, ["for-each-ref", "--format=%(objectname)", `refs/remotes/${remote}`])).split("\n")[0] || null;
}
function failed(reason) {
  sent.failed = reason;
  sent.log = log;
}
// describeArtifact: an output's size and hash, no link on its way, inside the workspace.
function describe(output) {
  const root = fs.realpathSync(workspace);
  let current = root;
  for (const part of output.path.split("/")) {
    current = path.resolve(current, part);
    if (fs.lstatSync(current).isSymbolicLink()) throw new Error(`artifact is a symbolic link: ${output.path}`);
  }
  if (!fs.realpathSync(current).startsWith(root + path.sep)) throw new Error("artifact escapes workspace");
  const data = fs.readFileSync(current);
  return { ...output, bytes: data.length, hash: sha256(data), text: data.toString("utf8") };
}
const sent = {};
const started = performance.now(); // the steps' own time, for the bench
let looking = 0; // the time this stand-in spent looking at what it made, not the worker's
if (phase === "before") {
  fs.rmSync(workspace, { recursive: true, force: true });
  fs.mkdirSync(workspace, { recursive: true });
  if (task.repo === "empty") {
    await exec("git", ["init", "--initial-branch=main", "--object-format=sha1"], { extra: EMPTY_ENV });
    await exec("git", ["-c", "commit.gpgsign=false", "commit", "--allow-empty", "-m", "Empty workspace"], { extra: EMPTY_ENV });
    sent.empty = (await exec("git", ["rev-parse", "HEAD"], { extra: EMPTY_ENV })).output.trim();
    if (sent.empty !== task.base) failed("clone_failed: empty workspace commit mismatch");
  } else {
    sent.clone = await git(workRoot, ["clone", "--filter=blob:none", "--no-checkout", task.repo, workspace]);
    sent.checkout = await git(workspace, ["checkout", "--detach", task.base]);
    if (!ok()) failed("clone_failed: base commit unavailable");
  }
  fs.writeFileSync(path.join(workspace, ".git", "info", "exclude"), `${EXCLUDED.join("\n")}\n`);
  const deps = task.deps || [];
  const heads = [];
  for (const [i, file] of deps.entries()) heads.push(await fetchBundle(file, `dep${i}`));
  if (heads.includes(null)) failed("clone_failed: dependency did not apply");
  else if (heads.length) {
    await git(workspace, ["checkout", "--detach", heads[0]]);
    if (!ok()) failed("clone_failed: dependency checkout failed");
    if (heads.length > 1) {
      await git(workspace, [...identity, "merge", "--no-edit", "-m", "imd: combine accepted dependencies", ...heads.slice(1)]);
      if (!ok()) failed("clone_failed: accepted dependencies conflict");
    }
    for (const i of deps.keys()) await git(workspace, ["update-ref", "-d", `refs/remotes/dep${i}/head`]);
  }
  sent.tierTree = (await git(workspace, ["rev-parse", "HEAD^{tree}"])).trim();
  if (task.prior) {
    const head = await fetchBundle(task.prior, "prior");
    if (!head) failed("clone_failed: could not restore accepted work");
    else if (deps.length) {
      await git(workspace, [...identity, "merge", "--no-edit", "-m", "imd: reapply this node's accepted work", head]);
      if (!ok()) failed("clone_failed: accepted work conflicts with a dependency");
    } else {
      await git(workspace, ["checkout", "--detach", head]);
      if (!ok()) failed("clone_failed: accepted work would not check out");
    }
  }
  if ((await git(workspace, ["ls-files", "--stage", "--", ".gitmodules"])).trim()) {
    const protocols = (process.env.IDENTITYMD_SUBMODULE_PROTOCOLS ?? "https").split(",");
    const policy = ["-c", "protocol.allow=never", ...protocols.flatMap((p) => ["-c", `protocol.${p.trim()}.allow=always`])];
    sent.submodules = await git(workspace, [...policy, "submodule", "update", "--init", "--recursive"]);
    if (!ok()) failed("clone_failed: submodules did not fetch");
  }
  await writeReads();
  await writeInputs();
  sent.start = (await git(workspace, ["rev-parse", "HEAD"])).trim();
  for (const output of task.outputs || []) {
    await git(workspace, ["cat-file", "-e", `${sent.start}:${output.path}`]);
    if (ok()) failed(`path_violation: named output would overwrite a tracked file: ${output.path}`);
  }
  if ((task.profile || "foundry") === "foundry") sent.preflight = (await forge(["config", "--json"])).passed;
} else if (phase === "after") {
  const start = task.start || task.base;
  for (const f of [".imd-findings.json", ...(task.prior ? [".imd-responses.json"] : [])]) {
    try {
      sent[f] = fs.readFileSync(path.join(workspace, f), "utf8");
      fs.unlinkSync(path.join(workspace, f));
    } catch {}
  }
  for (const d of ["test/scratch/", ".imd/reads/"]) fs.rmSync(path.join(workspace, d), { recursive: true, force: true });
  if (task.role === "review") {
    sent.review = await git(workspace, ["checkout", "--", "."]);
  } else {
    const foundry = (task.profile || "foundry") === "foundry";
    sent.localChecks = [];
    if (foundry) {
      sent.config = (await forge(["config", "--json"])).output;
      const changed = (await git(workspace, ["status", "--porcelain", "--untracked-files=all"]))
        .split("\n")
        .map((l) => l.slice(3).split(" -> ").at(-1))
        .filter((f) => f.endsWith(".sol"));
      if (changed.length) sent.fmt = (await forge(["fmt", ...changed])).output;
      for (const name of ["build", "test"]) {
        const r = await forge([name], false);
        sent.localChecks.push({ name, passed: r.passed, output: r.output.slice(-16000) });
        if (!r.passed) break;
      }
    }
    const artifacts = [];
    for (const output of task.outputs || []) {
      try {
        artifacts.push(describe(output));
      } catch (e) {
        sent.outputProblem = `${output.path}: ${e.message}`;
      }
    }
    await git(workspace, ["checkout", "-B", "imd-submission"]);
    await git(workspace, [...identity, "add", "-A"]);
    for (const output of task.outputs || []) await git(workspace, ["update-index", "--force-remove", "--", output.path]);
    const tree = (await git(workspace, ["write-tree"])).trim();
    sent.changed = (await git(workspace, ["diff", "--cached", "--name-only", "--no-renames", start])).split("\n").filter(Boolean);
    const node = path.basename(workspace);
    const commit = (await git(workspace, [...identity, "commit-tree", tree, "-p", start, "-m", `imd ${node}`])).trim();
    await git(workspace, ["update-ref", "refs/heads/imd-submission", commit]);
    const bundle = path.join(workspace, "..", `${node}.bundle`);
    sent.bundleCreate = await git(workspace, ["bundle", "create", bundle, `${task.base}..imd-submission`]);
    // What the bundle carries, for the tests: every file of the submitted commit, as text, and its commits.
    const looked = performance.now();
    sent.bundled = await git(workspace, ["grep", "-I", "-h", "-e", "", commit]);
    sent.bundledFiles = (await git(workspace, ["ls-tree", "-r", "--name-only", commit])).split("\n").filter(Boolean);
    sent.bundleCommits = (await git(workspace, ["rev-list", `${task.base}..${commit}`])).split("\n").filter(Boolean).length;
    sent.bundleBytes = fs.existsSync(bundle) ? fs.statSync(bundle).size : 0;
    looking += performance.now() - looked;
    fs.rmSync(bundle, { force: true });
    sent.artifacts = artifacts; // uploaded, then unlinked
    for (const a of artifacts) fs.rmSync(path.join(workspace, a.path), { force: true });
    await writeReads(); // the repair pass writes them again before its agent
    await writeInputs();
  }
} else if (phase === "research") {
  const block = /```json\s*(\{[\s\S]*?\})\s*```\s*$/.exec((task.final || "").trim());
  let claimed = [];
  try {
    claimed = (JSON.parse(block?.[1] ?? "{}").citations ?? [])
      .map((c) => ({ url: String(c.url ?? ""), quote: String(c.quote ?? "") }))
      .filter((c) => c.url.startsWith("http") && c.quote.length > 0);
  } catch {}
  sent.answer = block ? task.final.trim().slice(0, block.index).trim() : (task.final || "").trim();
  const fold = (text) => text.replace(/\s+/g, " ").trim().toLowerCase();
  const strip = (html) =>
    html.replace(/<script[\s\S]*?<\/script>/gi, " ").replace(/<style[\s\S]*?<\/style>/gi, " ").replace(/<[^>]+>/g, " ")
      .replace(/&nbsp;/g, " ").replace(/&amp;/g, "&").replace(/&quot;/g, '"').replace(/&#39;/g, "'")
      .replace(/&lt;/g, "<").replace(/&gt;/g, ">"); // prettier-ignore
  sent.citations = [];
  sent.dropped = [];
  for (const claim of claimed) {
    let body;
    try {
      const accept = "text/html,text/plain,application/json;q=0.9,*/*;q=0.8";
      const response = await fetch(claim.url, { redirect: "follow", signal: AbortSignal.timeout(20000), headers: { accept } });
      if (!response.ok) {
        sent.dropped.push({ url: claim.url, why: "did not return a page" });
        continue;
      }
      body = strip((await response.text()).slice(0, 2 * 1024 * 1024));
    } catch (e) {
      sent.dropped.push({ url: claim.url, why: `could not be read: ${e.message}` });
      continue;
    }
    if (!fold(body).includes(fold(claim.quote))) sent.dropped.push({ url: claim.url, why: "does not contain the quoted text" });
    else sent.citations.push({ url: claim.url, contentHash: sha256(body), quote: claim.quote.slice(0, 2000) });
  }
}
sent.ms = performance.now() - started - looking;
console.log(`sent ${JSON.stringify(sent)}`);
