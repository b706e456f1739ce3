#!/usr/bin/env node
// A stand-in for the IMD worker (`imd`, npm package @identitymd/worker) for
// box's tests. It follows the real worker's public command-line contract: its
// help text, messages and exit codes, `imd tools` and tools.json, one runtime
// at a time, the unpaired/TTY rule, the --auto-update supervisor and exit 75,
// SIGTERM, and the doctor's line format. Read from the Identity-md/worker
// release (dist/cli.js, README.md, RELEASE_NOTES.md), facts only.
//
// It never uses the network. Where the real worker asks the control plane
// (pairing, unlink, the doctor's network checks, tasks), this one says what it
// skipped or settles it locally.
//
// features.json, written by tests/fake_worker/__init__.py, sets what a test needs:
//   runtimes      the runtime ids it knows (the real worker: claude, codex)
//   runtimeList   --runtime takes a comma list. No released worker does: this
//                 variant exists only so box's multi-runtime path can be tested.
//   tools         it has `imd tools` (older releases did not)
//   aliveSeconds  the period of the liveness line (the real one: 30 s)
// Test hook: IMD_FAKE_UPDATE_EXITS names a file holding a count N. A worker
// started with --auto-update that finds N > 0 writes N-1 and exits 75, as the
// real one does after installing an update.
// Test hook: SIGUSR2 to a running `imd start` (the worker, not its supervisor) is a
// crash: an error line and exit 3, as an uncaught error in the real one would be.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const packageDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"));
const features = readJson(path.join(packageDir, "features.json"));
const DAEMON_VERSION = readJson(path.join(packageDir, "build.json")).daemonVersion;
const RUNTIME_IDS = features.runtimes;
const HOME = process.env.IDENTITYMD_HOME ?? path.join(os.homedir(), ".identitymd");
const CONFIG = path.join(HOME, "config.json");
const TOOLS = process.env.IMD_TOOLS ?? path.join(HOME, "tools.json");
const TOOLS_ENV = path.join(HOME, "tools.env");
const UPDATE_RESTART_EXIT_CODE = 75;
const SUPERVISOR_PID = "IMD_UPDATE_SUPERVISOR_PID";
const SMOKE_PROMPT = "Reply with the single word OK. Use no tools and change nothing.";
const defaultServer = () => process.env.IDENTITYMD_SERVER ?? "https://api.imd.fun";

const out = (text) => process.stdout.write(text);
const fail = (line) => {
  process.stderr.write(`${line}\n`);
  return 1;
};
const log = (message, level = "info") =>
  (level === "warn" ? process.stderr : process.stdout).write(`${new Date().toISOString()} ${message}\n`);
const firstLine = (text) => (String(text ?? "").split("\n").find((l) => l.trim()) ?? "").trim();
const hex = (bytes) => randomBytes(bytes).toString("hex");

// ------------------------------------------------------------------ help
function usage() {
  const runtime = features.runtimeList
    ? [
        `  --runtime <id,...>   which agents run tasks here, comma separated: ${RUNTIME_IDS.join(" or ")}.`,
        "                       (Only this test stand-in takes a list.) This machine",
        "                       then advertises the ones it was told to use.",
      ]
    : [
        `  --runtime <id>       which agent runs tasks here: ${RUNTIME_IDS.join(" or ")}. Default:`,
        "                       the first of those that is installed, so a machine with",
        "                       both runs claude. This machine then advertises only the",
        "                       one it was told to use.",
      ];
  const tools = [
    "  imd tools    Tools installed here that skills may ask for: an image generator, a",
    "               video encoder, an RPC client with your own key. Your keys never leave",
    "               this machine; the network learns only the tool's name.",
    "               imd tools                 list configured tools and whether each is ready",
    "               imd tools add             add one, question by question (asks the server what it offers)",
    "               imd tools add <id> --command </abs/path> [--arg X ...] [--env NAME ...]",
    "                                         [--probe X ...] [--enable method ...]   the same, in one line",
    "               imd tools key <NAME>      store a key's value on this machine, typed without echo",
    "               imd tools forget <NAME>   remove a stored value",
    "               imd tools remove <id>",
  ];
  return [
    `imd — IdentityMD contributor daemon (v${DAEMON_VERSION})`,
    "",
    "  imd start    Connect and make this machine available for work.",
    "               Pairs first if this machine is not yet authorized.",
    "  imd service  Run in the background and start at login/boot.",
    "               imd service install [--boot] [--auto-update]",
    "               imd service restart [--runtime claude|codex]",
    "               imd service status|logs|start|stop|uninstall",
    "  imd pair     Authorize this machine with the wallet that owns your NFT",
    "  imd status   Show configuration, detected agent runtimes, and eligibility",
    "  imd doctor   Check this machine end to end — git, forge, tools, a one-line",
    "               run on the agent runtime, the control plane — and ask the",
    "               network why this device is or is not being offered work.",
    "  imd unlink   Retire this machine, freeing its NFT to be paired elsewhere",
    "  imd whoami   Print this machine's device key",
    "  imd skills   What this machine will run. Everything, unless you say otherwise.",
    ...(features.tools ? tools : []),
    "  imd update   Install the latest GitHub release, or update a source checkout",
    "",
    "Options:",
    `  --server <url>       control plane to join (default: ${defaultServer()})`,
    "  --concurrency <1-4>  how many tasks this machine runs at once",
    ...runtime,
    "  --auto-update        check for updates, finish accepted work, then install",
    "                       and restart. Recommended for every unattended worker;",
    "                       off unless given, and never over local source changes.",
    "",
    `Configuration lives at ${CONFIG} (owner-readable only).`,
    "",
  ].join("\n");
}

