// box check's probe, the read jail (line 16): in a job's jail, Claude's sandbox and Codex's read
// none of the home's secrets, Claude's own tools and its browser none but the login, and all of
// them the job's own workspace; a job's preview server is reached from its own run of the jail
// only; a job's repository makes Claude Code run nothing outside its sandbox.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { cfg, tool, HOME, TOOL_MS, MOST_TOOL_MS, CONNECT_MS, late, onlyLate, short, run, unusable } from "./base.mjs";
import { secretPaths, CANARY, MADE, makeCanary, cleanup, readRegular, claudeLogin, letLoginGo } from "./home.mjs";
import { inAJobsJail, inCodexsSandbox, startDriver } from "./jobs.mjs";
import { PREVIEW_SERVER, NET_CLIENT, READS, PAGE_HTML, PAGE_SCRIPT } from "./shipped.mjs";

const sha256 = (file) => createHash("sha256").update(readRegular(file)).digest("hex");
const digestOfBase64 = (b64) => createHash("sha256").update(Buffer.from(b64, "base64")).digest("hex");
// What a job's preview server answers every request with: who gets it reached the server.
const PREVIEW_TOKEN = randomBytes(8).toString("hex");

/** Claude Code's managed settings, and why they do not make a read jail (null when they do). */
function claudeSandboxSettings() {
  const file = cfg.claude_settings;
  let st, settings;
  try {
    st = fs.statSync(file);
    settings = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    return { file, why: `${file}: ${e.code || short(e.message, 80)}: Claude Code runs without managed settings` };
  }
  const sb = settings.sandbox || {};
  const why = [];
  if (st.uid !== 0 || st.mode & 0o022) why.push(`owned by uid ${st.uid}, mode ${(st.mode & 0o777).toString(8)} (imd could change it)`);
  if (sb.enabled !== true) why.push("sandbox.enabled is not true");
  if (sb.failIfUnavailable !== true) why.push("sandbox.failIfUnavailable is not true (Claude would run unsandboxed)");
  if (sb.allowUnsandboxedCommands !== false) why.push("sandbox.allowUnsandboxedCommands is not false");
  if (!Array.isArray(sb.filesystem?.denyRead)) why.push("no sandbox.filesystem.denyRead");
  return { file, sandbox: sb, why: why.length ? `${file}: ${why.join("; ")}` : null };
}

/** What the jail must not read (the real login, device key and tools.env, or a canary AT
 * each path when it does not exist yet), a canary in another job's workspace (`other`) and one in the
 * home itself (the jail is the whole home, not a list of files), and the workspace of the job
 * the jail runs for, which it must read: srt runs in it, as Claude Code runs a job's command. */
function jailTargets(made) {
  const p = secretPaths();
  const secrets = [[claudeLogin(p.claudeLogin) === "canary" ? "the Claude login (canary)" : "the Claude login", p.claudeLogin]];
  for (const [label, file] of [
    ["the Codex login", p.codexLogin],
    ["the device key", p.deviceKey],
    ["tools.env", p.toolsEnv],
  ]) {
    if (fs.existsSync(file)) {
      secrets.push([label, file]);
      continue;
    }
    makeCanary(file, made);
    secrets.push([`${label} (canary)`, file]);
  }
  const other = path.join(p.workRoot, `${CANARY}-other`);
  for (const [label, file] of [
    ["another job's workspace", path.join(other, "file")],
    ["the rest of the home", path.join(HOME, CANARY)],
  ]) {
    makeCanary(file, made);
    secrets.push([label, file]);
  }
  const workspace = path.join(p.workRoot, CANARY);
  const work = path.join(workspace, "file");
  makeCanary(work, made);
  return { secrets, work, workspace, other };
}

