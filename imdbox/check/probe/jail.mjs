// box check's probe, the home and the jail: a job's jail and Claude's sandbox (line 16), and root
// in a user namespace (line 17).
// One script with the other parts when it runs (imdbox/check/runner.py probe_source).
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { cfg, tool, HOME, PORT, CONNECT_MS, TOOL_MS, REFUSALS, short, run, unusable } from "./base.mjs";
import { iptablesAttempts, judgeAttempts } from "./box.mjs";

// ------------------------------------------------------------------ the home and the jail

// The secrets the home holds once set up. Paths follow the tools' own env vars.
export function secretPaths() {
  const claudeDir = process.env.CLAUDE_CONFIG_DIR || path.join(HOME, ".claude");
  const imdDir = process.env.IDENTITYMD_HOME || path.join(HOME, ".identitymd");
  return {
    claudeDir,
    imdDir,
    claudeLogin: path.join(claudeDir, ".credentials.json"),
    // Where the jail holds Codex's login for Codex (worker/jail), and Codex itself, when installed.
    codexLogin: path.join(HOME, ".codex", "auth.json"),
    codex: path.join(HOME, ".npm-global", "bin", "codex"),
    claude: path.join(HOME, ".npm-global", "bin", "claude"),
    deviceKey: path.join(imdDir, "config.json"),
    toolsEnv: path.join(imdDir, "tools.env"),
    workRoot: path.join(imdDir, "work"),
  };
}

export const CANARY = ".imd-box-check-canary";
// The sandbox options the worker gives a Codex job's exec (tests/harness/jobs.py has the argv).
const CODEX_JOB_SANDBOX = ["--sandbox", "workspace-write", "-c", "sandbox_workspace_write.network_access=true"];
const CANARY_TEXT = "imd-box check canary: the read jail must not see this\n";

/** The folders of `dir` that are not there yet, made for the test. */
export function makeDirs(dir, made) {
  const missing = [];
  for (let d = dir; d !== path.dirname(d) && !fs.existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) {
    fs.mkdirSync(d, { mode: 0o700 });
    made.push({ path: d });
  }
}

/** A file that is not there yet, made for the test (never over a real one: O_EXCL); `text`,
 * else the canary's. */
export function makeCanary(file, made, text = CANARY_TEXT) {
  makeDirs(path.dirname(file), made);
  fs.writeFileSync(file, text, { mode: 0o600, flag: "wx" });
  made.push({ path: file, ino: fs.statSync(file).ino, text });
}

// How a sentinel login's access token starts, as the login broker mints it (worker/broker):
// lines 24 and 25 tell the broker's stand-in from a login by it.
export const CLAUDE_SENTINEL = "sk-ant-oat01-imd-box-sentinel-";

// A Claude login's canary has a login's shape, so the login broker stands in for it in a job's
// jail as for the owner's (worker/jail.d/login): lines 16 and 25 both may make it.
export const LOGIN_CANARY = `${JSON.stringify({
  claudeAiOauth: {
    accessToken: `sk-ant-oat01-${CANARY}-access`,
    refreshToken: `sk-ant-ort01-${CANARY}-refresh`,
    expiresAt: 4102444800000,
    scopes: ["user:inference"],
  },
})}\n`;

/** The Claude login at `file`, or its canary where there is none: "real" or "canary". Lines 16
 * and 25 run at once and both want it: the canary is made by the first that holds it, and
 * removed when the last lets go (letLoginGo; main.mjs's end, for a line cut off). */
