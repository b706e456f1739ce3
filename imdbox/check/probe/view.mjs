// box check's probe, the worker's view (line 24): what the worker can run and read there.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import fs from "node:fs";
import path from "node:path";
import { cfg, tool, shipped, HOME, run, short, unusable } from "./base.mjs";
import { CANARY, CLAUDE_SENTINEL, makeCanary, makeDirs, secretPaths } from "./home.mjs";
import { inAJobsJail } from "./jobs.mjs";

export const MADE_VIEW = [];

// Run in the worker's view in a job's node (view.sh says what it looks at).
const VIEW_SCRIPT = shipped("view.sh");
// From a job's jail: which processes of its arguments' (the door's, the broker's) it can signal.
const SIGNALS_SCRIPT = shipped("signals.sh");

// ------------------------------------------------------------------ the other side of its wall

// The box's own environment (worker/own.env), which every program of the box outside the view
// runs with, none of its caller's; bash adds its own few.
function ownEnvironment() {
  const own = new Map();
  for (const line of fs.readFileSync(cfg.own_env, "utf8").split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.indexOf("=");
    own.set(line.slice(0, i), line.slice(i + 1));
  }
  return own;
}
const BASHS_OWN = new Set(["SHLVL", "PWD", "OLDPWD", "_"]);

/** What of process `pid`'s environment is not the box's own: "NAME" (not in it) or "NAME=…"
 * (another value, or missing); null when it cannot be read (the process is gone). */
function notOwn(pid, own) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/environ`, "utf8");
  } catch {
    return null;
  }
  const env = new Map(text.split("\0").filter(Boolean).map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
  const wrong = [...env.keys()].filter((n) => !own.has(n) && !BASHS_OWN.has(n));
  for (const [name, value] of own) if (env.get(name) !== value) wrong.push(`${name}=${short(env.get(name) ?? "(none)", 40)}`);
  return wrong;
}

/** The box's processes whose command line `is` picks: [pid, argv]. */
function processes(is) {
  const found = [];
  for (const pid of fs.readdirSync("/proc").filter((d) => /^[0-9]+$/.test(d))) {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (argv.length && is(argv)) found.push([pid, argv]);
    } catch {}
  }
  return found;
}

/** A process's parent, as its /proc stat says it (after its name, which may hold anything). */
function parentOf(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1];
  } catch {
    return null;
  }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// What a worker would set in every call it makes through the door, and plant in the home, to
// run its own code in the box's programs outside the view: each writes a mark where it ran.
function hostileSetup(dir, made) {
  fs.rmSync(dir, { recursive: true, force: true });
  makeDirs(dir, made);
  made.push({ path: dir, tree: true });
  const mark = (what) => path.join(dir, `ran-${what}`);
  fs.writeFileSync(path.join(dir, "options.js"), `require("fs").writeFileSync(${JSON.stringify(mark("NODE_OPTIONS"))}, "");\n`);
  fs.writeFileSync(path.join(dir, "env.sh"), `: >${JSON.stringify(mark("BASH_ENV"))}\n`);
  fs.writeFileSync(path.join(dir, ".curlrc"), `output = "${mark("CURL_HOME")}"\n`);
  fs.writeFileSync(path.join(dir, "gitconfig"), `[core]\n\tpager = touch ${mark("GIT_CONFIG_GLOBAL")}\n`);
  const env = {
    PATH: cfg.path,
    HOME: dir,
    NODE_OPTIONS: `--require ${path.join(dir, "options.js")}`,
    BASH_ENV: path.join(dir, "env.sh"),
    CURL_HOME: dir,
    GIT_CONFIG_GLOBAL: path.join(dir, "gitconfig"),
  };
  // The home's own ~/.curlrc, where the worker would write it (never over one that is there).
  let curlrc = false;
  try {
    makeCanary(path.join(HOME, ".curlrc"), made, `output = "${mark("curlrc")}"\n`);
    curlrc = true;
  } catch {}
  const marks = () => fs.readdirSync(dir).filter((f) => f.startsWith("ran-")).map((f) => f.slice(4));
  return { env, curlrc, marks };
}

/** Line 24's other side: the door, the login broker and its supervisor run with the box's own
 * environment; a call through the door with the worker's variables (hostileSetup) reaches its
 * launcher without them (read while the call waits on a FIFO in its workspace) and the door
 * says it dropped those a job does not get (git's own setting goes on to git, in the jail); a
 * ~/.curlrc in the home (where none was) changes nothing `ask` does. {wrong, curlrc}. */
async function outsideTheView(node, made) {
  const own = ownEnvironment();
  const wrong = [];
  const door = tool("door");
  const kept = processes((a) => (a[0] === door && a[1] === "serve") || a.includes(cfg.broker.program));
  for (const [pid, argv] of kept) {
    const off = notOwn(pid, own);
    if (off?.length) wrong.push(`${short(argv.slice(0, 2).join(" "), 60)} (pid ${pid}) runs with ${off.join(", ")}`);
  }
  if (!kept.some(([, a]) => a.includes(cfg.broker.program))) wrong.push("no login broker is running");

  const hostile = hostileSetup(path.join(HOME, `${CANARY}-hostile`), made);
  // A node of its own: on one its last call found clear of links, the launcher would be gone
  // into the jail's bubblewrap (worker/jail.d/hands).
  node = path.join(path.dirname(node), "hostile");
  makeDirs(node, made);
  const fifo = path.join(node, "imd-box-check-hold");
  const fifoMade = await run("/usr/bin/mkfifo", ["-m", "600", fifo]);
  if (fifoMade.code !== 0) return { wrong: [...wrong, `no FIFO for the call (${short(fifoMade.err, 80)})`] };
  made.push({ path: fifo, tree: true });
  const call = run(door, ["call", "git", "-c", `alias.hold=!read -r _ <${fifo}`, "hold"], { env: hostile.env, cwd: node });
  let launcher = null;
  for (let i = 0; i < 100 && !launcher; i++) {
    // The call's launcher: the parent of the jail's bubblewrap, the jail's script as its
    // interpreter runs it (bash, the script, its arguments), started for the call or before it
    // (`jail --ready`, worker/door/ready.h).
    const jail = processes((a) => a[0] === "/usr/bin/bwrap" && a.includes("hold"))[0];
    const parent = jail ? parentOf(jail[0]) : null;
    launcher = processes((a) => a[1] === tool("jail")).find(([pid]) => pid === parent) || null;
    if (!launcher) await pause(30);
  }
  const off = launcher ? notOwn(launcher[0], own) : null;
  // Whatever was found, the call is let go.
  const release = fs.openSync(fifo, fs.constants.O_RDWR | fs.constants.O_NONBLOCK);
  fs.writeSync(release, "\n");
  const done = await call;
  fs.closeSync(release);
  if (!launcher) wrong.push(`no launcher of a call through the door was seen (exit ${done.code}: ${short(done.err, 80)})`);
  else if (off?.length) wrong.push(`a launcher of a call through the door runs with ${off.join(", ")}`);
  const said = /a job does not get the worker's ([^(]*)/.exec(done.err)?.[1] || "";
  const unsaid = ["NODE_OPTIONS", "BASH_ENV", "CURL_HOME"].filter((n) => !said.includes(n));
  if (launcher && unsaid.length) wrong.push(`the door did not say it dropped ${unsaid.join(", ")}`);

  const asked = await run(tool("broker_ask"), ["status"], { env: { PATH: cfg.path, HOME } });
  if (asked.code !== 0 || !asked.out.startsWith("{")) wrong.push(`broker/ask answered ${short(asked.out || asked.err, 80) || "nothing"}`);
  const ran = hostile.marks();
  if (ran.length) wrong.push(`the worker's ${ran.join(", ")} RAN outside the view`);
  return { wrong, curlrc: hostile.curlrc };
}

