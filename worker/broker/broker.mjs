// broker DIR PORT TLS_PORT LOGIN MODE HOST...: the box's Claude login broker, at the door's side,
// outside the worker's view, for Anthropic's login hosts (HOST...) alone.
//
// The owner's Claude login (LOGIN, ~/.claude/.credentials.json) is read here and in `box shell`
// alone: no job's jail and not the worker's view holds it. A job's Claude Code holds a sentinel
// login of the same shape instead, one for each run (minted on DIR/control.sock by its launcher,
// worker/jail.d/login, and forgotten when the run ends), and reaches Anthropic's hosts here: its
// jail names them at its own loopback, where a port of the run's own on the box's loopback is
// forwarded as 443 (worker/jail.d/network), so nothing else it sends comes here, and no run's
// connections take another's (RUN_CONNECTIONS). TLS_PORT serves the same, for the box's own
// programs (box check, the bench). The broker ends TLS itself, for the host the client names
// (SNI) and no other, with a certificate of its own CA that the jail trusts (DIR/trust.pem: the
// box's bundle and that CA), and swaps a live run's sentinel for the owner's token on the
// requests it lends the login to (LENT), to that host (its Host header too) with no other
// credential; the body streams on as it comes (under a cap), and the answer comes back as it
// streams. What it forwards and refuses: docs/broker.md. PORT, on the box's loopback, is a CONNECT proxy for the owner's Claude Code in `box
// shell`: a tunnel to one of the hosts on 443 is ended the same way, and every other is refused
// in one line that names the host (the box's loopback, its own addresses and private ranges by
// name), so the broker reaches nothing but Anthropic for anyone.
//
// It binds its ports first, and only then sets up: a second broker ends there and touches
// nothing. Its CA and the live runs are kept in DIR (written atomically), so a broker started
// again (broker/start's loop) takes them up, and a job running across the restart goes on.
//
// It refreshes the owner's login itself, one refresh at a time, and writes the rotated pair
// (atomically, in place of the old) before it uses it: Claude Code's refresh tokens work once, so
// two processes that each refresh log each other out. A job's own refresh, with its sentinel,
// gets its sentinels back; the owner's Claude Code in `box shell`, through this proxy too, gets
// the pair this broker holds.
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";

// MODE "jail": the owner chose the login in the jail, as before the broker (IMD_BOX_LOGIN=jail):
// a launcher is told to bind it ("owner"), and the broker stands in for no one.
// HOST...: where Claude Code sends its login (worker/paths BROKER_HOSTS): the Messages API and the
// account's own calls, its token endpoints, and the claude.ai connectors' proxy.
const [dir, portText, tlsPortText, loginFile, mode, ...given] = process.argv.slice(2);
const HOSTS = given.map((h) => h.toLowerCase());
const port = Number(portText);
const tlsPort = Number(tlsPortText);
// Its token endpoint (console.anthropic.com's before 2.1).
const TOKEN_HOSTS = ["platform.claude.com", "console.anthropic.com"];
if (!dir || !Number.isInteger(port) || !Number.isInteger(tlsPort) || !loginFile || !["broker", "jail"].includes(mode) ||
    !TOKEN_HOSTS.every((h) => HOSTS.includes(h))) {
  console.error("imd-box: the login broker takes DIR PORT TLS_PORT LOGIN broker|jail HOST... (the token hosts among them)");
  process.exit(64);
}
const TOKEN_HOST = TOKEN_HOSTS[0]; // where the broker refreshes
const TOKEN_PATH = "/v1/oauth/token";
const CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"; // Claude Code's, where the login names none
const EARLY_MS = 5 * 60 * 1000; // refreshed this long before it expires
const SENTINEL_MS = 10 * 365 * 24 * 3600 * 1000; // a sentinel login never needs a refresh
// The box's facts it reads (worker/facts.json, written from imdbox/layout.py): the mark of the
// tokens it mints, and the ranges it names private.
const FACTS = (() => {
  try {
    return JSON.parse(fs.readFileSync(new URL("../facts.json", import.meta.url), "utf8")).broker;
  } catch (e) {
    console.error(`imd-box: the login broker cannot read the box's facts (worker/facts.json): ${e.message}; rebuild the image`);
    return process.exit(78);
  }
})();
const SENTINEL = FACTS.sentinel;
const say = (text) => console.error(`imd-box broker: ${text}`);