// ------------------------------------------------------------------ config
function readConfig() {
  try {
    return readJson(CONFIG);
  } catch (error) {
    if (error.code === "ENOENT") return null;
    throw error;
  }
}
function writeConfig(config) {
  fs.mkdirSync(HOME, { recursive: true, mode: 0o700 });
  fs.writeFileSync(CONFIG, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
}
// The real device key is an ed25519 pair; random hex of the same length stands in.
function ensureConfig(server) {
  const config = readConfig();
  if (config) return config;
  const fresh = { server, deviceKey: hex(32), devicePrivateKey: hex(32), maxConcurrency: 2, skillsOptOut: [] };
  writeConfig(fresh);
  return fresh;
}

// ------------------------------------------------------------------ runtimes
function runtimeFlag(value) {
  if (value === undefined) return { ids: undefined };
  const ids = features.runtimeList ? value.split(",") : [value];
  if (ids.some((id) => !RUNTIME_IDS.includes(id))) {
    const what = features.runtimeList ? "a comma list of" : "one of";
    return { error: `--runtime must be ${what}: ${RUNTIME_IDS.join(", ")}` };
  }
  return { ids };
}

function probeRuntime(id) {
  const bin = process.env[`IDENTITYMD_${id.toUpperCase()}_BIN`] ?? id;
  const run = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 10_000 });
  if (run.error?.code === "ENOENT") return { id, bin, available: false, detail: `${bin} is not on PATH` };
  if (run.error || run.status !== 0) {
    return { id, bin, available: false, detail: `${bin} failed to start: ${firstLine(run.error?.message ?? run.stderr)}` };
  }
  return { id, bin, available: true, version: firstLine(run.stdout) };
}

// The runtimes asked for (or the first installed one) and whether all of them are usable.
function selectRuntimes(wanted) {
  const probes = RUNTIME_IDS.map(probeRuntime);
  const usable = probes.filter((p) => p.available);
  const chosen = wanted ? usable.filter((p) => wanted.includes(p.id)) : usable.slice(0, 1);
  const ok = wanted ? chosen.length === wanted.length : chosen.length > 0;
  return { probes, usable, chosen: ok ? chosen : [] };
}

function printRuntimes(probes, chosen) {
  const inUse = new Set(chosen.map((p) => p.id));
  for (const p of probes) {
    const mark = p.available ? (inUse.has(p.id) ? "→" : "✓") : "✗";
    out(`  ${mark} ${p.id.padEnd(7)} ${p.available ? p.version : p.detail}\n`);
  }
  out(chosen.length ? `\n  tasks run on: ${[...inUse].join(", ")}\n` : "\n  no usable runtime on this machine\n");
  out(`  offers: ${chosen.length ? "code, research" : "nothing"}\n`);
}

// ------------------------------------------------------------------ tools
const TOOL_ID = /^[a-z][a-z0-9_-]{0,63}$/;
const ENV_NAME = /^[A-Z][A-Z0-9_]*$/;
const METHOD = /^[A-Za-z0-9_-]+$/;

