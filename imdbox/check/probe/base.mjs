// `box check`'s probes. Runs INSIDE a throwaway box, as the box's command: after
// the entrypoint has set the firewall and dropped to `imd`, so every probe sees
// exactly what the worker sees. Shipped as `node --input-type=module -e <this>
// <config-json>`; prints one line "IMD-BOX-CHECK <json>" with
// {"results": [{"id", "ok", "detail"}, ...]}.
//
// Rules every probe keeps:
//  - A probe that cannot run (tool missing, crash) is a FAIL, never ok; one that runs out of
//    time is not proved (late), never ok and never a FAIL.
//  - A network wall is ok only on a refusal by the box's own firewall: an
//    immediate EHOSTUNREACH/EACCES/EPERM/ENETUNREACH. A connection, or a reset
//    from the far side (ECONNREFUSED: the packet got there), or silence is FAIL.
//  - Secrets are never printed: only whether they could be read.
//  - Nothing planted in the volume answers for the image: every tool runs by its
//    path in the image (cfg.tools), and children get a PATH of image directories.
import { AsyncLocalStorage } from "node:async_hooks";
import { spawn } from "node:child_process";
import dgram from "node:dgram";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export const cfg = JSON.parse(process.argv[1] || "{}");
/** A program the probe hands to another process (a .cjs or .sh file beside the parts, which the
 * linters check): its text. The one script (imdbox/check/bundle.py) holds each as a string in
 * place of this call, as `const NAME = shipped("file");` alone on its line. */
export const shipped = (name) => fs.readFileSync(new URL(name, import.meta.url), "utf8");
export const RESULT_MARK = "IMD-BOX-CHECK "; // imdbox/check/runner.py reads the line it begins
process.env.PATH = cfg.path || "/usr/sbin:/usr/bin:/sbin:/bin";
/** A tool's path in the image; a name the config does not know cannot run (no PATH lookup). */
export const tool = (name) => (name.startsWith("/") ? name : (cfg.tools || {})[name] || `/nonexistent/${name}`);
export const HOME = cfg.home || os.homedir();
export const PORT = cfg.port || 80;
export const CONNECT_MS = cfg.connect_ms || 2000;
// The box's IPv6 refusal of a TCP connect comes with the first SYN retransmit, at the kernel's
// initial RTO (1 s; IPv4's comes at once): the ICMPv6 error for the first SYN lands while
// connect() still holds the socket and is kept only as a soft error.
export const V6_CONNECT_MS = CONNECT_MS + 1000;
// How much slower than an idle machine this one is: a bare start of the image's node (the median
// of three) against its idle figure (runner.py BARE_START_MS), between 1 and runner.py's
// MAX_SCALE. Timed when a limit runs out (limit below), not before: every limit is an idle
// machine's until then, and grows with the load it finds, so a check on a busy machine proves
// the same walls as on an idle one (a slow tool is no open wall), and one on an idle machine
// spends no time on it.
const scaleOf = (bare) => Math.min(cfg.scale.max, Math.max(1, bare / cfg.scale.bare_ms));
// The machine as found so far: as box says (a test), or as the probe says to itself again in a
// job's jail (network.mjs fromJobsJail), else idle until a limit runs out (retime below).
export const MACHINE = typeof cfg.machine?.scale === "number" ? { ...cfg.machine } : { bare: null, scale: 1 };
const SCALED_BY = MACHINE.scale; // the limits below, as set here; limit() grows them from it
const scaled = (ms) => Math.round(Number(ms) * SCALED_BY);
// The browser's budget (box's one figure, imdbox/browser.py, handed in as check.mjs's argument)
// and a tool's own limit (imdbox/check/runner.py): each stays under a line's limit (the
// browser's budget plus its slack), so a hung tool's line names the tool.
export const BROWSER_BUDGET_MS = scaled(cfg.browser.budget_ms);
export const TOOL_MS = scaled(cfg.tool_ms);
// The most one of these grows to (limit below): what a helper that the probe's own limits end
// keeps as its own last resort (the driver in a job's jail, the browser's check.mjs).
export const mostOf = (ms) => Math.round((ms / SCALED_BY) * cfg.scale.max);
export const MOST_TOOL_MS = mostOf(TOOL_MS);
export const BROWSER_SLACK_MS = scaled(3000); // node's start and check.mjs's clean-up, on top of the browser's budget
// Each line's own limit; the browser's, the slowest, is its budget plus its slack.
export const LINE_MS = BROWSER_BUDGET_MS + BROWSER_SLACK_MS + scaled(1000);