/** A job's repository configuring Claude Code, for line 16: project settings in the workspace
 * with a hook and a helper command, each of which would leave a file there, and the volume's
 * Claude Code started on it as the worker starts it (worker/claude). Its model is a stand-in on
 * the box's loopback that refuses every request, so no request leaves the box and no login is
 * used. What ran ([] when neither did), and how many requests Claude Code made. */
async function repositorySettings(workspace) {
  // One name for every check, and no transcript kept: the jail makes Claude Code a folder of
  // transcripts in the home for each working directory, which would pile up, one a check.
  const dir = path.join(workspace, ".imd-box-check-repo");
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir);
  const ran = (what) => `echo ran > ${path.join(dir, what)}`;
  fs.mkdirSync(path.join(dir, ".claude"));
  const settings = {
    hooks: { SessionStart: [{ hooks: [{ type: "command", command: ran("hook") }] }] },
    apiKeyHelper: ran("helper"),
  };
  fs.writeFileSync(path.join(dir, ".claude", "settings.json"), JSON.stringify(settings));
  let asked = 0;
  const model = http.createServer((q, r) => {
    asked++;
    q.resume();
    r.writeHead(400, { "content-type": "application/json" });
    r.end(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: "imd-box check: no model here" } }));
  });
  await new Promise((r) => model.listen(0, "127.0.0.1", r));
  try {
    const env = {
      ...process.env,
      HOME,
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${model.address().port}`,
      ANTHROPIC_API_KEY: "imd-box-check",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      NO_COLOR: "1",
    };
    // Claude Code is the heaviest program the probe starts (a jail, its login from the broker,
    // a binary of hundreds of MB): on a machine busy with jobs, twice a tool's time.
    const r = await run("claude", ["-p", "imd-box check", "--max-turns", "1", "--output-format", "stream-json", "--verbose", "--no-session-persistence"], { cwd: dir, env, timeout: 2 * TOOL_MS });
    return { r, asked, ran: ["hook", "helper"].filter((what) => fs.existsSync(path.join(dir, what))) };
  } finally {
    model.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The worker's own read of each file and of the job's workspace: the control, so that the
 * jail's refusal means something. {digest} (file -> its sha256), or {why} nothing is proved. */
function theWorkersRead({ secrets, work }) {
  const digest = {};
  for (const [label, file] of [...secrets, ["the job's workspace", work]]) {
    try {
      digest[file] = sha256(file);
    } catch (e) {
      const why = e.kind ? `${file} is not a regular file (a ${e.kind})` : `the worker itself cannot read ${file} (${e.code})`;
      return { why: `${label}: ${why}: nothing to prove` };
    }
  }
  return { digest };
}

/** Claude's sandbox as srt makes it, with the sandbox settings of the managed file (srt takes the
 * same keys and ignores Claude's own), in a file in `dir`: srt's argv for a command in it. */
function claudesSandbox(dir, sb) {
  // srt refuses Claude's `*` in its own settings: an empty domain list gives the command the
  // network namespace and proxy that worker/bwrap (the bwrapPath) drops, as for Claude's.
  const srtSettings = {
    ...sb,
    network: { allowedDomains: [], deniedDomains: [] },
    filesystem: { allowWrite: [], denyWrite: [], ...sb.filesystem },
  };
  const settings = path.join(dir, "srt-settings.json");
  fs.writeFileSync(settings, JSON.stringify(srtSettings));
  // srt's code compiled when the image was built (the image's cache, read-only; the Dockerfile).
  const cache = `NODE_COMPILE_CACHE=${cfg.compile_cache}`;
  return (...args) => [tool("env"), cache, process.execPath, tool("srt"), "--settings", settings, "--", ...args];
}

/** A job's work, in one run of its jail from `workspace` (jobs.mjs startDriver): a preview server
 * one command starts in Claude's sandbox (`sandboxed`), reached, once `go` is done, by the next
 * command there, which reads each file of `asked` and fetches the internet URL, and by the
 * browser, whose page (in `dir`) reads each file and the preview. */
function startJobsWork(workspace, dir, sandboxed, asked, go) {
  // The page reads each file and the preview that page.json names: the driver puts the preview's
  // URL in once it is known.
  const page = path.join(dir, "page.html");
  fs.writeFileSync(page, PAGE_HTML);
  fs.writeFileSync(path.join(dir, "page.js"), PAGE_SCRIPT);
  fs.writeFileSync(path.join(dir, "page.json"), JSON.stringify({ files: asked, preview: null }));
  return startDriver(workspace, {
    ms: MOST_TOOL_MS,
    page: path.join(dir, "page.json"),
    server: sandboxed(process.execPath, "-e", PREVIEW_SERVER, PREVIEW_TOKEN, String(MOST_TOOL_MS)),
    next: sandboxed(...nextCommand("IMD-PREVIEW-URL", asked)),
    // The page may read files (a flag no job's browser has): what the jail holds is all it
    // can reach, so the jail, not Playwright's file:// guardrail, is what is proved.
    browser: [tool("chromium"), "--allow-file-access-from-files", "--dump-dom", `file://${page}`],
  }, go);
}