// The real worker validates with zod and prints its issue list; this keeps the
// shape (a JSON list of issues with a path and a message), not every field.
function toolIssues(tool) {
  const issues = [];
  const issue = (field, message) => issues.push({ code: "invalid", path: [field], message });
  if (!TOOL_ID.test(tool.id)) issue("id", `Invalid string: must match pattern ${TOOL_ID}`);
  if (!tool.command || tool.command.length > 1024) issue("command", "tool command must be 1 to 1024 characters");
  else if (!path.isAbsolute(tool.command)) issue("command", "tool command must be absolute");
  if (tool.args.length > 32 || tool.args.some((a) => a.length > 2048)) issue("args", "at most 32 args of 2048 characters");
  if (tool.envVars.length > 16) issue("envVars", "at most 16 variables");
  for (const name of tool.envVars) if (!ENV_NAME.test(name)) issue("envVars", `Invalid string: must match pattern ${ENV_NAME}`);
  if (tool.probeArgs.length > 32 || tool.probeArgs.some((a) => a.length > 2048)) issue("probeArgs", "at most 32 args of 2048 characters");
  if (tool.enabledTools.length < 1 || tool.enabledTools.length > 64) issue("enabledTools", "1 to 64 methods");
  for (const m of tool.enabledTools) if (!METHOD.test(m)) issue("enabledTools", `Invalid string: must match pattern ${METHOD}`);
  return issues;
}

function readTools() {
  let tools;
  try {
    tools = readJson(TOOLS);
  } catch (error) {
    if (error.code === "ENOENT") return [];
    throw error;
  }
  // As the real one: at most 32 tools and no duplicate id, checked when the file is read.
  if (!Array.isArray(tools) || tools.length > 32) throw new Error(`${TOOLS}: at most 32 tools, as a JSON list`);
  const issues = tools.flatMap(toolIssues);
  if (issues.length) throw new Error(JSON.stringify(issues, null, 2));
  if (new Set(tools.map((t) => t.id)).size !== tools.length) throw new Error("duplicate installed tool id");
  return tools;
}
function writeTools(tools) {
  fs.mkdirSync(path.dirname(TOOLS), { recursive: true, mode: 0o700 });
  fs.writeFileSync(TOOLS, `${JSON.stringify(tools, null, 2)}\n`, { mode: 0o600 });
}
function readToolsEnv() {
  let text = "";
  try {
    text = fs.readFileSync(TOOLS_ENV, "utf8");
  } catch {}
  const values = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m) values[m[1]] = m[2];
  }
  return values;
}

// Ready means: every variable it needs is set, and its probe (the command with
// probeArgs, in /, with a scrubbed environment) exits 0 within 5 s.
function probeTool(tool) {
  const env = { CI: "1", NO_COLOR: "1", FOUNDRY_OFFLINE: "true" };
  for (const name of ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM", "SHELL"]) {
    if (process.env[name]) env[name] = process.env[name];
  }
  const run = spawnSync(tool.command, tool.probeArgs, { cwd: "/", env, timeout: 5000, stdio: "ignore" });
  return !run.error && run.status === 0;
}
function toolStatuses() {
  const stored = readToolsEnv();
  return readTools().map((tool) => {
    const missing = tool.envVars.filter((name) => !process.env[name] && !stored[name]);
    return { tool, missing, probed: missing.length ? null : probeTool(tool) };
  });
}

