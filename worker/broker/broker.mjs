// broker DIR PORT TLS_PORT LOGIN MODE HOST...: the box's Claude login broker, at the door's side,
// outside the worker's view, for Anthropic's login hosts (HOST...) alone.
//
// The owner's Claude login (LOGIN, ~/.claude/.credentials.json) is read here and in `box shell`
// alone: no job's jail and not the worker's view holds it. A job's Claude Code holds a sentinel
// login of the same shape instead, one for each run (minted on DIR/control.sock by its launcher,
// worker/jail.d/login, and forgotten when the run ends), and reaches Anthropic's hosts here: its
// jail names them at its own loopback, where TLS_PORT is forwarded as 443 (worker/jail.d/network),
// so nothing else it sends comes here. The broker ends TLS itself, for the host the client names
// (SNI) and no other, with a certificate of its own CA that the jail trusts (DIR/trust.pem: the
// box's bundle and that CA), and on each request swaps a live run's sentinel for the owner's
// token; every other byte goes on as it came, to that host, and the answer comes back as it
// streams. PORT, on the box's loopback, is a CONNECT proxy for the owner's Claude Code in `box
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
const [dir, portText, tlsPortText, loginFile, mode, ...HOSTS] = process.argv.slice(2);
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
const SENTINEL = "imd-box-sentinel-";
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
const RETRY_MS = 60 * 1000;
let refused = null; // { key, at, final } of the login whose refresh failed

function refresh(force) {
  const current = login();
  if (!current) return Promise.resolve(null);
  if (!force && current.expiresAt - Date.now() > EARLY_MS) return Promise.resolve(current);
  if (refused?.key === seen.key && (refused.final || Date.now() - refused.at < RETRY_MS)) return Promise.resolve(current);
  refreshing ??= refreshNow(current).finally(() => (refreshing = null));
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
    refused = { key: seen.key, at: Date.now(), final };
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
const runs = new Map(); // id -> { access, refresh, pid, start, file }
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
  fs.rmSync(record(id), { force: true });
  fs.rmSync(run.file, { force: true });
}

// The runs an earlier broker of this box minted, whose launchers live; the rest of DIR/runs goes.
function takeUp() {
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
}

// A login file of the owner's shape (`real`) holding sentinel tokens, which never expire.
function sentinelLogin(real, access, refresh) {
  return JSON.stringify({ claudeAiOauth: { ...real, accessToken: access, refreshToken: refresh, expiresAt: Date.now() + SENTINEL_MS } });
}

function mint(pid) {
  const real = login();
  const start = started(pid);
  if (!real || !start) return null;
  const id = crypto.randomBytes(8).toString("hex");
  const run = { access: token("oat"), refresh: token("ort"), pid, start, file: path.join(dir, "runs", `${id}.json`) };
  writeAtomically(run.file, sentinelLogin(real, run.access, run.refresh));
  writeAtomically(record(id), JSON.stringify(run));
  runs.set(id, run);
  return id;
}

// A login of the owner's shape whose tokens no run holds: the worker's view shows it, so the
// worker sees Claude logged in, and the broker refuses it.
function inert() {
  const real = login();
  return real ? sentinelLogin(real, token("oat"), token("ort")) : null;
}

// The launchers' side: POST /runs (pid=<the launcher's>) -> "run <id>" (its sentinel login is
// DIR/runs/<id>.json), "none" (no login to stand in for) or "owner" (MODE jail); DELETE
// /runs/<id>; GET /view (the worker's view's login), GET /status.
function control(req, res) {
  const reply = (status, text) => res.writeHead(status, { "content-type": "text/plain" }).end(`${text}\n`);
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    if (req.method === "POST" && req.url === "/runs") {
      const pid = /^pid=([0-9]+)$/.exec(body.trim())?.[1];
      if (!pid) return reply(400, "POST /runs takes pid=<the launcher's pid>");
      if (mode === "jail") return reply(200, "owner"); // the file as it is, as before the broker
      const id = mint(pid);
      return reply(200, id ? `run ${id}` : "none");
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
      }));
    }
    reply(404, "the broker takes POST /runs, DELETE /runs/<id>, GET /view and GET /status");
  });
}

// --- the proxy -----------------------------------------------------------------------------------
const upstreamAgent = new https.Agent({ keepAlive: true, maxSockets: 64 });