/** A shell's reads of each file of `asked`, then `command` in its place: the argv. */
const reads = (asked, ...command) => [tool("sh"), "-c", READS, "jail", tool("sha256sum"), String(asked.length), ...asked, ...command];
/** The preview server's client: node's arguments to fetch `preview` (and, when given, `internet`). */
const netClient = (...urls) => ["-e", NET_CLIENT, String(CONNECT_MS * 2), ...urls];
/** The next command of a job's work: the reads of `asked`, then the client of `preview`. */
const nextCommand = (preview, asked) => reads(asked, process.execPath, ...netClient(preview, cfg.internet_url));

/** Claude's own tools, which run in the jail outside its sandbox (a shell there), reading each
 * file of `asked` from `workspace`: run()'s arguments. */
const theJailsOwnTools = (workspace, asked) => inAJobsJail(workspace, ...reads(asked));

/** While a job's preview server runs: the driver's next command and browser, and who else tries
 * the server: another job's run (a jail of another workspace's, `other`), the worker itself, and
 * a command in Codex's sandbox (a run of its own; when `codex`), which reads `asked` too. */
async function whileThePreviewRuns(driver, preview, { workspace, other, codex, asked }) {
  const [runs, fromOther, fromWorker, codexRun] = await Promise.all([
    driver.runs,
    run(...inAJobsJail(other, process.execPath, ...netClient(preview.url))),
    run(process.execPath, netClient(preview.url)),
    // A Codex job's commands: Codex's sandbox with the options the worker gives a job's
    // exec, through the jail, which asks Codex for it as it does for a job.
    codex && run(...inCodexsSandbox(workspace, ...nextCommand(preview.url, asked))),
  ]);
  return { sandboxRun: runs.next, browserRun: runs.browser, runsWhy: runs.why, fromOther, fromWorker, codexRun };
}

/** Everything line 16 runs, at once where it can (`running` keeps what the clean-up ends), what
 * may send a packet out of the box only once `go` is done (main.mjs QUIET_FIRST): the
 * jail a Claude Code job runs in (worker/jail: the worker starts Claude Code through it), seen
 * three ways from the job's workspace: by a job's commands, in Claude's sandbox (its library,
 * srt); by Claude's own tools, which run in the jail outside that sandbox; and by the browser
 * Claude starts there (Chromium). srt's settings and the browser's page are files in the
 * workspace, the one folder of the home the jail holds. Beside them, Codex's sandbox and a job's
 * repository configuring Claude Code. */