function tools(argv) {
  const [action, id, ...rest] = argv;
  if (!action || action === "list") {
    const statuses = toolStatuses();
    if (!statuses.length) {
      out(`no tools configured (${TOOLS}).\n\n  a tool is a stdio MCP server already installed on this machine. add one with\n`);
      out("  imd tools add image --command /opt/imd-tools/image-server --env IMAGE_PROVIDER_API_KEY --enable generate\n");
      out("  the key's name is recorded; its value stays in your shell and never leaves this machine.\n");
      return 0;
    }
    out(`${statuses.length} tool(s) configured in ${TOOLS}\n\n`);
    for (const { tool, missing, probed } of statuses) {
      const state = missing.length
        ? `not ready — set ${missing.join(", ")}`
        : probed
          ? "ready"
          : `not ready — ${tool.command} did not answer its probe`;
      out(`  ${tool.id.padEnd(12)} ${state}\n  ${"".padEnd(12)} ${tool.command} ${tool.args.join(" ")}\n`);
    }
    out("\nready tools are advertised by `imd start`; the network learns their ids and nothing else.\n");
    return 0;
  }
  if (action === "add") {
    if (!id) return fail("imd tools add: the stand-in has no wizard (the real one asks question by question)");
    // strict: an unknown option or a stray word (`-- CMD`) throws node's own error.
    const { values } = parseArgs({
      args: rest,
      options: {
        command: { type: "string" },
        arg: { type: "string", multiple: true },
        env: { type: "string", multiple: true },
        probe: { type: "string", multiple: true },
        enable: { type: "string", multiple: true },
      },
      strict: true,
    });
    if (!values.command) return fail("a tool needs --command, the absolute path of an installed stdio MCP server");
    if (!values.enable?.length) {
      return fail("a tool needs at least one --enable <method>, the MCP method names an assignment may call");
    }
    const tool = {
      id,
      command: values.command,
      args: values.arg ?? [],
      envVars: values.env ?? [],
      probeArgs: values.probe ?? ["--version"],
      enabledTools: values.enable,
    };
    const issues = toolIssues(tool);
    if (issues.length) return fail(`refused: ${JSON.stringify(issues, null, 2)}`);
    // The same id again replaces the entry; the list stays sorted by id.
    const others = readTools().filter((t) => t.id !== id);
    writeTools([...others, tool].sort((a, b) => a.id.localeCompare(b.id)));
    const status = toolStatuses().find((s) => s.tool.id === id);
    out(`${id} configured in ${TOOLS}\n`);
    if (tool.envVars.length) {
      out(`  needs ${tool.envVars.join(", ")} set in the shell that runs \`imd start\`. the names are stored; the values stay on this machine.\n`);
    }
    if (status.missing.length) out(`  not ready yet: ${status.missing.join(", ")} is not set here\n`);
    else if (!status.probed) out(`  not ready yet: ${tool.command} did not answer its probe (${tool.probeArgs.join(" ")})\n`);
    else out("  ready — restart `imd start` to advertise it\n");
    return 0;
  }
  if (action === "remove") {
    if (!id) return fail("usage: imd tools remove <id>");
    const configured = readTools();
    const kept = configured.filter((t) => t.id !== id);
    if (kept.length === configured.length) {
      out(`${id} was not configured\n`);
      return 1;
    }
    writeTools(kept);
    out(`${id} removed — restart \`imd start\` to stop advertising it\n`);
    return 0;
  }
  if (action === "key" || action === "forget") return notHere(`tools ${action}`);
  return fail(`unknown: imd tools ${action}`);
}

// ------------------------------------------------------------------ doctor
function formatCheck(check) {
  const mark = check.ok === true ? "✓" : check.ok === false ? "✗" : "·";
  let text = `  ${mark} ${check.name.padEnd(11)} ${check.detail}\n`;
  if (check.ok === false && check.fix) text += `${" ".repeat(16)}fix: ${check.fix}\n`;
  return text;
}

function checkCommand(name, command, fix) {
  const run = spawnSync(command, ["--version"], { encoding: "utf8", timeout: 10_000 });
  if (!run.error && run.status === 0) return { name, ok: true, detail: firstLine(run.stdout).slice(0, 64) };
  const detail = run.error?.code === "ENOENT" ? `${command} is not on PATH` : `${command} failed to start`;
  return { name, ok: false, detail, ...(fix ? { fix } : {}) };
}

// The real one runs each CLI its own way (claude -p … stream-json, codex exec …), and so does
// this one: Codex as the worker's CodexRuntime calls it (its options, the prompt last), which the
// box's Codex room takes alone; the stand-in agents answer either.
function promptArgs(runtime, workspace, prompt) {
  if (runtime.id !== "codex") return ["-p", prompt];
  return ["exec", "--json", "--sandbox", "workspace-write", "-C", workspace, "--skip-git-repo-check", "--ignore-rules", "--ignore-user-config", prompt];
}