/** What the worker names, from the other side: no call through the door makes a place of one of
 * the box's own folders (a worker's own client would name them as a working directory, as this
 * one does by working there), and from a job's jail no process outside it (the door, the login
 * broker) can be signalled. What is wrong, as lines. */
async function namedByTheWorker(node) {
  const dirs = cfg.own_dirs.filter((dir) => fs.existsSync(dir));
  const wrong = cfg.own_dirs.filter((dir) => !dirs.includes(dir)).map((dir) => `${dir}, one of the box's own folders, is missing`);
  // One call from each folder, side by side (the door takes them so): refused before any git
  // runs, or git ran there (whatever it then said).
  const calls = await Promise.all(dirs.map((dir) => run(tool("door"), ["call", "git", "status", "--short"], { cwd: dir, env: { PATH: cfg.path, HOME } })));
  const ran = dirs.filter((_, i) => calls[i].code !== 70 || !calls[i].err.includes("is no folder the box keeps"));
  const first = calls[dirs.indexOf(ran[0])];
  if (ran.length) wrong.push(`the worker's git ran in ${ran.join(", ")}, the box's own folders (exit ${first.code}: ${short(first.err || first.out, 60)})`);
  const outside = processes((a) => (a[0] === tool("door") && a[1] === "serve") || a.includes(cfg.broker.program)).map(([pid]) => pid);
  const r = await run(...inAJobsJail(node, "/bin/bash", "-c", SIGNALS_SCRIPT, "signals", ...outside.map(String)));
  if (!r.out.includes("tried")) wrong.push(`no command ran in a job's jail (exit ${r.code}: ${short(r.err, 80)})`);
  const signalled = r.out.split("\n").filter((l) => l.startsWith("signalled "));
  if (signalled.length) wrong.push(`from a job's jail, ${signalled.length} of the door's and the login broker's processes can be signalled (${await landlockMissing()})`);
  return wrong;
}