// --- its CA and the login hosts' certificate, made at the box's start, never leaving DIR --------
const at = (name) => path.join(dir, name);

// A file written whole or not at all: a broker killed halfway leaves the last one as it was.
function writeAtomically(file, text, mode = 0o600) {
  const temporary = `${file}.${process.pid}.new`;
  const fd = fs.openSync(temporary, "w", mode);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temporary, file);
}

// The certificate this box's broker made, if an earlier broker did (it was started again).
function kept() {
  try {
    const context = tls.createSecureContext({ key: fs.readFileSync(at("hosts.key")), cert: fs.readFileSync(at("hosts.crt")) });
    return fs.statSync(at("trust.pem")).isFile() ? context : null;
  } catch {
    return null;
  }
}

function certificates() {
  const openssl = (...args) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl("req", "-x509", ...ec, "-keyout", at("ca.key"), "-out", at("ca.crt"), "-days", "3650",
    "-subj", "/CN=IMD Box login broker", "-addext", "basicConstraints=critical,CA:TRUE",
    "-addext", "keyUsage=critical,keyCertSign,cRLSign");
  openssl("req", "-x509", ...ec, "-keyout", at("hosts.key.new"), "-out", at("hosts.crt.new"), "-days", "825",
    "-CA", at("ca.crt"), "-CAkey", at("ca.key"), "-subj", `/CN=${HOSTS[0]}`,
    "-addext", `subjectAltName=${HOSTS.map((h) => `DNS:${h}`).join(",")}`,
    "-addext", "basicConstraints=critical,CA:FALSE", "-addext", "extendedKeyUsage=serverAuth");
  fs.rmSync(at("ca.key"));
  // The box's bundle: the own environment's (worker/own.env).
  const trust = `${fs.readFileSync(process.env.NODE_EXTRA_CA_CERTS, "utf8").trimEnd()}\n${fs.readFileSync(at("ca.crt"), "utf8")}`;
  fs.renameSync(at("hosts.key.new"), at("hosts.key"));
  fs.renameSync(at("hosts.crt.new"), at("hosts.crt"));
  writeAtomically(at("trust.pem"), trust, 0o644); // last: what says the set is whole
  return kept();
}

// --- the owner's login -------------------------------------------------------------------------
let seen = null; // { key, file } of the login file as last read
const rotated = new Set(); // refresh tokens this broker has used up: the owner's older copies
let refreshing = null;
const state = { refreshes: 0, problem: "" }; // what box status and box check are told

function login() {
  let stat;
  try {
    stat = fs.statSync(loginFile);
  } catch {
    return null;
  }
  const key = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  if (seen?.key !== key) {
    if (seen) state.problem = ""; // a login written since (the owner's /login): tried afresh
    try {
      const file = JSON.parse(fs.readFileSync(loginFile, "utf8"));
      seen = { key, file: file?.claudeAiOauth?.accessToken ? file : null };
    } catch {
      seen = { key, file: null };
    }
  }
  return seen.file?.claudeAiOauth ?? null;
}

function save(oauth) {
  writeAtomically(loginFile, JSON.stringify({ ...(seen?.file ?? {}), claudeAiOauth: oauth }));
  login();
}

// One refresh at a time; `force`: even though the token has not expired (an upstream 401). A
// refresh token Anthropic refused (400, 401) stays refused: it is not asked again until the
// login changes (the owner logged in again). One that failed otherwise (no answer, 429, 5xx)
// is asked again a minute later at the soonest.
// And whatever jobs do (an upstream 401 is theirs to make at will), one refresh of a login a
// minute at most: the next is asked a minute after the last, of the login it left; a login the
// owner wrote since is a new one.
const REFRESH_EVERY_MS = 60 * 1000;
let refused = null; // { key, at, final } of the login whose refresh failed
let last = null; // { key, at } of the login the last refresh left

function refresh(force) {
  const current = login();
  if (!current) return Promise.resolve(null);
  if (refreshing) return refreshing;
  if (!force && current.expiresAt - Date.now() > EARLY_MS) return Promise.resolve(current);
  if (refused?.key === seen.key && refused.final) return Promise.resolve(current);
  if (last?.key === seen.key && Date.now() - last.at < REFRESH_EVERY_MS) return Promise.resolve(current);
  refreshing = refreshNow(current).finally(() => {
    refreshing = null;
    last = { key: seen.key, at: Date.now() };
  });
  return refreshing;
}