function smokeRun(runtime, workRoot) {
  fs.mkdirSync(workRoot, { recursive: true });
  const workspace = fs.mkdtempSync(path.join(workRoot, "doctor-"));
  const started = Date.now();
  try {
    const run = spawnSync(runtime.bin, promptArgs(runtime, workspace, SMOKE_PROMPT), { cwd: workspace, encoding: "utf8", timeout: 90_000 });
    const name = `${runtime.id} run`;
    if (run.error?.code === "ETIMEDOUT") {
      return { name, ok: false, detail: "no answer within 90s", fix: `run \`${runtime.id}\` by hand once; a first run may be waiting on a prompt only a terminal can answer` };
    }
    if (!run.error && run.status === 0) return { name, ok: true, detail: `answered in ${((Date.now() - started) / 1000).toFixed(1)}s` };
    const detail = firstLine(run.stderr || run.stdout) || `${runtime.id} ended with exit ${run.status}`;
    return { name, ok: false, detail, fix: `run \`${runtime.id}\` by hand and read its error` };
  } finally {
    fs.rmSync(workspace, { recursive: true, force: true });
  }
}

// "imd doctor adds a sandbox check per installed runtime" (release notes, 0.1.2): a run of the
// runtime, as tasks run it, must read its workspace and must not read the worker's config (the
// device key). The real one asks its own sandbox (Claude's settings, Codex's --sandbox); this
// stand-in has none, so only a jail around the runtime (the box's) passes it.
const SANDBOX_CHECK = "imd sandbox check: read each file below";
function sandboxCheck(runtime, workRoot) {
  fs.mkdirSync(workRoot, { recursive: true });
  const workspace = fs.mkdtempSync(path.join(workRoot, "doctor-"));
  const own = path.join(workspace, "sandbox-probe");
  fs.writeFileSync(own, "probe\n");
  const name = `${runtime.id} jail`;
  try {
    const prompt = `${SANDBOX_CHECK}\n${CONFIG}\n${own}`;
    const run = spawnSync(runtime.bin, promptArgs(runtime, workspace, prompt), { cwd: workspace, encoding: "utf8", timeout: 90_000 });
    const said = String(run.stdout ?? "").split("\n");
    const fix = "run tasks only where the runtime's jail holds; a linked machine declines them otherwise";
    if (said.includes(`read ${CONFIG}`)) return { name, ok: false, detail: `a run reads ${CONFIG}`, fix };
    if (!said.includes(`read ${own}`)) {
      return { name, ok: false, detail: `a run cannot read its workspace: ${firstLine(run.stderr || run.stdout)}`, fix };
    }
    return { name, ok: true, detail: "a run reads its workspace, not the config" };
  } finally {
    fs.rmSync(workspace, { recursive: true, force: true });
  }
}

function checkWorkRoot(root) {
  try {
    fs.mkdirSync(root, { recursive: true });
    const probe = path.join(root, `.doctor-${process.pid}`);
    fs.writeFileSync(probe, "ok");
    fs.unlinkSync(probe);
    const stats = fs.statfsSync(root);
    const free = Number(stats.bavail) * Number(stats.bsize);
    const detail = `${root} · ${(free / 1024 ** 3).toFixed(1)} GB free`;
    if (free < 2 * 1024 ** 3) return { name: "work root", ok: false, detail, fix: "free some disk; a checkout with dependencies can need a few GB" };
    return { name: "work root", ok: true, detail };
  } catch (error) {
    return { name: "work root", ok: false, detail: `${root}: ${firstLine(error.message)}`, fix: "the daemon must be able to create and write files there" };
  }
}

function checkConfigMode() {
  const mode = fs.statSync(CONFIG).mode;
  if (mode & 0o077) {
    return { name: "config", ok: false, detail: `${CONFIG} is readable by other users (mode ${(mode & 0o777).toString(8)})`, fix: `chmod 600 ${CONFIG}` };
  }
  return { name: "config", ok: true, detail: `${CONFIG} · owner only` };
}