// The worker's home, as a hostile release would write it for the owner's tools in box shell: each
// file, where it is read, says so.
const OWNERS_READS = [
  [".gitconfig", "[imdbox]\n\tcheck = worker-gitconfig\n"],
  [".inputrc", "set imdbox-check worker-inputrc\n"],
];
// As `box shell CMD` runs it: where the owner's tools look, and what they read.
const OWNERS_SCRIPT = shipped("owners.sh");

/** box shell's side (worker/owner/box-shell, as `box shell CMD` runs it): its home is not the
 * worker's, Claude Code's config is beside the login (not the worker's ~/.claude.json, where a
 * user MCP server would run), and a ~/.gitconfig and ~/.inputrc planted in the
 * worker's home (where none is) reach none of its tools. What is wrong, as lines. */
async function ownersShell(made) {
  for (const [file, text] of OWNERS_READS) {
    try {
      makeCanary(path.join(HOME, file), made, text);
    } catch {} // the worker's own, which says nothing of the owner's tools either way
  }
  const r = await run(tool("owner_shell"), ["/bin/bash", "-c", OWNERS_SCRIPT], { env: { PATH: cfg.path, HOME } });
  const said = (kind) => (new RegExp(`^${kind} (.*)$`, "m").exec(r.out) || [])[1];
  const wrong = [];
  if (r.code !== 0 || said("home") === undefined) return [`box shell did not run (exit ${r.code}: ${short(r.err, 80)})`];
  if (said("home") === HOME) wrong.push(`box shell's home is the worker's (${HOME})`);
  if (said("claude") !== path.dirname(cfg.broker.login)) wrong.push(`box shell's Claude Code reads its config from ${said("claude") ? said("claude") : `the worker's ${HOME}/.claude.json`}`);
  const read = [...r.out.matchAll(/worker-(\w+)/g)].map((m) => `~/.${m[1]}`);
  if (read.length) wrong.push(`box shell READ the worker's ${[...new Set(read)].join(", ")}`);
  return wrong;
}

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
  const r = await run(tool("view"), ["/bin/bash", "-c", VIEW_SCRIPT, "view", tool("door"), canary, root, CLAUDE_SENTINEL, ...paths], { cwd: node });
  const why = unusable("the worker's view", r);
  if (why) return { ok: false, detail: why };
  // The view started the door and the broker, if no one had.
  const outside = await outsideTheView(node, MADE_VIEW);
  const outsideCurlrc = outside.curlrc;
  // Neither touches what the other looks at: side by side.
  const [named, owners] = await Promise.all([namedByTheWorker(node), ownersShell(MADE_VIEW)]);
  const lines = r.out.split("\n").filter(Boolean);
  const said = (kind) => lines.filter((l) => l.startsWith(`${kind} `)).map((l) => l.slice(kind.length + 1));
  const seen = Number(said("stand-ins")[0] || 0);
  const hand = said("hand")[0] || `nothing (exit ${r.code}: ${short(r.err, 80)})`;
  const wrong = [
    ...said("real").map((f) => `${f} is a real program there`),
    ...said("login").map((f) => `${f} is there`),
    ...(lines.includes("read the door") ? ["the door's /proc/<pid>/environ is readable there"] : []),
    ...(lines.includes("signalled the door") ? [`the door can be signalled from there (${await landlockMissing()})`] : []),
    ...(lines.includes("no door") ? ["no door is running"] : []),
    ...(hand === "jailed" ? [] : [`the worker's git ran ${hand === "unjailed" ? "outside a job's jail" : `as: ${short(hand, 80)}`}`]),
    ...(seen > 0 ? [] : [`no stand-in found (exit ${r.code}: ${short(r.err, 80)})`]),
    ...outside.wrong,
    ...named,
    ...owners,
  ];
  if (wrong.length) return { ok: false, detail: short(wrong.join("; "), 400) };
  return {
    ok: true,
    detail:
      `${seen} ways to start an agent CLI, git or forge all call the door; no login; ` +
      "the door's /proc and signals out of reach; the worker's git ran in a job's jail; " +
      "a call in the box's own folders refused, and from a job's jail no signal reaches the door or the login broker; " +
      "box shell has a home of its own and read none of the worker's ~/.gitconfig, ~/.inputrc or ~/.claude.json; " +
      "outside the view, the door, the login broker and a launcher called with the worker's NODE_OPTIONS, BASH_ENV, " +
      `CURL_HOME and GIT_CONFIG_GLOBAL run with the box's own environment${outsideCurlrc ? ", and a ~/.curlrc changes nothing" : ""}`,
  };
}

/** Why the view's Landlock domain does not scope signals: the kernel's ABI, from the door. */
async function landlockMissing() {
  const r = await run(tool("door"), ["landlock-abi"]);
  const abi = Number(r.out.trim());
  if (r.code !== 0 || !Number.isInteger(abi)) return "no Landlock";
  if (abi < 1) return "this kernel has no Landlock";
  if (abi < 6) return `this kernel's Landlock is ABI ${abi}, and scoping signals needs ABI 6 (Linux 6.12)`;
  return "no Landlock";
}
