// `box check` line 15, "the browser": serves a page on 127.0.0.1 inside the box,
// starts the box's MCP server (./playwright-mcp --http 0) and drives it as the
// worker would: initialize -> tools/list -> browser_navigate -> browser_snapshot.
// Prints ONE JSON line {"ok": bool, "detail": str}; exit 0 only when the snapshot
// holds the page's text. Runs as `imd`, behind the box's walls.
//
// The pieces are exported (startPage, startMcp, McpSession, check) so the tests
// drive the same code against other pages.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const LAUNCHER = path.join(HERE, "playwright-mcp");
const MCP_PACKAGE = "/opt/playwright-mcp/node_modules/@playwright/mcp/package.json";
const PROTOCOL_VERSION = "2025-06-18";

/** An HTTP server on 127.0.0.1 (any free port) answering every GET with `html`. */
export async function startPage(html) {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    res.end(html);
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

/** The launcher in HTTP mode, in its own process group; resolves once it listens. */
export function startMcp({ launcher = LAUNCHER, timeoutMs }) {
  const child = spawn(launcher, ["--http", "0"], { detached: true, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const killGroup = (signal) => {
    try {
      process.kill(-child.pid, signal); // the whole group: node and the browser it started
    } catch {
      // already gone
    }
  };
  // SIGTERM lets Playwright close the browser and delete its temporary profile;
  // whatever is left after graceMs is killed.
  const stop = async (graceMs = 1500) => {
    if (child.exitCode !== null || child.signalCode !== null) return killGroup("SIGKILL");
    killGroup("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, graceMs))]);
    killGroup("SIGKILL");
  };
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the MCP server did not start in ${timeoutMs} ms${tail(stderr)}`)), timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${launcher}: ${err.message}`));
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the MCP server exited (${signal || `code ${code}`}) before listening${tail(stderr)}`));
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      const m = /Listening on (http:\/\/localhost:\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(`${m[1]}/mcp`);
      }
    });
  });
  ready.catch(() => {}); // a caller that gave up (deadline) must not crash on it
  return { ready, stop, stderr: () => stderr };
}

function tail(text, lines = 6) {
  const t = text.trim().split("\n").slice(-lines).join(" | ");
  return t ? `: ${t}` : "";
}

/** A POST to the MCP server on localhost, by node's http: {status, headers, body}. Not fetch,
 * whose first call loads undici, some 35 ms of CPU a check on cores its other lines need. */
function postJson(url, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { ...headers, "content-length": Buffer.byteLength(body) } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** A Streamable-HTTP MCP client: just enough for the check and the tests. */
export class McpSession {
  constructor(url) {
    this.url = url;
    this.sessionId = null;
    this.nextId = 1;
  }

  async post(message) {
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    if (this.sessionId) {
      headers["mcp-session-id"] = this.sessionId;
      headers["mcp-protocol-version"] = PROTOCOL_VERSION;
    }
    const res = await postJson(this.url, headers, JSON.stringify(message));
    this.sessionId = res.headers["mcp-session-id"] || this.sessionId;
    const body = res.body;
    if (res.status < 200 || res.status > 299) throw new Error(`${message.method}: HTTP ${res.status} ${body.slice(0, 200)}`);
    if (message.id === undefined) return null;
    const type = res.headers["content-type"] || "";
    const payloads = type.includes("text/event-stream")
      ? body.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim())
      : [body];
    for (const p of payloads) {
      if (!p) continue;
      const msg = JSON.parse(p);
      if (msg.id !== message.id) continue;
      if (msg.error) throw new Error(`${message.method}: ${msg.error.message}`);
      return msg.result;
    }
    throw new Error(`${message.method}: no answer in the response`);
  }

  request(method, params = {}) {
    return this.post({ jsonrpc: "2.0", id: this.nextId++, method, params });
  }

  notify(method, params = {}) {
    return this.post({ jsonrpc: "2.0", method, params });
  }

  async initialize() {
    const result = await this.request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: "imd-box-check", version: "1" },
    });
    await this.notify("notifications/initialized");
    return result;
  }

  async callTool(name, args = {}) {
    const result = await this.request("tools/call", { name, arguments: args });
    const text = (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    return { isError: Boolean(result.isError), text };
  }
}

/** The whole line: ok only when the snapshot holds `expect`. `said(result)` has the result
 * before the browser is stopped. */
export async function check({ html, expect, launcher, deadlineMs, said = () => {} }) {
  const started = Date.now();
  const token = `imd-box browser check ${randomBytes(6).toString("hex")}`;
  expect = expect ?? token;
  html = html ?? `<!doctype html><title>imd-box check</title><p>${token}</p>`;
  const page = await startPage(html);
  const mcp = startMcp({ launcher, timeoutMs: deadlineMs });
  // The step under way, so a line that ran out of time says where it waited.
  let step = "the MCP server's start";
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${deadlineMs / 1000} s, waiting for ${step}${tail(mcp.stderr())}`)), deadlineMs);
  });
  const run = async () => {
    const session = new McpSession(await mcp.ready);
    step = "initialize";
    await session.initialize();
    const server = `Playwright MCP ${mcpVersion()}`;
    step = "tools/list";
    const { tools = [] } = await session.request("tools/list");
    const names = new Set(tools.map((t) => t.name));
    for (const needed of ["browser_navigate", "browser_snapshot"]) {
      if (!names.has(needed)) return { ok: false, detail: `${server} does not offer ${needed}` };
    }
    step = "browser_navigate (the browser's start and the page's load)";
    let nav = await session.callTool("browser_navigate", { url: page.url });
    // Chromium drops a load when it sees the box's network settle (an IPv6 address
    // leaving its tentative state a second after start): a fact of the first
    // seconds, not of the walls. It shows as that error or as the load being cut by
    // Chromium's own error page. Try again then, a moment later: a box on several
    // networks settles once on each, and on a busy machine those moments spread out
    // (the deadline still bounds it all). Anything else is the answer.
    const networkChanged = (text) =>
      text.includes("net::ERR_NETWORK_CHANGED") || text.includes("another navigation to \"chrome-error://");
    for (let retries = 0; nav.isError && networkChanged(nav.text) && retries < 4; retries++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      nav = await session.callTool("browser_navigate", { url: page.url });
    }
    if (nav.isError) return { ok: false, detail: `could not load ${page.url}: ${firstLines(nav.text)}` };
    step = "browser_snapshot";
    const snap = await session.callTool("browser_snapshot");
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (snap.isError || !snap.text.includes(expect)) {
      return { ok: false, detail: `the snapshot of ${page.url} does not hold the page's text "${expect}": ${firstLines(snap.text)}` };
    }
    return { ok: true, detail: `a page on 127.0.0.1 loaded and read back through ${server} (Chrome Headless Shell) in ${seconds} s` };
  };
  const running = run();
  running.catch(() => {}); // after the deadline its failure is no longer news
  let result;
  try {
    result = await Promise.race([running, deadline]);
  } catch (err) {
    result = { ok: false, detail: err.message };
  }
  clearTimeout(timer);
  said(result);
  await mcp.stop();
  page.close();
  return result;
}

function mcpVersion() {
  try {
    return JSON.parse(readFileSync(MCP_PACKAGE, "utf8")).version;
  } catch {
    return "(version unknown)";
  }
}

function firstLines(text, n = 4) {
  return text.trim().split("\n").slice(0, n).join(" | ").slice(0, 400);
}

// `node check.mjs <budget ms>`: the budget is box's (imdbox/browser.py CHECK_SECONDS).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const deadlineMs = Number(process.argv[2]);
  // The one line of stdout, as soon as the result is known: the browser's stop comes after.
  const say = (result) => process.stdout.write(JSON.stringify(result) + "\n");
  const usage = { ok: false, detail: "usage: check.mjs <budget ms>" };
  const result = deadlineMs > 0 ? await check({ deadlineMs, said: say }) : (say(usage), usage);
  process.exit(result.ok ? 0 : 1);
}