async function refreshNow(current) {
  const body = JSON.stringify({
    grant_type: "refresh_token",
    refresh_token: current.refreshToken,
    client_id: current.clientId || CLIENT_ID,
    scope: (current.scopes ?? []).join(" "),
  });
  const answer = await send({
    host: TOKEN_HOST, method: "POST", path: TOKEN_PATH,
    headers: { host: TOKEN_HOST, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
  }, body).then(drain, (error) => ({ status: 0, body: Buffer.from(String(error.message)) }));
  state.refreshes += 1;
  let data = null;
  try {
    data = JSON.parse(answer.body.toString("utf8"));
  } catch {}
  if (answer.status !== 200 || !data?.access_token) {
    // The owner's Claude Code in `box shell` refreshed it meanwhile, outside the broker.
    const now = login();
    if (now && now.refreshToken !== current.refreshToken) return now;
    const why = answer.status ? `${answer.status} ${data?.error ?? ""}`.trim() : answer.body.toString();
    const final = answer.status === 400 || answer.status === 401;
    const next = final ? "run 'claude' in 'box shell' and log in again" : "the broker asks again within a minute";
    state.problem = `the owner's Claude login could not be refreshed (${why.slice(0, 80)}): ${next}`;
    say(state.problem);
    refused = { key: seen.key, final };
    return current;
  }
  const next = {
    ...current,
    accessToken: data.access_token,
    refreshToken: data.refresh_token ?? current.refreshToken,
    expiresAt: Date.now() + Number(data.expires_in ?? 3600) * 1000,
    scopes: typeof data.scope === "string" ? data.scope.split(" ").filter(Boolean) : current.scopes,
  };
  save(next);
  if (next.refreshToken !== current.refreshToken) rotated.add(current.refreshToken);
  state.problem = "";
  refused = null;
  return next;
}

// --- the runs a launcher minted a sentinel for ---------------------------------------------------
// Each in DIR/runs: <id>.json, its sentinel login (the jail binds it), and <id>.run, what the
// broker knows of it, so that a broker started again takes it up.
const runs = new Map(); // id -> { access, refresh, pid, start, file, port }
const runPorts = new Map(); // id -> { server, sockets, open, limit, says }: the run's own port
const record = (id) => path.join(dir, "runs", `${id}.run`);
const token = (kind) => `sk-ant-${kind}01-${SENTINEL}${crypto.randomBytes(24).toString("hex")}`;

function started(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return null;
  }
}

// The run whose sentinel this is, while the launcher that minted it lives.
function runOf(kind, value) {
  for (const [id, run] of runs) {
    if (run[kind] !== value) continue;
    if (started(run.pid) === run.start) return run;
    forget(id);
  }
  return null;
}

function forget(id) {
  const run = runs.get(id);
  if (!run) return;
  runs.delete(id);
  const own = runPorts.get(id);
  runPorts.delete(id);
  if (own) {
    own.server.close();
    for (const socket of own.sockets) socket.destroy();
  }
  fs.rmSync(record(id), { force: true });
  fs.rmSync(run.file, { force: true });
}

// A run's own port on the box's loopback (`port`: the one it had, for a run taken up; else any
// free one): its sessions count against its limit alone. Resolves to the port, or null.
function listenFor(id, port = 0) {
  const own = { sockets: new Set(), open: 0, limit: RUN_CONNECTIONS, says: `a run's own port takes ${RUN_CONNECTIONS}` };
  own.server = net.createServer({ noDelay: true }, (socket) => {
    socket.on("error", () => {});
    if (context) ended(socket, own);
    else socket.destroy();
  });
  return new Promise((resolve) => {
    own.server.once("error", () => resolve(null));
    own.server.listen(port, "127.0.0.1", () => {
      runPorts.set(id, own);
      resolve(own.server.address().port);
    });
  });
}

