// box check's probe, the Claude login (line 25): no job's jail holds the owner's Claude login. A
// job's Claude Code holds a sentinel of its run's, which the login broker (worker/broker) swaps
// for the owner's token on the way to Anthropic.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { cfg, tool, shipped, short, run, unusable } from "./base.mjs";
import { CANARY, CLAUDE_SENTINEL, claudeLogin, letLoginGo, makeDirs, readRegular, secretPaths } from "./home.mjs";
import { inAJobsJail } from "./jobs.mjs";

export const MADE_LOGIN = [];
const END = "IMD-LOGIN-END";

/** What the broker says of itself (worker/broker/ask, outside every jail): {mode, problem, ...}. */
async function brokerStatus() {
  const r = await run(tool("broker_ask"), ["status"]);
  if (r.code !== 0) return { why: unusable("worker/broker/ask", r) || short(r.err, 120) || `worker/broker/ask exited ${r.code}` };
  try {
    return JSON.parse(r.out);
  } catch {
    return { why: `it answered ${short(r.out, 60)}` };
  }
}

// In a job's jail, outside Claude's sandbox: the login it holds, what a CONNECT through the
// broker reaches, and the owner's login's use (login.sh says what).
const LOOK = shipped("login.sh");

/** A listener on the box's loopback that counts who reached it. */
function listener() {
  return new Promise((resolve) => {
    const reached = { count: 0 };
    const server = net.createServer((socket) => {
      reached.count += 1;
      socket.destroy();
    });
    server.listen(0, "127.0.0.1", () => resolve({ server, port: server.address().port, reached }));
  });
}

/** The broker's CONNECT proxy, from the box (box shell's way), asked for the box's loopback:
 * its answer's first line and body. */
function connectThrough(port, target) {
  return new Promise((resolve) => {
    let text = "";
    const socket = net.connect(port, "127.0.0.1", () => socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`));
    const done = () => resolve(text);
    socket.setTimeout(3000, () => socket.destroy());
    socket.on("data", (d) => {
      text += d;
      if (/\r\n\r\n/.test(text) && !/^HTTP\/1\.1 403/.test(text)) socket.destroy();
    });
    socket.on("error", (e) => {
      text ||= `(${e.code})`;
      done();
    });
    socket.on("close", done);
  });
}

export async function loginBroker() {
  try {
    return await judged();
  } finally {
    letLoginGo();
  }
}

async function judged() {
  for (const name of ["jail", "sh"]) if (!fs.existsSync(tool(name))) return { ok: false, detail: `${tool(name)} is missing from the box` };
  let kind, owner, text;
  const node = path.join(secretPaths().workRoot, `${CANARY}-login`, "node");
  try {
    // Where the box keeps it (the broker's), whatever the worker's CLAUDE_CONFIG_DIR says.
    kind = claudeLogin(cfg.broker.login);
    text = readRegular(cfg.broker.login).toString("utf8");
    try {
      owner = JSON.parse(text).claudeAiOauth || {};
    } catch {
      owner = {}; // not a login Claude Code wrote: the broker stands in for none
    }
    fs.rmSync(path.dirname(node), { recursive: true, force: true }); // a check cut off before its clean-up
    makeDirs(node, MADE_LOGIN);
  } catch (e) {
    return { ok: false, detail: `cannot set up the test (${e.kind ? e.message : e.code || short(e.message, 60)}): nothing proved` };
  }
  const box = await listener();
  const [jail, args, opts] = inAJobsJail(node, tool("sh"), "-c", LOOK, "login", kind, String(cfg.broker.port), String(box.port), END);
  const r = await run(jail, args, opts);
  const fromTheBox = await connectThrough(cfg.broker.port, `127.0.0.1:${box.port}`);
  box.server.close();
  const why = unusable("a job's jail", r);
  if (why) return { ok: false, detail: why };
  if (!r.out.includes(END)) return { ok: false, detail: `a job's jail did not start (exit ${r.code}: ${short(r.err || r.out, 160)})` };
  const [held, after] = r.out.split(END);
  const status = await brokerStatus();
  const label = kind === "real" ? "the owner's Claude login" : "a Claude login (canary)";
  const bad = [];
  const tokens = [owner.accessToken, owner.refreshToken].filter(Boolean);
  const leaked = tokens.length ? tokens.some((t) => held.includes(t)) : text.trim() !== "" && held.includes(text.trim());
  if (leaked) {
    bad.push(
      `a job's jail holds ${label}` +
        (status.mode === "jail" ? " (the box was started with IMD_BOX_LOGIN=jail, the owner's choice: start it without)" : ""),
    );
  } else if (tokens.length && !held.includes(CLAUDE_SENTINEL)) bad.push(`a job's jail holds no stand-in of ${label}: its Claude Code is logged out`);
  if (status.why) bad.push(`the login broker does not answer (${status.why})`);
  else if (status.problem) bad.push(`the login broker: ${short(status.problem, 200)}`);
  const tunnels = [...r.out.matchAll(/^tunnel (\S+)$/gm)].map((m) => m[1]);
  if (tunnels.length) bad.push(`a job's CONNECT through the broker (${tunnels.join(", ")}) REACHED the box's loopback`);
  if (/^HTTP\/1\.1 200/.test(fromTheBox)) bad.push("the broker's proxy TUNNELS to the box's loopback");
  else if (!status.why && !(/^HTTP\/1\.1 403/.test(fromTheBox) && fromTheBox.includes("the box's loopback")))
    bad.push(`the broker's proxy did not refuse the box's loopback by name (it answered ${short(fromTheBox, 80) || "nothing"})`);
  else if (box.reached.count && !tunnels.length) bad.push("something REACHED the probe's listener on the box's loopback");
  const profile = /profile (\d+)/.exec(after || "")?.[1];
  if (kind === "real" && tokens.length && profile !== "200")
    bad.push(`Anthropic answered a job's request through the broker with ${profile || short(after, 80)} (the account's profile): run 'claude' in 'box shell' and log in again`);
  if (bad.length) return { ok: false, detail: bad.join("; ") };
  const loopback = "; a job's CONNECT through the broker to the box's loopback reached nothing, and the broker refuses it by name";
  if (!tokens.length) return { ok: true, detail: `${cfg.broker.login} holds no login Claude Code wrote, and no job's jail holds it${loopback}` };
  return {
    ok: true,
    detail:
      `a job's jail holds a sentinel of its run's, not ${label}, which the login broker holds` +
      (kind === "real" ? `; a request with it through the broker got the account's profile (200)` : "") +
      loopback,
  };
}