async function theJailsRuns(claude, { secrets, work, workspace, other }, running, go) {
  const codexBin = secretPaths().codex;
  const codex = fs.existsSync(codexBin);
  // A job's repository configures Claude Code, beside the rest (a run of its own). Claude Code
  // is the volume's, whatever it asks of the network.
  const claudeBin = secretPaths().claude;
  running.repository = fs.existsSync(claudeBin) ? go.then(() => repositorySettings(workspace)) : null;
  running.scratch = fs.mkdtempSync(path.join(workspace, ".imd-box-check-"));
  const sandboxed = claudesSandbox(running.scratch, claude.sandbox);
  // Each file is read, and through /proc/<pid>/root of this (outside) process; only a
  // digest leaves the jail, never the content.
  const viaProc = secrets.map(([, f]) => `/proc/${process.pid}/root${f}`);
  const asked = [...secrets.map(([, f]) => f), ...viaProc, work];
  // A job's work needs the network: a preview server one command starts, reached by the
  // next command (which also fetches the internet URL) and by the browser.
  running.driver = startJobsWork(workspace, running.scratch, sandboxed, asked, go);
  const [preview, toolsRun] = await Promise.all([running.driver.preview, run(...theJailsOwnTools(workspace, asked))]);
  const ran = { codexBin, codex, claudeBin, viaProc, asked, preview, toolsRun };
  if (preview.why) return ran;
  await go;
  return { ...ran, ...(await whileThePreviewRuns(running.driver, preview, { workspace, other, codex, asked })) };
}

/** What a run printed of its reads: {seen} (path -> the digest seen, or "denied"; "net:<what>"
 * -> how it went), or {why} it is no evidence. */
function seenBy(label, r, asked, decode = (d) => d) {
  const why = unusable(label, r);
  if (why) return { why };
  const seen = {};
  for (const line of r.out.split("\n")) {
    if (line.startsWith("IMD-NET ")) {
      const [, what, ...how] = line.split(" ");
      seen[`net:${what}`] = how.join(" ");
    } else if (line.startsWith("IMD-JAIL ")) {
      const at = line.lastIndexOf(" ");
      const how = line.slice(at + 1);
      seen[line.slice(9, at)] = how === "denied" ? how : decode(how);
    }
  }
  if (r.code !== 0 || asked.some((f) => !(f in seen))) return { why: `${label} did not start (exit ${r.code}): ${short(r.err || r.out, 160)}` };
  return { seen };
}

// The jail holds Claude Code's login: a sentinel of the login broker's, minted for each run
// (line 25 proves no jail holds the owner's), which Claude's own tools and its browser may
// read and the sandboxes may not: there, reading whatever is at its path is reading it.
const isTheLogin = (label) => label.startsWith("the Claude login");

/** Which secrets a run saw (`seen`), at their paths or through /proc/<pid>/root. */
function readBy({ secrets, viaProc, digest }, seen, skip = () => false, sandbox = false) {
  const read = [];
  const got = (label, f, x) => x === digest[f] || (sandbox && isTheLogin(label) && x !== undefined && x !== "denied");
  secrets.forEach(([label, f], i) => {
    if (skip(label)) return;
    if (got(label, f, seen[f])) read.push(`${label} at ${f}`);
    if (got(label, f, seen[viaProc[i]])) read.push(`${label} through ${viaProc[i]}`);
  });
  return read;
}

/** What each of the jail's readers read: Claude's sandbox, Codex's, Claude's own tools and the
 * browser, each of the secrets and the job's own workspace. {seen} (label -> its reads), {bad}. */