// The runs an earlier broker of this box minted, whose launchers live, each on its own port again;
// the rest of DIR/runs goes.
async function takeUp() {
  const folder = path.join(dir, "runs");
  const names = fs.readdirSync(folder);
  for (const name of names) {
    const id = /^([0-9a-f]{16})\.run$/.exec(name)?.[1];
    if (!id) continue;
    try {
      const run = JSON.parse(fs.readFileSync(record(id), "utf8"));
      if (started(run.pid) === run.start && run.file === path.join(folder, `${id}.json`)) runs.set(id, run);
    } catch {}
  }
  for (const name of names) {
    const id = /^([0-9a-f]{16})\.(run|json)$/.exec(name)?.[1];
    if (!id || !runs.has(id)) fs.rmSync(path.join(folder, name), { force: true });
  }
  for (const [id, run] of runs) if (!Number.isInteger(run.port) || !(await listenFor(id, run.port))) forget(id);
}

// A run whose launcher is gone (killed before it said so) is forgotten, its port closed, within a
// minute: not only when a request names its sentinel.
setInterval(() => {
  for (const [id, run] of runs) if (started(run.pid) !== run.start) forget(id);
}, 60 * 1000).unref();

// A login file of the owner's shape (`real`) holding sentinel tokens, which never expire.
function sentinelLogin(real, access, refresh) {
  return JSON.stringify({ claudeAiOauth: { ...real, accessToken: access, refreshToken: refresh, expiresAt: Date.now() + SENTINEL_MS } });
}

// A run's sentinel and its own port: "run <id> <port>", "none" (no login to stand in for), or null
// (no port to be had).
async function mint(pid) {
  const real = login();
  const start = started(pid);
  if (!real || !start) return "none";
  const id = crypto.randomBytes(8).toString("hex");
  const port = await listenFor(id);
  if (!port) return null;
  const run = { access: token("oat"), refresh: token("ort"), pid, start, file: path.join(dir, "runs", `${id}.json`), port };
  writeAtomically(run.file, sentinelLogin(real, run.access, run.refresh));
  writeAtomically(record(id), JSON.stringify(run));
  runs.set(id, run);
  return `run ${id} ${port}`;
}

// A login of the owner's shape whose tokens no run holds: the worker's view shows it, so the
// worker sees Claude logged in, and the broker refuses it.
function inert() {
  const real = login();
  return real ? sentinelLogin(real, token("oat"), token("ort")) : null;
}

// The launchers' side: POST /runs (pid=<the launcher's>) -> "run <id> <port>" (its sentinel login
// is DIR/runs/<id>.json, its own port on the box's loopback <port>), "none" (no login to stand in
// for) or "owner" (MODE jail); DELETE
// /runs/<id>; GET /view (the worker's view's login), GET /status.
function control(req, res) {
  const reply = (status, text) => res.writeHead(status, { "content-type": "text/plain" }).end(`${text}\n`);
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const body = Buffer.concat(chunks).toString("utf8");
    if (req.method === "POST" && req.url === "/runs") {
      const pid = /^pid=([0-9]+)$/.exec(body.trim())?.[1];
      if (!pid) return reply(400, "POST /runs takes pid=<the launcher's pid>");
      if (mode === "jail") return reply(200, "owner"); // the file as it is, as before the broker
      const minted = await mint(pid);
      return minted ? reply(200, minted) : reply(503, "the broker could not listen for the run");
    }
    const gone = /^\/runs\/([0-9a-f]{16})$/.exec(req.url ?? "");
    if (req.method === "DELETE" && gone) {
      forget(gone[1]);
      return reply(200, "forgotten");
    }
    if (req.method === "GET" && req.url === "/view") {
      const shown = inert();
      return shown ? reply(200, shown) : reply(404, "none");
    }
    if (req.method === "GET" && req.url === "/status") {
      const real = login();
      return reply(200, JSON.stringify({
        mode, login: real ? "held" : "none", runs: runs.size, refreshes: state.refreshes, problem: state.problem,
        refused: [...refusedPaths],
      }));
    }
    reply(404, "the broker takes POST /runs, DELETE /runs/<id>, GET /view and GET /status");
  });
}