// What ran out of time in the line under way (main.mjs guarded runs each line in its own): a
// line whose only failures are these is not proved, never a FAIL (runner.py: the "late" flag).
export const lateness = new AsyncLocalStorage();
/** "WHAT took longer than N s", noted as the line's. */
export function late(what, ms) {
  const said = `${what} took longer than ${ms < 10000 ? Math.round(ms / 100) / 10 : Math.round(ms / 1000)} s`;
  const store = lateness.getStore();
  if (store && !store.includes(said)) store.push(said);
  return said;
}
// The machine timed again (async: the probe goes on meanwhile), once for every limit that runs
// out within a second of it; MACHINE says the latest.
let retimed = { at: -Infinity, scale: null };
function retime() {
  if (Date.now() - retimed.at > 1000) {
    const one = () => new Promise((resolve) => {
      const t = process.hrtime.bigint();
      const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
      const took = () => resolve(Number(process.hrtime.bigint() - t) / 1e6);
      child.on("close", took).on("error", took);
    });
    const timed = async () => {
      const bare = [await one(), await one(), await one()].sort((a, b) => a - b)[1];
      Object.assign(MACHINE, { bare: Math.round(bare), scale: Math.max(MACHINE.scale, scaleOf(bare)) });
      return MACHINE.scale;
    };
    retimed = { at: Date.now(), scale: timed() };
  }
  return retimed.scale;
}
/** `expire(ms)` once `ms` (a limit scaled as the ones above, by SCALED_BY) has run out; but a
 * machine found slower by then (busy from the start, or since: a Mac running jobs) first grows
 * the limit to its load, as often as it keeps getting slower, up to cfg.scale.max times an idle
 * machine's. `ms` is then the limit that ran out. Returns the cancel. */
export function limit(ms, expire) {
  const started = Date.now();
  let allowed = ms;
  let timer;
  let off = false;
  const arm = (wait) => {
    timer = setTimeout(async () => {
      const grown = Math.round((ms / SCALED_BY) * (await retime()));
      if (off) return;
      if (grown > allowed) {
        allowed = grown;
        arm(allowed - (Date.now() - started));
      } else expire(allowed);
    }, Math.max(0, wait));
  };
  arm(ms);
  return () => {
    off = true;
    clearTimeout(timer);
  };
}
/** Whether `detail` is only what ran out of time (late): no evidence of an open wall in it. */
export const onlyLate = (details) => {
  const store = lateness.getStore() || [];
  return details.length > 0 && details.every((d) => store.some((l) => String(d).includes(l)));
};
// EADDRNOTAVAIL: no source address for that family at all (IPv6 on a v4-only network).
export const REFUSALS = new Set(["EHOSTUNREACH", "EACCES", "EPERM", "ENETUNREACH", "EADDRNOTAVAIL"]);
// This probe again, in a job's jail (network.mjs fromJobsJail), on the job's network of its
// own: pasta answers the firewall's refusal of its connect with a reset, as a far side would,
// and a datagram leaves the jail whatever the firewall does with it. There an attempt fails
// only on what reached it (a connection, an answer); the firewall's counters, which box reads
// around the jail's attempts (imdbox/check/counters.py), tell whether anything else got out.
export const IN_JAIL = cfg.in_jail === true;
const NOT_REACHED = new Set(IN_JAIL ? ["refused", "reset", "sent", "timeout"] : ["refused"]);

export const short = (s, n = 160) => {
  const t = String(s ?? "").replace(/\s+/g, " ").trim();
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
};

/** Run a program; never throws. {code, out, err, missing, timedOut, spawnError}. `said(out)`:
 * whether its stdout so far is all the caller needs; then it resolves at once (code null,
 * said true), and the program ends on its own. */
export function run(cmd, args = [], { timeout = TOOL_MS, input = null, env = process.env, cwd = undefined, said = null } = {}) {
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    let timedOut = false;
    let child;
    try {
      // Its own process group (detached), so that a timeout can kill what it started too.
      const stdio = [input === null ? "ignore" : "pipe", "pipe", "pipe"];
      child = spawn(tool(cmd), args, { env, cwd, stdio, detached: true });
    } catch (e) {
      resolve({ code: null, out, err: String(e), missing: e.code === "ENOENT", spawnError: e.code || String(e) });
      return;
    }
    // `close` waits for every holder of the tool's pipes, and a child of the tool that left
    // its group (a new session) may hold them long after the tool: once the tool is gone and
    // its time is up, stop listening, or the line waits out the probe's limit, not the tool's.
    let exited = false;
    const letGo = () => {
      child.stdout.destroy();
      child.stderr.destroy();
    };
    let ranOut = timeout;
    const cancel = limit(timeout, (ms) => {
      timedOut = true;
      ranOut = ms;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
      if (exited) letGo();
    });
    child.on("exit", () => {
      exited = true;
      if (timedOut) letGo();
    });
    child.stdout.on("data", (d) => {
      out += d;
      if (said && said(out)) {
        cancel();
        resolve({ code: null, out, err, missing: false, timedOut: false, said: true });
      }
    });
    child.stderr.on("data", (d) => (err += d));
    if (input !== null) child.stdin.end(input);
    child.on("error", (e) => {
      cancel();
      resolve({ code: null, out, err: err || String(e), missing: e.code === "ENOENT", spawnError: e.code || String(e) });
    });
    child.on("close", (code) => {
      cancel();
      resolve({ code, out, err, missing: false, timedOut, limit: ranOut });
    });
  });
}