function whatEachRead(claude, { secrets, work, digest }, ran) {
  const files = { secrets, viaProc: ran.viaProc, digest };
  // [label, run, who, skip, a sandbox's, decode]
  const views = [
    ["srt in the job's jail", ran.sandboxRun, "the sandbox", () => false, true],
    ["Codex's sandbox in the job's jail", ran.codexRun, "Codex's sandbox", () => false, true],
    ["the job's jail", ran.toolsRun, `the job's jail (${tool("jail")})`, isTheLogin, false],
    ["the browser in the job's jail", ran.browserRun, "the browser in the job's jail", isTheLogin, false, digestOfBase64],
  ];
  const seen = {};
  const bad = [];
  for (const [label, r, who, skip, sandbox, decode] of views) {
    if (!r) continue; // not run: no preview server to work with
    const v = seenBy(label, r, ran.asked, decode);
    if (v.why) {
      bad.push(v.why);
      continue;
    }
    seen[label] = v.seen;
    const read = readBy(files, v.seen, skip, sandbox);
    if (read.length) bad.push(`${who} READ ${read.join(", ")}${who === "the sandbox" ? ` (rules from ${claude.file})` : ""}`);
    if (v.seen[work] !== digest[work]) bad.push(`${who} cannot read the job's own workspace either (${work}): not a jail a job can work in`);
  }
  return { seen, bad };
}

/** Who outside the job's run reached its preview server (got its token), or null: another job's
 * jail (`other`), the worker, a command in Codex's sandbox. */
function reachedFromOutside({ preview, fromOther, fromWorker, codexRun }, other) {
  const reached = [];
  for (const [who, r] of [
    [`another job's jail (${other})`, fromOther],
    ["the worker", fromWorker],
    ["a command in Codex's sandbox (a run of its own)", codexRun],
  ]) {
    if (r && (/IMD-NET preview (.*)/.exec(r.out || "") || [])[1] === PREVIEW_TOKEN) reached.push(who);
  }
  return reached.length ? `a job's preview server (${preview.url}) was REACHED from ${reached.join(" and from ")}` : null;
}

/** The preview server out of reach of the next command or the browser, in the job's own run. */
function outOfReachInside(preview, seen) {
  const bad = [];
  const preview_ = `the preview server a sandboxed command started (${preview.url})`;
  for (const [label, by] of [
    ["srt in the job's jail", "the next command"],
    ["the browser in the job's jail", "the browser"],
  ]) {
    const got = (seen[label] || {})["net:preview"];
    if (label in seen && got !== PREVIEW_TOKEN) bad.push(`${preview_} is out of reach of ${by} (${short(got || "no answer", 60)})`);
  }
  return bad;
}

/** What the internet URL gave a sandboxed command and a command in Codex's sandbox, and what it
 * alone fails: not proved when the box itself cannot reach it (imdbox/check/runner.py decides),
 * where the rest of the line still counts. */
function theInternet(seen) {
  const unreached = [];
  const net = (seen["srt in the job's jail"] || {})["net:internet"];
  if ("srt in the job's jail" in seen && !/^\d+$/.test(net)) unreached.push(`a sandboxed command cannot reach ${cfg.internet_url} (${short(net || "no answer", 60)})`);
  const codexNet = (seen["Codex's sandbox in the job's jail"] || {})["net:internet"];
  if ("Codex's sandbox in the job's jail" in seen && !/^\d+$/.test(codexNet))
    unreached.push(`a command in Codex's sandbox cannot reach ${cfg.internet_url} (${short(codexNet || "no answer", 60)})`);
  return { unreached, net, codexNet };
}

/** What a job's repository made Claude Code run outside its sandbox (repositorySettings), or null. */
function theRepositorysSettings(repo) {
  if (!(repo && repo.ran.length)) return null;
  return `a job's repository made Claude Code run its ${repo.ran.map((w) => (w === "hook" ? "hook" : "helper command")).join(" and its ")}, outside its sandbox in the jail that holds the login (project settings)`;
}