function doctor(runtimeValue) {
  const flag = runtimeFlag(runtimeValue);
  if (flag.error) return fail(flag.error);
  const config = readConfig();
  const workRoot = path.join(HOME, "work");
  out(`\nimd doctor · daemon ${DAEMON_VERSION}\n\n  config    ${CONFIG}\n`);
  if (config) {
    out(`  server    ${config.server}\n  device    ${config.deviceKey}\n`);
    out(`  token     ${config.tokenId ?? "not paired yet"}\n  capacity  ${config.maxConcurrency} concurrent task(s)\n`);
  } else {
    out("  state     not configured — run: imd start\n");
  }
  out("\n");
  const { probes, usable, chosen } = selectRuntimes(flag.ids);
  printRuntimes(probes, chosen);
  out("\n");
  if (usable.length) out(`  running a one-line prompt on ${usable.map((r) => r.id).join(" and ")}, which takes a few seconds…\n\n`);
  const inUse = new Set(chosen.map((r) => r.id));
  const runs = usable.map((r) => {
    const check = smokeRun(r, workRoot);
    // A runtime the worker does not run tasks on is shown, never counted.
    return inUse.has(r.id) ? check : { ...check, ok: null, detail: `${check.detail} · not used for tasks, so not counted` };
  });
  // Only where a config exists is there one to keep from a run.
  const jails = fs.existsSync(CONFIG) ? usable.filter((r) => inUse.has(r.id)).map((r) => sandboxCheck(r, workRoot)) : [];
  const toolChecks = toolStatuses().map(({ tool, missing, probed }) => ({
    name: `tool ${tool.id}`.slice(0, 11),
    ok: missing.length === 0 && probed === true,
    detail: missing.length ? `not advertised; ${missing.join(", ")} not set` : probed ? `ready · ${tool.command}` : `${tool.command} did not answer its probe`,
    ...(missing.length ? { fix: `imd tools key ${missing[0]}` } : probed ? {} : { fix: `run ${tool.command} ${tool.probeArgs.join(" ")} by hand` }),
  }));
  const forge = spawnSync("forge", ["--version"]).error
    ? { name: "forge", ok: true, detail: "not installed; no campaigns will be offered, which is fine" }
    : checkCommand("forge", "forge");
  const checks = [
    checkCommand("git", "git", "install git; every task is a checkout"),
    forge,
    ...toolChecks,
    ...(usable.length ? runs : [{ name: "runtime", ok: false, detail: "no usable agent runtime", fix: "install Claude Code or the Codex CLI and sign in" }]),
    ...jails,
    checkWorkRoot(workRoot),
    config ? checkConfigMode() : { name: "config", ok: false, detail: "none yet", fix: "run `imd start`" },
  ];
  for (const check of checks) out(formatCheck(check));
  if (config) {
    // The real one now checks plane, release, socket and github, then asks the
    // network about this device. The stand-in skips the first and answers the
    // enrollment itself, from its local pairing.
    out(`\n${formatCheck({ name: "plane", ok: null, detail: "not asked: this stand-in never uses the network" })}`);
    const enrollment = config.tokenId
      ? { name: "enrollment", ok: true, detail: `active · token ${config.tokenId} · agent ${config.tokenId}` }
      : { name: "enrollment", ok: false, detail: "this device has never paired here", fix: "run `imd start` to pair" };
    out(`\n  the network says\n${formatCheck(enrollment)}`);
    checks.push(enrollment);
  }
  const failed = checks.filter((c) => c.ok === false);
  out(
    failed.length === 0
      ? "\n  everything checks out. If the network is quiet, so is this machine.\n\n"
      : `\n  ${failed.length} thing${failed.length === 1 ? "" : "s"} to fix: ${failed.map((c) => c.name).join(", ")}\n\n`,
  );
  return failed.length === 0 ? 0 : 1;
}

// ------------------------------------------------------------------ pair, unlink, status, whoami
function pairLocally(config) {
  const paired = { ...config, wallet: `0x${hex(20)}`, tokenId: String(randomInt(1, 10_000)) };
  writeConfig(paired);
  return paired;
}

function pair(server) {
  const config = ensureConfig(server ?? readConfig()?.server ?? defaultServer());
  const code = hex(4).toUpperCase();
  out(
    [
      "",
      `  Server  ${new URL(config.server).host}`,
      `  Device  ${config.deviceKey.slice(0, 24)}…`,
      `  Code    ${code}`,
      "",
      "  Open this in a browser with the wallet that owns your IdentityMD NFT:",
      "",
      `    ${config.server}/pair?code=${code}`,
      "",
      "  Waiting… the code expires in about 10 minutes.",
      "",
      "",
    ].join("\n"),
  );
  // The real worker now polls the server every 3 s until the wallet signs in the
  // browser. The stand-in cannot reach a server: the code counts as signed at once.
  const paired = pairLocally(config);
  out(`  Paired. Token ${paired.tokenId} authorizes this machine.\n`);
  out(`  Registered as ERC-8004 agent #${paired.tokenId}.\n  Run: imd start\n\n`);
  return 0;
}