// --- what the broker lends the login to ---------------------------------------------------------
// A run's sentinel is honoured on these requests alone (METHOD host path, the query aside):
// those the real Claude Code makes with the login on every kind of job the worker runs
// (measured with 2.1.332: docs/broker.md; tests/world/test_broker_limits.py asks the installed one).
// Every other is refused, 403, and named once in the box's log and `box status`, so a release
// of Claude Code that calls a new path is seen at once. A token endpoint's refresh is answered
// before this (onRequest), and a request without a sentinel goes on as it came, with no login
// of the owner's.
const LENT = new Set([
  "POST api.anthropic.com /v1/messages", // the model
  "GET api.anthropic.com /api/oauth/profile", // the account, at start (and box check line 25)
  "GET api.anthropic.com /api/claude_cli/bootstrap", // its settings, at start
  "GET api.anthropic.com /api/claude_code_penguin_mode", // fast mode's availability, at start
  "POST api.anthropic.com /api/eval/sdk-zAZezfDKGoZuXXKe", // its feature flags (this release's key)
  "POST api.anthropic.com /api/event_logging/v2/batch", // its telemetry
]);
// Where a 401 says the token was refused for inference, and is worth a refresh.
const INFERENCE = new Set(["api.anthropic.com /v1/messages"]);
const MB = 1024 * 1024;
const BODY_LIMIT = 32 * MB; // a request's body: the Messages API's own limit (32 MB)
const REPLAY_BUDGET = 16 * MB; // bodies kept for a retry after a refresh, every request's together
const CONNECTIONS = 128; // TLS sessions at once on TLS_PORT and box shell's proxy together
// TLS sessions at once on one run's own port: a job that holds more (idle, say) is refused on its
// own port alone, and every other run's is as free as before.
const RUN_CONNECTIONS = 64;
const PER_RUN = 16; // requests at once with one run's sentinel
// Every credential a client may send; a run's request goes on with the owner's token alone.
const CREDENTIALS = new Set(["authorization", "proxy-authorization", "x-api-key", "cookie"]);
const refusedPaths = new Set(); // what the broker refused to lend the login to, each named once
const shown = (text) => `${text}`.replace(/[^\x20-\x7e]/g, "?").slice(0, 120);

function lent(method, host, route) {
  if (LENT.has(`${method} ${host} ${route}`)) return true;
  const named = shown(`${method} ${host}${route}`);
  if (!refusedPaths.has(named) && refusedPaths.size < 32) {
    refusedPaths.add(named);
    say(`refused a path outside its list: ${named} (a run's login is lent to the paths docs/broker.md lists)`);
  }
  return false;
}

// --- the proxy -----------------------------------------------------------------------------------
const upstreamAgent = new https.Agent({ keepAlive: true, maxSockets: 64 });

// A request upstream, its body to be written by the caller: it and its answer (a promise).
function open(options) {
  const request = https.request({ port: 443, agent: upstreamAgent, servername: options.host, setDefaultHeaders: false, ...options });
  const answered = new Promise((resolve, reject) => {
    request.on("response", resolve);
    request.on("error", reject);
  });
  return { request, answered };
}

function send(options, body) {
  const { request, answered } = open(options);
  request.end(body);
  return answered;
}

function drain(response) {
  return new Promise((resolve) => {
    const chunks = [];
    const done = () => resolve({ status: response.statusCode, headers: response.rawHeaders, body: Buffer.concat(chunks) });
    response.on("data", (c) => chunks.push(c));
    response.on("end", done);
    response.on("error", done);
  });
}

// The broker's own answer, in the shape of Anthropic's errors; `close`: the connection ends
// after it (a body it will not read).
function refuse(res, status, message, type = "authentication_error", close = false) {
  const body = JSON.stringify({ type: "error", error: { type, message: `imd-box: ${message}` } });
  if (res.headersSent) return res.destroy();
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
  if (close) res.on("finish", () => linger(res.req));
}

// A connection ended under a body still coming is reset, and the client may never read the
// answer before it (measured: curl saw the 413's "100 Continue" and a reset): so what still
// comes is read and dropped, LINGER_MS at most, while the client reads the answer and stops.
const LINGER_MS = 5 * 1000;

function linger(req) {
  req.resume();
  setTimeout(() => req.socket.destroy(), LINGER_MS).unref();
}

// A token endpoint's answer: the pair `oauth` holds, as long as it has left.
function granted(res, oauth) {
  const body = JSON.stringify({
    token_type: "Bearer", access_token: oauth.accessToken, refresh_token: oauth.refreshToken,
    expires_in: Math.max(0, Math.floor((oauth.expiresAt - Date.now()) / 1000)), scope: (oauth.scopes ?? []).join(" "),
  });
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
}

