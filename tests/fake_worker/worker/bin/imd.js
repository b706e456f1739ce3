#!/usr/bin/env node
// The fake IMD worker: the real one's commands and line shapes, no network.
// features.json (written by the test fixture) says which runtimes it knows and
// whether it has `imd tools add`.
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { execFileSync } = require("node:child_process");

const pkg = require("../package.json");
const features = require("../features.json");
const home = process.env.IDENTITYMD_HOME || path.join(os.homedir(), ".identitymd");
const configPath = path.join(home, "config.json");
const log = (msg) => console.log(`${new Date().toISOString()} ${msg}`);

function readConfig() {
  try {
    return JSON.parse(fs.readFileSync(configPath, "utf8"));
  } catch {
    return {};
  }
}
function writeConfig(cfg) {
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(configPath, JSON.stringify(cfg, null, 2) + "\n", { mode: 0o600 });
}
function option(args, name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}
function cliVersion(bin) {
  try {
    return execFileSync(bin, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}
const runtimeBin = { claude: "claude", codex: "codex", grok: "grok" };

function help() {
  const lines = [
    `imd ${pkg.version} — IdentityMD worker`,
    "",
    "Usage: imd <command> [options]",
    "",
    "Commands:",
    "  start [--auto-update] [--runtime <name>] [--concurrency <n>]   run the worker in the foreground",
    `      --runtime <${features.runtimes.join("|")}>   the agent runtime(s), comma separated`,
    "  status                 show pairing and connection state",
    "  doctor                 check this machine and say what to fix",
    "  pair                   pair this device with your wallet",
    "  unlink                 unlink this device and free its seat",
  ];
  if (features.tools) lines.push("  tools add <name> -- <command...>   register a stdio MCP tool for tasks");
  lines.push("  help                   this text");
  console.log(lines.join("\n"));
}

function doctor() {
  const cfg = readConfig();
  const runtime = (cfg.runtime || "claude").split(",");
  const checks = [[true, `Node.js ${process.version}`]];
  for (const r of runtime) {
    const v = cliVersion(runtimeBin[r] || r);
    checks.push([v !== null, v ? `runtime ${r}: ${v}` : `runtime ${r}: CLI not found — install it`]);
  }
  checks.push([Boolean(cfg.deviceId), cfg.deviceId ? `paired: device ${cfg.deviceId}` : "not paired — run `imd pair`"]);
  for (const [ok, text] of checks) console.log(`${ok ? "✓" : "✗"} ${text}`);
  const bad = checks.filter(([ok]) => !ok).length;
  console.log(bad ? `${bad} thing(s) to fix` : "all good");
  return bad ? 1 : 0;
}

function start(args) {
  const runtimes = option(args, "--runtime", "claude");
  const concurrency = Number(option(args, "--concurrency", "2"));
  for (const r of runtimes.split(",")) {
    if (!features.runtimes.includes(r)) {
      console.error(`${new Date().toISOString()} error: unknown runtime ${r} (this worker runs: ${features.runtimes.join(", ")})`);
      return 2;
    }
  }
  const cfg = readConfig();
  cfg.runtime = runtimes;
  writeConfig(cfg);
  log(`IdentityMD worker ${pkg.version} starting: runtime ${runtimes}, concurrency ${concurrency}, auto-update ${args.includes("--auto-update") ? "on" : "off"}`);
  log(cfg.deviceId ? `connected as device ${cfg.deviceId}; waiting for tasks` : "not paired: run `imd pair`; waiting");
  const timer = setInterval(() => log("idle: waiting for tasks"), 5000);
  const stop = (sig) => {
    log(`${sig}: finishing current work, then stopping`);
    clearInterval(timer);
    setTimeout(() => {
      log("stopped cleanly");
      process.exit(0);
    }, 200);
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  return null;
}

function main(argv) {
  const [cmd, ...args] = argv;
  switch (cmd) {
    case undefined:
    case "help":
    case "--help":
      help();
      return 0;
    case "--version":
      console.log(pkg.version);
      return 0;
    case "start":
      return start(args);
    case "doctor":
      return doctor();
    case "status": {
      const cfg = readConfig();
      console.log(`worker ${pkg.version}`);
      console.log(`paired: ${cfg.deviceId ? "yes (" + cfg.deviceId + ")" : "no"}`);
      console.log(`runtime: ${cfg.runtime || "claude"}`);
      return 0;
    }
    case "pair": {
      const cfg = readConfig();
      if (!cfg.deviceId) {
        cfg.deviceId = "dev-" + Math.random().toString(16).slice(2, 10);
        cfg.privateKey = require("node:crypto").randomBytes(32).toString("hex");
      }
      writeConfig(cfg);
      console.log(`✓ paired device ${cfg.deviceId}`);
      return 0;
    }
    case "unlink": {
      const cfg = readConfig();
      if (!cfg.deviceId) {
        console.log("nothing to unlink: this device is not paired");
        return 0;
      }
      const id = cfg.deviceId;
      delete cfg.deviceId;
      delete cfg.privateKey;
      writeConfig(cfg);
      console.log(`✓ unlinked device ${id}; its seat is free`);
      return 0;
    }
    case "tools": {
      if (!features.tools || args[0] !== "add") break;
      const sep = args.indexOf("--");
      const name = args[1];
      const command = sep >= 0 ? args.slice(sep + 1) : [];
      if (!name || command.length === 0) {
        console.error("usage: imd tools add <name> -- <command...>");
        return 2;
      }
      const cfg = readConfig();
      cfg.tools = { ...(cfg.tools || {}), [name]: { type: "stdio", command } };
      writeConfig(cfg);
      console.log(`✓ tool ${name} added (stdio: ${command.join(" ")})`);
      return 0;
    }
    default:
      break;
  }
  console.error(`unknown command: ${[cmd, ...args].join(" ")} (see imd help)`);
  return 2;
}

const code = main(process.argv.slice(2));
if (code !== null) process.exitCode = code;