function unlink() {
  const config = readConfig();
  if (!config) return fail("not configured — nothing to unlink");
  // The real one asks the server to revoke the enrollment; here, a token means there was one.
  const revoked = Boolean(config.tokenId);
  const { wallet, tokenId, ...kept } = config;
  writeConfig(kept);
  out(
    revoked
      ? "\n  Unlinked. That NFT can now be paired to another machine.\n  This machine keeps its device key; run `imd start` to pair it again.\n\n"
      : "\n  Nothing was linked on the server. Local binding cleared.\n\n",
  );
  return 0;
}

function status() {
  const config = readConfig();
  const { probes, chosen } = selectRuntimes(undefined);
  out(`\n  config    ${CONFIG}\n`);
  if (!config) {
    out("  state     not configured — run: imd pair --server <url>\n\n");
    printRuntimes(probes, chosen);
    return 1;
  }
  out(`  server    ${config.server}\n  device    ${config.deviceKey}\n  token     ${config.tokenId ?? "not paired yet"}\n`);
  out(`  capacity  ${config.maxConcurrency} concurrent task(s)\n\n`);
  printRuntimes(probes, chosen);
  // The real one asks the server about eligibility; the stand-in reaches none.
  out(`\n  server    unreachable at ${config.server}\n\n`);
  return 0;
}

function whoami() {
  const config = readConfig();
  if (!config) return fail("not configured — run: imd pair --server <url>");
  out(`${config.deviceKey}\n`);
  return 0;
}

// ------------------------------------------------------------------ start
function takeFakeUpdate() {
  const counter = process.env.IMD_FAKE_UPDATE_EXITS;
  if (!counter || !fs.existsSync(counter)) return false;
  const left = Number.parseInt(fs.readFileSync(counter, "utf8"), 10) || 0;
  if (left <= 0) return false;
  fs.writeFileSync(counter, `${left - 1}\n`);
  return true;
}

// Test hook: a file `fake-slow-stop` in IDENTITYMD_HOME holding N makes the next
// shutdown take N seconds (a worker finishing a task); it is used up at once.
function takeSlowStop() {
  const file = path.join(HOME, "fake-slow-stop");
  try {
    const seconds = Number.parseInt(fs.readFileSync(file, "utf8"), 10) || 0;
    fs.unlinkSync(file);
    return Math.min(Math.max(seconds, 0), 25);
  } catch {
    return 0;
  }
}

async function start(values) {
  const flag = runtimeFlag(values.runtime);
  if (flag.error) return fail(flag.error);
  let config = ensureConfig(values.server ?? readConfig()?.server ?? defaultServer());
  if (values.concurrency) {
    const parsed = Number.parseInt(values.concurrency, 10);
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > 4) return fail("--concurrency must be between 1 and 4");
    config = { ...config, maxConcurrency: parsed };
    writeConfig(config);
  }
  const { probes, usable, chosen } = selectRuntimes(flag.ids);
  if (!chosen.length) {
    process.stderr.write(
      flag.ids
        ? `--runtime ${values.runtime} was asked for, but it is not usable on this machine.\n`
        : "no usable agent runtime found. Install Claude Code or the Codex CLI and sign in, then retry.\n",
    );
    for (const p of probes) process.stderr.write(`  ${p.id}: ${p.available ? p.version : p.detail}\n`);
    return 1;
  }
  const using = chosen.map((r) => r.id).join(", ");
  log(`runtimes: ${usable.map((r) => `${r.id} ${r.version}`).join(", ")} (using ${using}${flag.ids ? ", as asked" : ""})`);
  if (!config.tokenId) {
    if (!process.stdout.isTTY) return fail("this machine is not paired yet. Run `imd pair` from an interactive shell.");
    log("this machine is not paired yet — starting pairing");
    config = pairLocally(config);
    log(`paired to token ${config.tokenId}`);
  }
  const ready = toolStatuses().filter((s) => s.probed === true);
  if (ready.length) log(`tools advertised: ${ready.map((s) => s.tool.id).join(", ")}`);
  // Here the real worker connects to the control plane and takes tasks.
  if (values["auto-update"]) {
    log("automatic updates enabled; checking GitHub releases now and every five minutes");
    if (takeFakeUpdate()) {
      log(`updated ${DAEMON_VERSION} → ${DAEMON_VERSION} (the stand-in's test hook: nothing was downloaded)`);
      return UPDATE_RESTART_EXIT_CODE; // no "shutting down" on this path, as in the real one
    }
  }
  const startedAt = Date.now();
  const liveness = setInterval(() => {
    log(`alive ${Math.floor((Date.now() - startedAt) / 60_000)}m · idle · 0 submitted`);
  }, (features.aliveSeconds ?? 30) * 1000);
  return new Promise((resolve) => {
    const shutdown = () => {
      log("shutting down");
      clearInterval(liveness);
      const seconds = takeSlowStop();
      setTimeout(() => resolve(0), seconds * 1000);
    };
    process.once("SIGINT", shutdown);
    process.once("SIGTERM", shutdown);
    process.once("SIGUSR2", () => {
      process.stderr.write("Error: the stand-in crashed (SIGUSR2, its test hook)\n");
      process.exit(3);
    });
  });
}