// The raw headers that go upstream: `Host` is the host the client named in TLS (SNI), never
// the one it wrote; with `token` (a run's request), the first authorization's value is the
// owner's token and every other credential header, in any letter case, is dropped. Names,
// order and case stay as they came.
function upstreamHeaders(host, raw, token) {
  const out = [];
  let named = false;
  let swappedIn = !token;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (name === "host") {
      if (!named) out.push(raw[i], host);
      named = true;
    } else if (token && CREDENTIALS.has(name)) {
      if (name === "authorization" && !swappedIn) out.push(raw[i], `Bearer ${token}`);
      swappedIn ||= name === "authorization";
    } else out.push(raw[i], raw[i + 1]);
  }
  if (!named) out.unshift("host", host);
  return out;
}

// A request's body, streamed to `target` as it comes (the client waits while upstream does),
// counted against BODY_LIMIT, and kept for one retry while REPLAY_BUDGET allows (`keep`).
let keptBytes = 0;

function streamed(req, res, keep, tooLarge) {
  const body = { size: 0, chunks: keep ? [] : null, kept: 0, target: null, ended: false, over: false };
  const release = () => {
    keptBytes -= body.kept;
    body.kept = 0;
    body.chunks = null;
  };
  body.done = new Promise((resolve) => {
    req.on("end", () => {
      body.ended = true;
      body.target?.end();
      resolve();
    });
    req.on("close", resolve);
  });
  res.on("close", release);
  req.on("data", (c) => {
    if (body.over) return;
    body.size += c.length;
    if (body.size > BODY_LIMIT) {
      body.over = true; // what still comes is dropped (linger)
      return tooLarge();
    }
    if (body.chunks && keptBytes + c.length > REPLAY_BUDGET) release();
    if (body.chunks) {
      body.chunks.push(c);
      body.kept += c.length;
      keptBytes += c.length;
    }
    if (body.target && !body.target.write(c)) {
      req.pause();
      body.target.once("drain", () => req.resume());
    }
  });
  return body;
}

function tooLarge(res, body) {
  body.target?.destroy();
  body.target = null;
  refuse(res, 413, `a request's body is ${BODY_LIMIT / MB} MiB at most (the broker's limit, Anthropic's own)`, "request_too_large", true);
}

// The request upstream with `token` (a run's, or none: as it came), its body streamed; on a 401
// for inference, one refresh (at most one a minute: refresh) and, when the body was kept whole
// and the token is new, one retry. Any other answer comes back as it came.
async function relay(host, route, req, res, token) {
  const inference = Boolean(token) && INFERENCE.has(`${host} ${route}`);
  const body = streamed(req, res, inference, () => tooLarge(res, body));
  const options = (value) => ({ host, method: req.method, path: req.url, headers: upstreamHeaders(host, req.rawHeaders, value) });
  let { request, answered } = open(options(token));
  body.target = request;
  let answer = await answered;
  if (inference && answer.statusCode === 401) {
    const real = await refresh(true);
    if (real?.accessToken && real.accessToken !== token && body.chunks) {
      body.target = null; // the rest is kept, not sent, and read on (it waited on this one's drain)
      if (body.ended) answer.resume();
      else request.destroy();
      req.resume();
      await body.done;
      if (!body.chunks || !body.ended) return refuse(res, 401, "the owner's login was refreshed meanwhile: try again");
      ({ request, answered } = open(options(real.accessToken)));
      for (const c of body.chunks) request.write(c);
      request.end();
      answer = await answered;
    }
  }
  res.sendDate = false;
  res.writeHead(answer.statusCode, answer.statusMessage, answer.rawHeaders);
  res.flushHeaders();
  answer.pipe(res);
  answer.on("error", () => res.destroy());
  res.on("close", () => answer.destroy());
}

// A token endpoint's request: a run's refresh gets its sentinels back, the owner's (box shell's
// Claude Code, with a refresh token this broker holds or used) the pair the broker holds. True
// when answered here; `body`: what it read, to go on upstream otherwise.
async function tokenAsked(req, res, body) {
  let asked = null;
  try {
    asked = JSON.parse(body.toString("utf8"));
  } catch {
    asked = Object.fromEntries(new URLSearchParams(body.toString("utf8")));
  }
  const given = asked?.grant_type === "refresh_token" ? asked.refresh_token : null;
  const run = given ? runOf("refresh", given) : null;
  if (run) {
    granted(res, { accessToken: run.access, refreshToken: run.refresh, expiresAt: Date.now() + SENTINEL_MS, scopes: login()?.scopes });
    return true;
  }
  if (given?.startsWith?.(`sk-ant-ort01-${SENTINEL}`)) return refuse(res, 400, "this run's login has ended"), true;
  const real = login();
  if (given && real && (given === real.refreshToken || rotated.has(given))) {
    granted(res, await refresh(given === real.refreshToken));
    return true;
  }
  return false;
}