const loginCanary = { holds: 0, made: [] };
export function claudeLogin(file) {
  loginCanary.holds += 1;
  if (fs.existsSync(file)) return readRegular(file).toString("utf8") === LOGIN_CANARY ? "canary" : "real";
  makeCanary(file, loginCanary.made, LOGIN_CANARY);
  return "canary";
}
export function letLoginGo(all = false) {
  loginCanary.holds = all ? 0 : Math.max(0, loginCanary.holds - 1);
  if (loginCanary.holds === 0) cleanup(loginCanary.made);
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

/** One of the image's programs as a job's CLI runs in `workspace` (worker/jail's --program):
 * run()'s arguments. */
export const inAJobsJail = (workspace, ...args) => [tool("jail"), ["claude", "--program", ...args], { cwd: workspace, env: { ...process.env, HOME } }];

/** Remove what the test made, newest first, and forget it (the exit's pass touches only what
 * a cut-off line left); a file replaced meanwhile (a login written while the check ran) is
 * not ours any more and stays. A folder made whole for the test (`tree`) goes whole. */
export function cleanup(made) {
  for (const m of made.splice(0).reverse()) {
    try {
      if (m.tree) fs.rmSync(m.path, { recursive: true, force: true });
      else if (m.ino === undefined) fs.rmdirSync(m.path);
      else if (fs.statSync(m.path).ino === m.ino && fs.readFileSync(m.path, "utf8") === m.text) fs.unlinkSync(m.path);
    } catch {}
  }
}

/** A regular file's bytes, read through the one descriptor it was checked on. Opened
 * without waiting: a FIFO planted where a secret goes would block the probe's one thread
 * on its open or its read, and every line with it. */
export function readRegular(file) {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      const kind = st.isFIFO() ? "fifo" : st.isDirectory() ? "directory" : st.isSocket() ? "socket" : "device";
      throw Object.assign(new Error(`${file} is a ${kind}`), { code: "ENOTREG", kind });
    }
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

const sha256 = (file) => createHash("sha256").update(readRegular(file)).digest("hex");

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

// Every canary and folder the read jail's line makes, until removed. A line cut off at its
// time limit (a tool that hangs) never gets to its own clean-up; the probe removes these
// before it exits, or every later check would find them there (EEXIST: nothing proved).
export const MADE = [];

// A job's preview server and its clients, for line 16: files in the job's workspace, run
// by the image's node in the job's jail. The server answers every request with a token, to
// any origin (the browser's page is a file); the client prints what the server and the
// internet URL gave it.
const PREVIEW_TOKEN = randomBytes(8).toString("hex");
const PREVIEW_SERVER = `const http = require("node:http");
const s = http.createServer((q, r) => {
  r.writeHead(200, { "content-type": "text/plain", "access-control-allow-origin": "*" });
  r.end(process.argv[1]);
});
s.listen(0, "127.0.0.1", () => console.log("IMD-PREVIEW " + s.address().port));
setTimeout(() => process.exit(0), ${TOOL_MS});
`;
const NET_CLIENT = `const get = async (what, url) => {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(${CONNECT_MS * 2}), redirect: "manual" });
    const text = await r.text();
    return "IMD-NET " + what + " " + (what === "preview" ? text.trim() : r.status);
  } catch (e) {
    return "IMD-NET " + what + " " + ((e.cause && (e.cause.code || e.cause.message)) || e.name);
  }
};
Promise.all([get("preview", process.argv[1]), get("internet", process.argv[2])]).then((l) => console.log(l.join("\\n")));
`;

/** A page for the browser: it reads each file by file:// and the preview by http://, and
 * shows one line per read, a file's bytes in base64 (only a digest of them is kept). */
function browserPage(files, previewUrl) {
  return `<!doctype html><title>imd-box check</title><pre id="o"></pre><script>
const out = [];
for (const f of ${JSON.stringify(files)}) {
  const x = new XMLHttpRequest();
  try {
    x.open("GET", "file://" + f, false);
    x.overrideMimeType("text/plain; charset=x-user-defined");
    x.send();
    let bytes = "";
    for (let i = 0; i < x.responseText.length; i++) bytes += String.fromCharCode(x.responseText.charCodeAt(i) & 255);
    out.push("IMD-JAIL " + f + " " + btoa(bytes));
  } catch {
    out.push("IMD-JAIL " + f + " denied");
  }
}
try {
  const x = new XMLHttpRequest();
  x.open("GET", ${JSON.stringify(previewUrl)}, false);
  x.send();
  out.push("IMD-NET preview " + (x.status === 200 ? x.responseText.trim() : "HTTP " + x.status));
} catch (e) {
  out.push("IMD-NET preview " + e.name);
}
document.getElementById("o").textContent = "\\n" + out.join("\\n") + "\\n";
</script>
`;
}

const digestOfBase64 = (b64) => createHash("sha256").update(Buffer.from(b64, "base64")).digest("hex");

// A job's work, as one run of a job's jail holds it (each run has a network of its own): the
// driver, run by the image's node in the jail, starts the preview server in the sandbox, then
// runs the next command and the browser; it prints what each gave, and holds the server until
// its stdin closes, while others try to reach it from outside the jail.
const DRIVER = `const { spawn } = require("node:child_process");
const fs = require("node:fs");
const c = JSON.parse(process.argv[1]);
const say = (what, r) => console.log("IMD-DRIVER " + what + " " + JSON.stringify(r));
const start = (argv) => spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], detached: true });
const kill = (child) => { try { process.kill(-child.pid, "SIGKILL"); } catch {} };
const runIt = (argv) => new Promise((resolve) => {
  let out = "", err = "";
  const child = start(argv);
  const timer = setTimeout(() => kill(child), c.ms);
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  child.on("error", (e) => { clearTimeout(timer); resolve({ code: null, out, err: String(e) }); });
  child.on("close", (code) => { clearTimeout(timer); resolve({ code, out, err }); });
});
const server = start(c.server);
let out = "", err = "", started = false;
const end = () => { kill(server); process.exit(0); };
process.stdin.on("end", end).resume();
const timer = setTimeout(() => { say("preview", { why: "timed out starting a preview server" }); end(); }, c.ms);
server.stderr.on("data", (d) => (err += d));
server.on("close", (code) => { if (!started) say("preview", { why: "did not start a preview server (exit " + code + "): " + (err || out).slice(0, 300) }); });
server.stdout.on("data", async (d) => {
  out += d;
  const m = /IMD-PREVIEW (\\d+)/.exec(out);
  if (!m || started) return;
  started = true;
  clearTimeout(timer);
  const url = "http://127.0.0.1:" + m[1] + "/";
  say("preview", { url });
  fs.writeFileSync(c.page, fs.readFileSync(c.page, "utf8").replace("IMD-PREVIEW-URL", url));
  const [next, browser] = await Promise.all([runIt(c.next.map((a) => (a === "IMD-PREVIEW-URL" ? url : a))), runIt(c.browser)]);
  say("next", next);
  say("browser", browser);
});
`;

/** The driver in a job's jail: `preview` once the server runs (its {url}, or {why}), `runs`
 * once the next command and the browser are done ({next, browser}), and stop(). */
function startDriver(argv, { cwd, env }) {
  const child = spawn(argv[0], argv.slice(1), { cwd, env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
  const exited = new Promise((r) => child.once("close", r));
  let buf = "";
  let err = "";
  const got = {};
  let givePreview, giveRuns;
  const preview = new Promise((r) => (givePreview = r));
  const runs = new Promise((r) => (giveRuns = r));
  const stop = async () => {
    clearTimeout(timer);
    try {
      child.stdin.end();
    } catch {}
    const gone = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    }, 2000);
    await exited;
    clearTimeout(gone);
  };
  // A jail that hangs is ended at a tool's limit, and named so.
  const timer = setTimeout(() => {
    givePreview({ why: "timed out" });
    giveRuns({});
    stop();
  }, TOOL_MS);
  child.on("error", (e) => (err += String(e)));
  child.stdin.on("error", () => {});
  child.stderr.on("data", (d) => (err += d));
  child.stdout.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const m = /^IMD-DRIVER (\w+) (.*)$/.exec(line);
      if (!m) continue;
      try {
        got[m[1]] = JSON.parse(m[2]);
      } catch {
        continue; // not the driver's line: judged as missing
      }
      if (m[1] === "preview") {
        clearTimeout(timer);
        givePreview(got.preview);
        if (got.preview.why) giveRuns({});
      }
      if ("next" in got && "browser" in got) giveRuns({ next: got.next, browser: got.browser });
    }
  });
  exited.then((code) => {
    givePreview({ why: `did not start (exit ${code}): ${short(err, 160)}` });
    giveRuns({});
  });
  return { preview, runs, stop };
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
    const r = await run("claude", ["-p", "imd-box check", "--max-turns", "1", "--output-format", "stream-json", "--verbose", "--no-session-persistence"], { cwd: dir, env });
    return { r, asked, ran: ["hook", "helper"].filter((what) => fs.existsSync(path.join(dir, what))) };
  } finally {
    model.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function readJail() {
  const claude = claudeSandboxSettings();
  if (claude.why) return { ok: false, detail: claude.why };
  let secrets, work, workspace, other;
  try {
    ({ secrets, work, workspace, other } = jailTargets(MADE));
  } catch (e) {
    cleanup(MADE);
    letLoginGo();
    return { ok: false, detail: `cannot set up the test in ${HOME} (${e.code || e}): nothing proved` };
  }
  let scratch, driver, repository;
  try {
    // Control: the worker itself reads each file, so the jail's refusal means something.
    const digest = {};
    for (const [label, file] of [...secrets, ["the job's workspace", work]]) {
      try {
        digest[file] = sha256(file);
      } catch (e) {
        const why = e.kind ? `${file} is not a regular file (a ${e.kind})` : `the worker itself cannot read ${file} (${e.code})`;
        return { ok: false, detail: `${label}: ${why}: nothing to prove` };
      }
    }
    // The jail a Claude Code job runs in (worker/jail: the worker starts Claude Code through
    // it), seen three ways from the job's workspace: by a job's commands, in Claude's sandbox
    // (its library, srt, with the sandbox settings of the managed file: srt takes the same
    // keys and ignores Claude's own); by Claude's own tools, which run in the jail outside
    // that sandbox (a shell there); and by the browser Claude starts there (Chromium). srt's
    // settings and the browser's page are files in the workspace, the one folder of the home
    // the jail holds.
    for (const name of ["jail", "srt", "sh", "chromium"]) if (!fs.existsSync(tool(name))) return { ok: false, detail: `${name} is missing from the box` };
    const codexBin = secretPaths().codex;
    const codex = fs.existsSync(codexBin);
    // A job's repository configures Claude Code, beside the rest (a run of its own).
    const claudeBin = secretPaths().claude;
    repository = fs.existsSync(claudeBin) ? repositorySettings(workspace) : null;
    const sb = claude.sandbox;
    // srt refuses Claude's `*` in its own settings: an empty domain list gives the command the
    // network namespace and proxy that worker/bwrap (the bwrapPath) drops, as for Claude's.
    const srtSettings = {
      ...sb,
      network: { allowedDomains: [], deniedDomains: [] },
      filesystem: { allowWrite: [], denyWrite: [], ...sb.filesystem },
    };
    scratch = fs.mkdtempSync(path.join(workspace, ".imd-box-check-"));
    const settings = path.join(scratch, "srt-settings.json");
    fs.writeFileSync(settings, JSON.stringify(srtSettings));
    const sandboxed = (...args) => [process.execPath, tool("srt"), "--settings", settings, "--", ...args];
    // Each file is read, and through /proc/<pid>/root of this (outside) process; only a
    // digest leaves the jail, never the content.
    const viaProc = secrets.map(([, f]) => `/proc/${process.pid}/root${f}`);
    const asked = [...secrets.map(([, f]) => f), ...viaProc, work];
    const reads = `for f in "$@"; do d=$(${tool("sha256sum")} -- "$f" 2>/dev/null) && echo "IMD-JAIL $f \${d%% *}" || echo "IMD-JAIL $f denied"; done`;
    // A job's work needs the network: a preview server one command starts, reached by the
    // next command (which also fetches the internet URL) and by the browser.
    const bad = [];
    // The page reads each file and the preview, whose URL the driver puts in once it is known.
    const page = path.join(scratch, "page.html");
    fs.writeFileSync(page, browserPage(asked, "IMD-PREVIEW-URL"));
    const next = `p=$1 i=$2 c=$3; shift 3; ${reads}; exec ${process.execPath} -e "$c" "$p" "$i"`;
    const jobWork = {
      ms: TOOL_MS,
      page,
      server: sandboxed(process.execPath, "-e", PREVIEW_SERVER, PREVIEW_TOKEN),
      next: sandboxed(tool("sh"), "-c", next, "jail", "IMD-PREVIEW-URL", cfg.internet_url, NET_CLIENT, ...asked),
      // The page may read files (a flag no job's browser has): what the jail holds is all it
      // can reach, so the jail, not Playwright's file:// guardrail, is what is proved.
      browser: [tool("chromium"), "--allow-file-access-from-files", "--dump-dom", `file://${page}`],
    };
    const [jail, jailArgs, jailOpts] = inAJobsJail(workspace, process.execPath, "-e", DRIVER, JSON.stringify(jobWork));
    driver = startDriver([jail, ...jailArgs], jailOpts);
    const [preview, toolsRun] = await Promise.all([driver.preview, run(...inAJobsJail(workspace, tool("sh"), "-c", reads, "jail", ...asked))]);
    let sandboxRun, browserRun, codexRun;
    if (preview.why) bad.push(`srt in the job's jail ${preview.why}`);
    else {
      // Another job's run (a jail of another workspace's), the worker itself and a command in
      // Codex's sandbox (a run of its own) try the preview server while it runs.
      let runs, fromOther, fromWorker;
      [runs, fromOther, fromWorker, codexRun] = await Promise.all([
        driver.runs,
        run(...inAJobsJail(other, process.execPath, "-e", NET_CLIENT, preview.url)),
        run(process.execPath, ["-e", NET_CLIENT, preview.url]),
        // A Codex job's commands: Codex's sandbox with the options the worker gives a job's
        // exec, through the jail, which asks Codex for it as it does for a job.
        codex &&
          run(
            tool("jail"),
            ["codex", "sandbox", ...CODEX_JOB_SANDBOX, "--", tool("sh"), "-c", next, "jail", preview.url, cfg.internet_url, NET_CLIENT, ...asked],
            { cwd: workspace, env: { ...process.env, HOME } },
          ),
      ]);
      ({ next: sandboxRun, browser: browserRun } = runs);
      if (!sandboxRun) bad.push("the job's jail did not finish its next command and its browser");
      const reached = [];
      for (const [who, r] of [
        [`another job's jail (${other})`, fromOther],
        ["the worker", fromWorker],
        ["a command in Codex's sandbox (a run of its own)", codexRun],
      ]) {
        if (r && (/IMD-NET preview (.*)/.exec(r.out || "") || [])[1] === PREVIEW_TOKEN) reached.push(who);
      }
      if (reached.length) bad.push(`a job's preview server (${preview.url}) was REACHED from ${reached.join(" and from ")}`);
    }
    const seenBy = (label, r, decode = (d) => d) => {
      const why = unusable(label, r);
      if (why) return { why };
      const seen = {}; // path -> the digest seen, or "denied"; "net:<what>" -> how it went
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
      if (r.code !== 0 || asked.some((f) => !(f in seen)))
        return { why: `${label} did not start (exit ${r.code}): ${short(r.err || r.out, 160)}` };
      return { seen };
    };
    // The jail holds Claude Code's login: a sentinel of the login broker's, minted for each run
    // (line 25 proves no jail holds the owner's), which Claude's own tools and its browser may
    // read and the sandboxes may not: there, reading whatever is at its path is reading it.
    const login = (label) => label.startsWith("the Claude login");
    const readBy = (seen, skip = () => false, sandbox = false) => {
      const read = [];
      const got = (label, f, x) => x === digest[f] || (sandbox && login(label) && x !== undefined && x !== "denied");
      secrets.forEach(([label, f], i) => {
        if (skip(label)) return;
        if (got(label, f, seen[f])) read.push(`${label} at ${f}`);
        if (got(label, f, seen[viaProc[i]])) read.push(`${label} through ${viaProc[i]}`);
      });
      return read;
    };
    // [label, run, who, skip, a sandbox's, decode]
    const views = [
      ["srt in the job's jail", sandboxRun, "the sandbox", () => false, true],
      ["Codex's sandbox in the job's jail", codexRun, "Codex's sandbox", () => false, true],
      ["the job's jail", toolsRun, `the job's jail (${tool("jail")})`, login, false],
      ["the browser in the job's jail", browserRun, "the browser in the job's jail", login, false, digestOfBase64],
    ];
    const seen = {};
    for (const [label, r, who, skip, sandbox, decode] of views) {
      if (!r) continue; // not run: no preview server to work with
      const v = seenBy(label, r, decode);
      if (v.why) {
        bad.push(v.why);
        continue;
      }
      seen[label] = v.seen;
      const read = readBy(v.seen, skip, sandbox);
      if (read.length) bad.push(`${who} READ ${read.join(", ")}${who === "the sandbox" ? ` (rules from ${claude.file})` : ""}`);
      if (v.seen[work] !== digest[work])
        bad.push(`${who} cannot read the job's own workspace either (${work}): not a jail a job can work in`);
    }
    const preview_ = `the preview server a sandboxed command started (${preview.url})`;
    for (const [label, by] of [
      ["srt in the job's jail", "the next command"],
      ["the browser in the job's jail", "the browser"],
    ]) {
      const got = (seen[label] || {})["net:preview"];
      if (label in seen && got !== PREVIEW_TOKEN) bad.push(`${preview_} is out of reach of ${by} (${short(got || "no answer", 60)})`);
    }
    // What the internet URL alone fails: not proved when the box itself cannot reach it
    // (imdbox/check/runner.py decides), where the rest of the line still counts.
    const unreached = [];
    const net = (seen["srt in the job's jail"] || {})["net:internet"];
    if ("srt in the job's jail" in seen && !/^\d+$/.test(net)) unreached.push(`a sandboxed command cannot reach ${cfg.internet_url} (${short(net || "no answer", 60)})`);
    const codexNet = (seen["Codex's sandbox in the job's jail"] || {})["net:internet"];
    if ("Codex's sandbox in the job's jail" in seen && !/^\d+$/.test(codexNet))
      unreached.push(`a command in Codex's sandbox cannot reach ${cfg.internet_url} (${short(codexNet || "no answer", 60)})`);
    const repo = repository && (await repository);
    if (repo && repo.ran.length)
      bad.push(`a job's repository made Claude Code run its ${repo.ran.map((w) => (w === "hook" ? "hook" : "helper command")).join(" and its ")}, outside its sandbox in the jail that holds the login (project settings)`);
    if (bad.length || unreached.length) return { ok: false, detail: [...bad, ...unreached].join("; "), unreached: !bad.length };
    const labels = secrets.map(([l]) => l);
    return {
      ok: true,
      detail:
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
            : `; Claude Code (${claudeBin}) never asked its model (exit ${repo.r.code}: ${short(repo.r.err || repo.r.out, 80)}): a repository's settings are not proved`),
    };
  } finally {
    if (driver) await driver.stop();
    if (repository) await repository.catch(() => {});
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
    cleanup(MADE);
    letLoginGo();
  }
}