/** Line 16's detail when nothing was read that must not be, and everything was that must. */
function provedDetail(claude, secrets, { codex, codexBin, claudeBin }, { net, codexNet }, repo) {
  const labels = secrets.map(([l]) => l);
  return (
    `in a job's jail (${tool("jail")}), Claude's sandbox (srt, rules from ${claude.file}) cannot read ` +
    `${labels.slice(0, -1).join(", ")} or ${labels.at(-1)} — nor through /proc/<pid>/root — and Claude's own tools ` +
    `and its browser read none of them but the login; all three read the job's own workspace; the worker can; ` +
    `a preview server one command started is reached by the next command and by the browser, and not from ` +
    `another job's jail nor from the worker (each run of a jail has a network of its own); a command gets ` +
    `${cfg.internet_url} (${net}); ` +
    (codex
      ? `Codex's sandbox (the volume's codex, as the jail asks for it for a job) reads none of them, the Codex login included, reads the workspace, and reaches ${cfg.internet_url} (${codexNet})`
      : `Codex is not installed (${codexBin}): its sandbox is not proved`) +
    (!repo
      ? `; Claude Code is not installed (${claudeBin}): a repository's settings are not proved`
      : repo.asked
        ? `; Claude Code, started as the worker starts it on a job's repository, ran neither the hook nor the helper command its project settings name`
        : `; Claude Code (${claudeBin}) never asked its model (exit ${repo.r.code}: ${short(repo.r.err || repo.r.out, 80)}): a repository's settings are not proved`)
  );
}

/** Line 16's verdict on what ran (theJailsRuns), given the worker's own digests, and on Claude
 * Code's run on a job's repository (`repo`). */
function verdict(claude, { secrets, work, other }, digest, ran, repo) {
  const bad = [];
  if (ran.preview.late) bad.push(late("a preview server in Claude's sandbox (srt) in the job's jail", MOST_TOOL_MS));
  else if (ran.preview.why) bad.push(`srt in the job's jail ${ran.preview.why}`);
  else {
    if (!ran.sandboxRun) bad.push(ran.runsWhy ? `the job's jail: ${ran.runsWhy}` : "the job's jail did not finish its next command and its browser");
    const reached = reachedFromOutside(ran, other);
    if (reached) bad.push(reached);
  }
  const reads = whatEachRead(claude, { secrets, work, digest }, ran);
  bad.push(...reads.bad, ...outOfReachInside(ran.preview, reads.seen));
  const internet = theInternet(reads.seen);
  const repository = theRepositorysSettings(repo);
  if (repository) bad.push(repository);
  const { unreached } = internet;
  // What only ran out of time (a run killed at its limit: no evidence either way) is not proved.
  if (onlyLate(bad)) return { ok: false, detail: bad.join("; "), late: true };
  if (bad.length || unreached.length) return { ok: false, detail: [...bad, ...unreached].join("; "), unreached: !bad.length };
  return { ok: true, detail: provedDetail(claude, secrets, ran, internet, repo) };
}

/** Line 16: a job's jail and the sandboxes in it. The targets (canaries where a secret is not
 * there yet), the worker's own read of them, the jail's runs (what may leave the box once `go`
 * is done), and the verdict; then everything made and started for it goes. */
export async function readJail(go) {
  const claude = claudeSandboxSettings();
  if (claude.why) return { ok: false, detail: claude.why };
  let targets;
  try {
    targets = jailTargets(MADE);
  } catch (e) {
    cleanup(MADE);
    letLoginGo();
    return { ok: false, detail: `cannot set up the test in ${HOME} (${e.code || e}): nothing proved` };
  }
  const running = {}; // what the clean-up ends: the driver, Claude Code's run, the scratch folder
  try {
    const control = theWorkersRead(targets);
    if (control.why) return { ok: false, detail: control.why };
    const missing = ["jail", "srt", "sh", "chromium"].find((name) => !fs.existsSync(tool(name)));
    if (missing) return { ok: false, detail: `${missing} is missing from the box` };
    const ran = await theJailsRuns(claude, targets, running, go);
    const repo = running.repository && (await running.repository);
    return verdict(claude, targets, control.digest, ran, repo);
  } finally {
    if (running.driver) await running.driver.stop();
    if (running.repository) await running.repository.catch(() => {});
    if (running.scratch) fs.rmSync(running.scratch, { recursive: true, force: true });
    cleanup(MADE);
    letLoginGo();
  }
}