const TOKEN_LIMIT = 64 * 1024; // a token request's body, read whole

async function readSmall(req, res) {
  const chunks = [];
  let size = 0;
  for await (const c of req) {
    size += c.length;
    if (size > TOKEN_LIMIT) return refuse(res, 413, `a token request's body is ${TOKEN_LIMIT / 1024} KiB at most`, "request_too_large", true), null;
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

async function onRequest(host, req, res) {
  if (req.socket.over) return refuse(res, 503, `${req.socket.over} connections at once; try again`, "overloaded_error", true);
  const target = req.url ?? "";
  if (!target.startsWith("/")) return refuse(res, 400, `refused ${shown(target)}: a request names a path, never a URL (origin-form alone)`, "invalid_request_error", true);
  const route = target.split("?")[0];
  if (TOKEN_HOSTS.includes(host) && req.method === "POST" && route === TOKEN_PATH) {
    const body = await readSmall(req, res);
    if (!body || (await tokenAsked(req, res, body))) return;
    return send({ host, method: req.method, path: target, headers: upstreamHeaders(host, req.rawHeaders, null) }, body)
      .then((answer) => answered(res, answer), (error) => failed(res, error));
  }
  const bearer = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
  const run = bearer?.startsWith(`sk-ant-oat01-${SENTINEL}`) ? runOf("access", bearer) : null;
  if (bearer?.startsWith(`sk-ant-oat01-${SENTINEL}`) && !run) return refuse(res, 401, "this run's login has ended, or was never the box's");
  if (run && !lent(req.method, host, route)) return refuse(res, 403, `refused ${shown(`${req.method} ${host}${route}`)}: not a path the box lends a run's login to (docs/broker.md)`, "permission_error", true);
  if (Number(req.headers["content-length"]) > BODY_LIMIT) return tooLarge(res, {});
  if (run && (run.busy ?? 0) >= PER_RUN) return refuse(res, 503, `a run makes ${PER_RUN} requests at once at most; try again`, "overloaded_error", true);
  if (run) {
    run.busy = (run.busy ?? 0) + 1;
    res.on("close", () => (run.busy -= 1));
  }
  try {
    const real = run ? await refresh(false) : null;
    if (run && !real) return refuse(res, 401, "the box holds no Claude login: run 'claude' in 'box shell' and log in");
    await relay(host, route, req, res, real?.accessToken ?? null);
  } catch (error) {
    failed(res, error);
  }
}

function answered(res, answer) {
  res.sendDate = false;
  res.writeHead(answer.statusCode, answer.statusMessage, answer.rawHeaders);
  answer.pipe(res);
}

function failed(res, error) {
  if (res.writableEnded) return; // answered already (413)
  if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain", connection: "close" }).end(`imd-box broker: ${error.message}\n`);
  else res.destroy();
}

// The requests of a TLS session the broker ended: for the host it named (SNI), one of HOSTS.
// Host names in one case everywhere: HOSTS as given (worker/paths), SNI lowercased.
const sessions = http.createServer({ keepAlive: true }, (req, res) =>
  onRequest(`${req.socket.servername}`.toLowerCase(), req, res).catch(() => res.destroy()),
);
let context = null; // the hosts' certificate, once set up
// The TLS sessions open now, counted against a limit: TLS_PORT's and the proxy's together, and each
// run's own port's (runPorts).
const shared = { open: 0, limit: CONNECTIONS, says: `the broker takes ${CONNECTIONS}` };
const HANDSHAKE_MS = 10 * 1000; // a client that does not finish its TLS handshake by then is let go

// A session over its pool's limit is still ended, to answer its requests 503 with the limit; one
// over twice the limit is let go at once, so that a flood of sessions costs the broker nothing more.
function ended(socket, pool = shared) {
  if (pool.open >= 2 * pool.limit) return socket.destroy();
  pool.open += 1;
  pool.sockets?.add(socket);
  socket.once("close", () => {
    pool.open -= 1;
    pool.sockets?.delete(socket);
  });
  socket.setTimeout(HANDSHAKE_MS, () => socket.destroy());
  const secure = new tls.TLSSocket(socket, {
    isServer: true,
    ALPNProtocols: ["http/1.1"],
    SNICallback: (name, done) => {
      const host = name.toLowerCase();
      if (HOSTS.includes(host)) return done(null, context);
      refusal(host, 443, "not one of Anthropic's login hosts");
      done(new Error("not a host of the broker's"));
    },
  });
  secure.over = pool.open > pool.limit ? pool.says : null;
  secure.on("error", () => socket.destroy());
  secure.once("secure", () => socket.setTimeout(0));
  sessions.emit("connection", secure);
}

// Why a CONNECT to host:port is refused, by name: every host but Anthropic's login hosts on 443 is.
// Which addresses it names private: a subset of the firewall's refused ranges, on purpose (imdbox/layout.py
// BROKER_PRIVATE_V4 says why); the reason is only named, every host but the login hosts is refused.
const PRIVATE = new net.BlockList();
for (const family of ["ipv4", "ipv6"]) {
  for (const range of FACTS.private[family]) {
    const [address, prefix] = range.split("/");
    PRIVATE.addSubnet(address, Number(prefix), family);
  }
}

function why(host, port) {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  const family = net.isIP(bare) === 6 ? "ipv6" : "ipv4";
  if (bare === "localhost" || bare.endsWith(".localhost") || /^127\./.test(bare) || bare === "::1") return "the box's loopback";
  const own = Object.values(os.networkInterfaces()).flat().map((i) => i.address.toLowerCase());
  if (own.includes(bare)) return "an address of the box's own";
  if (net.isIP(bare) && PRIVATE.check(bare, family)) return "a private address";
  if (!HOSTS.includes(bare)) return "not one of Anthropic's login hosts";
  return port === 443 ? null : `port ${port}, not 443`;
}

function refusal(host, port, reason) {
  const named = shown(host).slice(0, 100);
  say(`refused ${named}:${port}: ${reason}`);
  return `imd-box broker: refused ${named}:${port}: ${reason}; the broker reaches Anthropic's login hosts on 443 alone\n`;
}

function tunnel(req, client, head) {
  client.on("error", () => {});
  if (!context) return client.end("HTTP/1.1 503 Service Unavailable\r\n\r\n");
  const [host = "", portText] = (req.url ?? "").split(/:(?=[0-9]+$)/);
  const port = Number(portText);
  const reason = !host || !Number.isInteger(port) ? "not HOST:PORT" : why(host, port);
  if (reason) {
    const body = refusal(host || req.url || "", port || 0, reason);
    return client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  }
  client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  if (head.length) client.unshift(head);
  ended(client);
}

// Bound first: a broker that cannot take its ports (another holds them) ends here, having touched
// nothing of the other's; broker/start's loop starts it again once they are free.
const fatal = (error) => {
  say(`cannot listen: ${error.message}`);
  process.exit(1);
};
const proxy = http.createServer((req, res) => {
  res.writeHead(405, { "content-type": "text/plain" }).end("imd-box broker: a proxy for CONNECT alone\n");
});
proxy.on("connect", tunnel);
proxy.on("clientError", (_, socket) => socket.destroy());
// noDelay: a response's headers and body are records of their own, and Nagle's wait for an ACK
// of the first (delayed by the client) cost each request 40 ms.
const direct = net.createServer({ noDelay: true }, (socket) => {
  socket.on("error", () => {});
  if (context) ended(socket);
  else socket.destroy();
});
const listening = (server, where) =>
  new Promise((resolve) => {
    server.once("error", fatal);
    server.listen(where, "127.0.0.1", resolve);
  });
await listening(proxy, port);
await listening(direct, tlsPort);

// Then set up: its folder, the certificate and the runs an earlier broker of this box left.
fs.mkdirSync(path.join(dir, "runs"), { recursive: true, mode: 0o700 });
context = kept() ?? certificates();
await takeUp();
const socket = path.join(dir, "control.sock");
fs.rmSync(socket, { force: true });
const controller = http.createServer(control);
controller.on("error", fatal);
controller.listen(socket, () => {
  fs.chmodSync(socket, 0o600);
  // Quiet on a first start (a one-off box's log is its command's output); a restart is news.
  if (runs.size) say(`started again: ${runs.size} live runs taken up`);
});
process.on("uncaughtException", (error) => say(`${error.message}`));