function nodeConnectScript(host, port, ms) {
  return `import net from "node:net";const s=net.connect({host:${JSON.stringify(host)},port:${port}});
const t=setTimeout(()=>{console.log("timeout");process.exit(0)},${ms});
s.on("connect",()=>{console.log("reached connected");process.exit(0)});
s.on("error",(e)=>{console.log((${JSON.stringify([...REFUSALS])}.includes(e.code)?"refused ":"reached ")+e.code);process.exit(0)});`;
}

export async function jailedRoot() {
  const jails = [
    ["unshare -U -r", [tool("unshare"), "-U", "-r", "--"]],
    ["bwrap --uid 0", [tool("bwrap"), "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--"]],
  ];
  const parts = [];
  let ok = true;
  for (const [name, prefix] of jails) {
    const who = await run(prefix[0], [...prefix.slice(1), tool("sh"), "-c", "id -u; grep CapEff /proc/self/status"]);
    const why = unusable(path.basename(prefix[0]), who);
    if (why || who.code !== 0 || !/^0\n/.test(who.out)) {
      ok = false;
      parts.push(`${name}: could not become root in a user namespace (${why || short(who.err, 80)})`);
      continue;
    }
    const j = judgeAttempts(await iptablesAttempts(prefix));
    if (!j.ok) ok = false;
    parts.push(`${name}: ${j.detail}`);
  }
  // After those attempts, root in the jail still meets the wall.
  const target = cfg.targets.jail_target;
  const r = await run("unshare", ["-U", "-r", "--", process.execPath, "--input-type=module", "-e", nodeConnectScript(target, PORT, CONNECT_MS)]);
  const why = unusable("unshare", r) || (r.code !== 0 || !r.out.trim() ? `exit ${r.code}: ${short(r.err, 80)}` : null);
  const outcome = why ? `could not run (${why})` : short(r.out, 60);
  if (why || !outcome.startsWith("refused")) ok = false;
  parts.push(`${target}:${PORT} from the jail: ${outcome}`);
  return { ok, detail: parts.join("; ") };
}

