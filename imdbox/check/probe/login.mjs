// box check's probe, the Claude login (line 25): no job's jail holds the owner's Claude login. A
// job's Claude Code holds a sentinel of its run's, which the login broker (worker/broker) swaps
// for the owner's token on the way to Anthropic.
// One script with the other parts when it runs (imdbox/check/runner.py probe_source).
import fs from "node:fs";
import path from "node:path";
import { cfg, tool, short, run, unusable } from "./base.mjs";
import { CANARY, CLAUDE_SENTINEL, claudeLogin, inAJobsJail, letLoginGo, makeDirs, readRegular, secretPaths } from "./jail.mjs";

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

// In a job's jail, outside Claude's sandbox (where Claude Code runs): the login it holds, and with
// the owner's, one free request with it through the broker (the account's profile).
const LOOK = `cat ~/.claude/.credentials.json 2>/dev/null || echo "no login"; echo; echo ${END}
[ "$1" = real ] && [ -s ~/.claude/.credentials.json ] || exit 0
a=$(sed -nE 's/.*"accessToken":"([^"]*)".*/\\1/p' ~/.claude/.credentials.json 2>/dev/null)
curl -sS --max-time 10 -o /dev/null -w 'profile %{http_code}\\n' -H "Authorization: Bearer $a" \\
  -H 'anthropic-beta: oauth-2025-04-20' https://api.anthropic.com/api/oauth/profile 2>&1 | tail -n 1`;

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
  const [jail, args, opts] = inAJobsJail(node, tool("sh"), "-c", LOOK, "login", kind);
  const r = await run(jail, args, opts);
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
  const profile = /profile (\d+)/.exec(after || "")?.[1];
  if (kind === "real" && tokens.length && profile !== "200")
    bad.push(`Anthropic answered a job's request through the broker with ${profile || short(after, 80)} (the account's profile): run 'claude' in 'box shell' and log in again`);
  if (bad.length) return { ok: false, detail: bad.join("; ") };
  if (!tokens.length) return { ok: true, detail: `${cfg.broker.login} holds no login Claude Code wrote, and no job's jail holds it` };
  return {
    ok: true,
    detail:
      `a job's jail holds a sentinel of its run's, not ${label}, which the login broker holds` +
      (kind === "real" ? `; a request with it through the broker got the account's profile (200)` : ""),
  };
}