function send(options, body) {
  return new Promise((resolve, reject) => {
    const request = https.request({ port: 443, agent: upstreamAgent, servername: options.host, setDefaultHeaders: false, ...options }, resolve);
    request.on("error", reject);
    request.end(body);
  });
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

function refuse(res, status, message) {
  const body = JSON.stringify({ type: "error", error: { type: "authentication_error", message: `imd-box: ${message}` } });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
}

// A token endpoint's answer: the pair `oauth` holds, as long as it has left.
function granted(res, oauth) {
  const body = JSON.stringify({
    token_type: "Bearer", access_token: oauth.accessToken, refresh_token: oauth.refreshToken,
    expires_in: Math.max(0, Math.floor((oauth.expiresAt - Date.now()) / 1000)), scope: (oauth.scopes ?? []).join(" "),
  });
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
}

// The raw headers with the login's value swapped where it was (the same names, order and case).
function swapped(raw, value) {
  const out = raw.slice();
  for (let i = 0; i < out.length; i += 2) {
    if (out[i].toLowerCase() === "authorization") out[i + 1] = `Bearer ${value}`;
  }
  return out;
}

async function onRequest(host, req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = Buffer.concat(chunks);
  const bearer = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? "")?.[1];

  if (TOKEN_HOSTS.includes(host) && req.method === "POST" && (req.url ?? "").split("?")[0] === TOKEN_PATH) {
    let asked = null;
    try {
      asked = JSON.parse(body.toString("utf8"));
    } catch {
      asked = Object.fromEntries(new URLSearchParams(body.toString("utf8")));
    }
    const given = asked?.grant_type === "refresh_token" ? asked.refresh_token : null;
    const run = given ? runOf("refresh", given) : null;
    if (run) {
      return granted(res, { accessToken: run.access, refreshToken: run.refresh, expiresAt: Date.now() + SENTINEL_MS, scopes: login()?.scopes });
    }
    if (given?.startsWith?.(`sk-ant-ort01-${SENTINEL}`)) return refuse(res, 400, "this run's login has ended");
    const real = login();
    if (given && real && (given === real.refreshToken || rotated.has(given))) {
      return granted(res, await refresh(given === real.refreshToken));
    }
  }

  let run = null;
  if (bearer?.startsWith(`sk-ant-oat01-${SENTINEL}`)) {
    run = runOf("access", bearer);
    if (!run) return refuse(res, 401, "this run's login has ended, or was never the box's");
  }
  const forward = async (value) => {
    const headers = value ? swapped(req.rawHeaders, value) : req.rawHeaders;
    return send({ host, method: req.method, path: req.url, headers }, body.length ? body : undefined);
  };
  let answer;
  try {
    let real = run ? await refresh(false) : null;
    if (run && !real) return refuse(res, 401, "the box holds no Claude login: run 'claude' in 'box shell' and log in");
    answer = await forward(real?.accessToken);
    if (run && answer.statusCode === 401) {
      answer.resume();
      real = await refresh(true);
      answer = await forward(real.accessToken);
      if (answer.statusCode === 401 && !state.problem) {
        state.problem = "Anthropic refused the owner's Claude login (401) after a refresh: run 'claude' in 'box shell' and log in again";
        say(state.problem);
      }
    }
  } catch (error) {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" }).end(`imd-box broker: ${error.message}\n`);
    return;
  }
  res.sendDate = false;
  res.writeHead(answer.statusCode, answer.statusMessage, answer.rawHeaders);
  res.flushHeaders();
  answer.on("data", (c) => res.write(c));
  answer.on("end", () => res.end());
  answer.on("error", () => res.destroy());
  res.on("close", () => answer.destroy());
}

// The requests of a TLS session the broker ended: for the host it named (SNI), one of HOSTS.
const sessions = http.createServer({ keepAlive: true }, (req, res) =>
  onRequest(req.socket.servername, req, res).catch(() => res.destroy()),
);
let context = null; // the hosts' certificate, once set up

function ended(socket) {
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
  secure.on("error", () => socket.destroy());
  sessions.emit("connection", secure);
}

// Why a CONNECT to host:port is refused, by name: every host but Anthropic's login hosts on 443 is.
const PRIVATE = new net.BlockList();
for (const [address, prefix] of [["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["169.254.0.0", 16], ["172.16.0.0", 12], ["192.168.0.0", 16]])
  PRIVATE.addSubnet(address, prefix, "ipv4");
for (const [address, prefix] of [["fc00::", 7], ["fe80::", 10], ["::", 128]]) PRIVATE.addSubnet(address, prefix, "ipv6");

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
  const shown = `${host}`.replace(/[^\x21-\x7e]/g, "?").slice(0, 100);
  say(`refused ${shown}:${port}: ${reason}`);
  return `imd-box broker: refused ${shown}:${port}: ${reason}; the broker reaches Anthropic's login hosts on 443 alone\n`;
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
takeUp();
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