// ------------------------------------------------------------------ the worker's own hands

// What line 23 made, until removed: a list of its own, as it runs beside line 16, which clears
// MADE when it ends. The probe's exit removes what a cut-off line 23 left.
export const MADE_HANDS = [];
const HANDS_SEEN = "imd-box-check-seen";
// Where the fsmonitor puts a link to the home: in the workspace, and beside the bundles.
const HANDS_LINKS = ["node/imd-box-check-link.sol", "imd-box-check-link.bundle"];
const HANDS_KEY = "IMD_BOX_CHECK_KEY";

/** Line 23: the worker's own git and forge (worker/hands, first on its PATH), on a tree a job
 * wrote, read nothing of the home; and a job's CLI gets none of tools.env's values. A nested
 * repository's fsmonitor, planted as a job plants it, runs under the worker's `git status`; a
 * .sol link to each secret is formatted by the worker's `forge fmt`; the worker's environment,
 * with tools.env's values in it as the worker puts them, starts a program in a job's jail.
 * Everything it plants is its own (a canary in the home, a job's folder, a tools.env in a home
 * of its own that IDENTITYMD_HOME names), so it never meets line 16's canaries. */
export async function workerHands() {
  const p = secretPaths();
  for (const name of ["hands_git", "hands_forge", "jail", "git", "env", "sha256sum", "ln"]) if (!fs.existsSync(tool(name))) return { ok: false, detail: `${tool(name)} is missing from the box` };
  const made = MADE_HANDS;
  const job = path.join(p.workRoot, `${CANARY}-hands`);
  const ws = path.join(job, "node");
  const imdHome = path.join(job, "identitymd");
  const home = path.join(HOME, `${CANARY}-hands`);
  const key = `imd-box-check-${randomBytes(8).toString("hex")}`;
  const secrets = [];
  const text = {};
  try {
    fs.rmSync(job, { recursive: true, force: true }); // a check cut off before its clean-up
    makeCanary(home, made);
    secrets.push(["the rest of the home", home]);
    text[home] = CANARY_TEXT;
    makeDirs(p.workRoot, made);
    fs.mkdirSync(job, { mode: 0o700 });
    made.push({ path: job, tree: true });
    fs.mkdirSync(path.join(ws, "sub"), { recursive: true, mode: 0o700 });
    fs.mkdirSync(imdHome, { mode: 0o700 });
    fs.writeFileSync(path.join(imdHome, "tools.env"), `${HANDS_KEY}=${key}\n`, { mode: 0o600 });
  } catch (e) {
    cleanup(made);
    return { ok: false, detail: `cannot set up the test in ${HOME} (${e.code || e}): nothing proved` };
  }
  try {
    // The device key as it is now, read once (not line 16's canary, nor anything but a file).
    try {
      const device = readRegular(p.deviceKey).toString("utf8");
      if (device !== CANARY_TEXT) {
        secrets.unshift(["the device key", p.deviceKey]);
        text[p.deviceKey] = device;
      }
    } catch {}
    const digest = Object.fromEntries(secrets.map(([, f]) => [f, createHash("sha256").update(text[f]).digest("hex")]));
    // The job's tree: a nested repository staged as a gitlink, its fsmonitor set last (the
    // probe's own git must not run it), and later a .sol link to each secret.
    const env = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
    const sub = path.join(ws, "sub");
    const planted = HANDS_LINKS.map((l) => path.relative(sub, path.join(job, l)));
    const fsmonitor =
      `${tool("sha256sum")} ${secrets.map(([, f]) => f).join(" ")} > ../${HANDS_SEEN} 2>&1; ` +
      `${planted.map((l) => `${tool("ln")} -s ${home} ${l} 2>/dev/null; `).join("")}echo`;
    const ran = (label, r) => unusable(label, r) || (r.code !== 0 ? `exit ${r.code}: ${short(r.err, 80)}` : null);
    const workersGit = async (args) => {
      const why = ran("the worker's git", await run(tool("hands_git"), args, { cwd: ws, env }));
      return why && `the worker's git (${tool("hands_git")}) did not run (${why})`;
    };
    const git = async (cwd, args) => {
      const r = await run(tool("git"), ["-c", "user.name=c", "-c", "user.email=c@c", ...args], { cwd, env });
      return r.code === 0 ? null : `cannot plant the job's tree (git ${args[0]}: ${unusable("git", r) || short(r.err, 80)}): nothing proved`;
    };
    for (const [cwd, args] of [
      [ws, ["init", "-q", "."]],
      [sub, ["init", "-q", "."]],
      [sub, ["commit", "-q", "--allow-empty", "-m", "sub"]],
      [ws, ["add", "sub"]],
    ]) {
      const why = await git(cwd, args);
      if (why) return { ok: false, detail: why };
    }
    // The worker's first git on the node: its launcher searches for links after it and finds
    // the node clear, as after a job's run that left none, so it watches no later call.
    const firstWhy = await workersGit(["status", "--porcelain"]);
    if (firstWhy) return { ok: false, detail: firstWhy };
    const cwhy = await git(sub, ["config", "core.fsmonitor", fsmonitor]);
    if (cwhy) return { ok: false, detail: cwhy };
    const bad = [];
    // The worker's git, as the worker runs it after a job.
    const gwhy = await workersGit(["status", "--porcelain", "--untracked-files=all"]);
    if (gwhy) return { ok: false, detail: gwhy };
    let seen = "";
    try {
      seen = readRegular(path.join(ws, HANDS_SEEN)).toString("utf8");
    } catch {}
    if (!seen) return { ok: false, detail: "the nested repository's fsmonitor did not run under the worker's git: nothing proved" };
    const gread = secrets.filter(([, f]) => seen.includes(digest[f])).map(([label]) => label);
    if (gread.length) bad.push(`a job's fsmonitor under the worker's git READ ${gread.join(", ")}`);
    // A link it left would lead the worker's own reads and writes, outside every jail.
    const stayed = HANDS_LINKS.filter((l) => {
      try {
        return fs.lstatSync(path.join(job, l)).isSymbolicLink();
      } catch {
        return false;
      }
    });
    if (stayed.length) bad.push(`a link a job's fsmonitor made under the worker's git STAYED (${stayed.join(", ")})`);
    // A .sol link to each secret, and the worker's forge as it formats a job's changed .sol
    // files (its own environment); with --check, which reads and reports as fmt does but never
    // writes, whatever a link leads to.
    const links = secrets.map(([, f], i) => {
      fs.symlinkSync(f, path.join(ws, `Leak${i}.sol`));
      return `Leak${i}.sol`;
    });
    const forgeEnv = { PATH: env.PATH, HOME, CI: "1", NO_COLOR: "1", FOUNDRY_OFFLINE: "true" };
    const fmt = await run(tool("hands_forge"), ["fmt", "--check", ...links], { cwd: ws, env: forgeEnv });
    const fwhy = unusable("the worker's forge", fmt);
    if (fwhy) return { ok: false, detail: fwhy };
    const lines = (f) => text[f].split("\n").map((l) => l.trim()).filter((l) => l.length >= 8);
    const fread = secrets.filter(([, f]) => lines(f).some((l) => (fmt.out + fmt.err).includes(l))).map(([label]) => label);
    if (fread.length) bad.push(`the worker's forge showed ${fread.join(", ")} through a .sol link`);
    // A job's environment: the worker's, with a tools.env key in it as the worker copies them,
    // from the tools.env its IDENTITYMD_HOME names, through the jail a job's CLI runs in.
    const job_ = await run(tool("jail"), ["claude", "--program", tool("env")], { cwd: ws, env: { ...env, IDENTITYMD_HOME: imdHome, [HANDS_KEY]: key } });
    const jwhy = ran("the job's jail", job_);
    if (jwhy) return { ok: false, detail: `the job's jail did not start (${jwhy})` };
    if (job_.out.includes(key)) bad.push(`a job's environment holds tools.env's ${HANDS_KEY}`);
    if (bad.length) return { ok: false, detail: bad.join("; ") };
    return {
      ok: true,
      detail:
        `under the worker's git (${tool("hands_git")}) a job's nested fsmonitor read none of ${secrets.map(([l]) => l).join(", ")} and left no link; ` +
        `the worker's forge fmt showed none through .sol links; a job's environment holds no tools.env value`,
    };
  } finally {
    cleanup(made);
  }
}