// --auto-update outside supervision: run the worker as a child and start it
// again when it exits 75 (an update was installed), at most 3 times a minute.
function isSupervisedWorker() {
  return typeof process.send === "function" && process.env[SUPERVISOR_PID] === String(process.ppid);
}

function superviseWorker() {
  const say = (line) => process.stderr.write(`${line}\n`);
  const args = [...process.execArgv, ...process.argv.slice(1)];
  const env = { ...process.env, [SUPERVISOR_PID]: String(process.pid) };
  const recentRestarts = [];
  let child;
  let stopping;
  // SIGINT/SIGTERM go to the worker; SIGKILL if it has not exited 30 s later.
  const stop = (signal) => {
    if (stopping) return;
    stopping = signal;
    child?.kill(signal);
    setTimeout(() => child?.kill("SIGKILL"), 30_000).unref();
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  const runOnce = () =>
    new Promise((resolve) => {
      child = spawn(process.execPath, args, { env, stdio: ["inherit", "inherit", "inherit", "ipc"] });
      child.once("error", (error) => {
        say(`could not launch the worker: ${error.message}`);
        resolve(1);
      });
      child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 + os.constants.signals[signal] : 1)));
    });
  return (async () => {
    while (!stopping) {
      const code = await runOnce();
      child = undefined;
      if (stopping) break;
      if (code !== UPDATE_RESTART_EXIT_CODE) return code;
      const now = Date.now();
      while (recentRestarts.length && recentRestarts[0] < now - 60_000) recentRestarts.shift();
      if (recentRestarts.length >= 3) {
        say("worker requested repeated update restarts; stopping so you can inspect the installation");
        return 1;
      }
      recentRestarts.push(now);
      say("update installed; restarting the worker with the same start options");
    }
    return 128 + os.constants.signals[stopping];
  })();
}

// ------------------------------------------------------------------ main
function notHere(command) {
  return fail(`imd ${command}: not in this stand-in (tests/fake_worker); the real worker has it`);
}

async function main(argv) {
  const command = argv[0];
  if (command === "service") return notHere("service");
  // Flags are read after the command word only: `imd --version` is an unknown command.
  const { values } = parseArgs({
    args: argv.slice(1),
    options: {
      server: { type: "string" },
      concurrency: { type: "string" },
      runtime: { type: "string" },
      "auto-update": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: false,
  });
  if (values.help || !command || command === "help") {
    out(usage());
    return command ? 0 : 1;
  }
  switch (command) {
    case "pair":
      return pair(values.server);
    case "start":
      if (values["auto-update"] === true && !isSupervisedWorker()) return superviseWorker();
      return start(values);
    case "status":
      return status();
    case "doctor":
      return doctor(values.runtime);
    case "unlink":
      return unlink();
    case "whoami":
      return whoami();
    case "tools":
      if (features.tools) return tools(argv.slice(1));
      break;
    case "skills":
    case "update":
      return notHere(command);
  }
  process.stderr.write(`unknown command: ${command}\n\n${usage()}`);
  return 1;
}

main(process.argv.slice(2))
  .then((code) => process.exit(code))
  .catch((error) => {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  });