/** A node script's version from its package's package.json (beside its dist/), in a run's
 * shape. Not `srt --version`: that loads all of srt (0.2 s of CPU a check), and the
 * read jail's line runs srt anyway. */
export function packageVersion(name) {
  const file = path.join(path.dirname(tool(name)), "..", "package.json");
  try {
    return { code: 0, out: String(JSON.parse(fs.readFileSync(file, "utf8")).version), err: "" };
  } catch (e) {
    const missing = e.code === "ENOENT" || e.code === "ENOTDIR";
    return { code: null, out: "", err: "", missing, spawnError: missing ? undefined : e.code || String(e) };
  }
}

/** Why a tool run is not usable evidence, or null when it ran. */
export function unusable(name, r) {
  if (r.missing) return `${name} is missing from the box`;
  if (r.spawnError) return `${name} could not run: ${r.spawnError}`;
  if (r.timedOut) return late(name, r.limit);
  return null;
}

export function statusFields(pid = "self") {
  const fields = {};
  for (const line of fs.readFileSync(`/proc/${pid}/status`, "utf8").split("\n")) {
    const i = line.indexOf(":");
    if (i > 0) fields[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return fields;
}

/** TCP connect: refused (by a filter) | reached (connected or reset by the peer) | timeout | error. */
export function tcp(host, port = PORT, ms = CONNECT_MS) {
  return new Promise((resolve) => {
    const started = Date.now();
    const sock = net.connect({ host, port });
    let settled = false;
    const done = (outcome, how) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ outcome, how, ms: Date.now() - started });
    };
    // A late timer must not beat an answer already waiting: libuv runs due timers before it
    // polls for I/O, so on a starved event loop the verdict waits for one poll (setImmediate).
    // Node sends the SYN on the next tick, and the time starts with it (after it in that queue).
    let timer;
    process.nextTick(() => {
      if (!settled) timer = setTimeout(() => setImmediate(() => done("timeout", `no answer in ${ms} ms`)), ms);
    });
    sock.once("connect", () => done("reached", "connected"));
    sock.once("error", (e) => {
      if (REFUSALS.has(e.code)) done("refused", e.code);
      else if (e.code === "ECONNREFUSED") done(IN_JAIL ? "reset" : "reached", IN_JAIL ? e.code : "reset by the far side (ECONNREFUSED)");
      else done("error", e.code || String(e));
    });
  });
}

/** UDP send: refused (the send failed at the filter) | sent (it left the box) | answered. */
export function udp(host, port, { broadcast = false, payload = Buffer.from("imd-box-check"), wait = 300 } = {}) {
  return new Promise((resolve) => {
    const type = net.isIPv6(host) ? "udp6" : "udp4";
    const sock = dgram.createSocket(type);
    let settled = false;
    const done = (outcome, how) => {
      if (settled) return;
      settled = true;
      try {
        sock.close();
      } catch {}
      resolve({ outcome, how });
    };
    const failed = (e) => (REFUSALS.has(e.code) ? "refused" : IN_JAIL && e.code === "ECONNREFUSED" ? "reset" : "error");
    sock.on("error", (e) => done(failed(e), e.code || String(e)));
    sock.on("message", () => done("answered", "an answer came back"));
    sock.bind(0, () => {
      if (broadcast) sock.setBroadcast(true);
      sock.send(payload, port, host, (e) => {
        if (e) done(failed(e), e.code || String(e));
        else setTimeout(() => done("sent", IN_JAIL ? "left the jail, no answer" : "the packet left the box"), wait);
      });
    });
  });
}

/** Several refusal probes; ok only if every one was refused (in a job's jail: reached none). */
export async function refusedAll(label, probes) {
  const results = await Promise.all(probes.map(async ([name, p]) => [name, await p]));
  const bad = results.filter(([, r]) => !NOT_REACHED.has(r.outcome));
  if (results.length === 0) return { ok: false, detail: `${label}: nothing to probe` };
  if (bad.length) return { ok: false, detail: bad.map(([n, r]) => `${n}: ${r.outcome.toUpperCase()} (${r.how})`).join("; ") };
  return { ok: true, detail: results.map(([n, r]) => `${n} ${r.how}`).join(", ") };
}

export const dnsQuery = () =>
  // A minimal DNS query for "." NS: harmless if it ever got out.
  Buffer.from([0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1]);

/** What `promise` gives within `ms`, else `late()`. An answer already waiting when the time
 * is up still counts: on a starved event loop libuv runs the due timer before it polls for
 * the answer (a resolver's socket, the thread pool's lookup), so the verdict waits one poll. */
export async function within(promise, ms, late) {
  let timer;
  try {
    return await Promise.race([
      promise,
      new Promise((resolve) => {
        timer = setTimeout(() => setImmediate(() => resolve(late())), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
