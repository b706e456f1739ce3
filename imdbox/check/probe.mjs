// `box check`'s probes. Runs INSIDE a throwaway box, as the box's command: after
// the entrypoint has set the firewall and dropped to `imd`, so every probe sees
// exactly what the worker sees. Shipped as `node --input-type=module -e <this>
// <config-json>`; prints one line "IMD-BOX-CHECK <json>" with
// {"results": [{"id", "ok", "detail"}, ...]}.
//
// Rules every probe keeps:
//  - A probe that cannot run (tool missing, timeout, crash) is a FAIL, never ok.
//  - A network wall is ok only on a refusal by the box's own firewall: an
//    immediate EHOSTUNREACH/EACCES/EPERM/ENETUNREACH. A connection, or a reset
//    from the far side (ECONNREFUSED: the packet got there), or silence is FAIL.
//  - Secrets are never printed: only whether they could be read.
//  - Nothing planted in the volume answers for the image: every tool runs by its
//    path in the image (cfg.tools), and children get a PATH of image directories.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import dgram from "node:dgram";
import dns from "node:dns";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const cfg = JSON.parse(process.argv[1] || "{}");
process.env.PATH = cfg.path || "/usr/sbin:/usr/bin:/sbin:/bin";
/** A tool's path in the image; a name the config does not know cannot run (no PATH lookup). */
const tool = (name) => (name.startsWith("/") ? name : (cfg.tools || {})[name] || `/nonexistent/${name}`);
const HOME = cfg.home || os.homedir();
const PORT = cfg.port || 80;
const CONNECT_MS = cfg.connect_ms || 2000;
// The box's IPv6 refusal of a TCP connect comes with the first SYN retransmit, at the kernel's
// initial RTO (1 s; IPv4's comes at once): the ICMPv6 error for the first SYN lands while
// connect() still holds the socket and is kept only as a soft error.
const V6_CONNECT_MS = CONNECT_MS + 1000;
// A tool's own limit. Lines 3 (find over the whole image) and 16 (srt, the browser) take about
// a second on an idle machine and several on one whose cores are busy: a Mac busy with the
// worker's jobs is such a machine, and a slow tool is no open wall.
// The browser's budget (box's one figure, imdbox/browser.py, handed in as check.mjs's argument):
// it stays under the line limit (that budget plus its slack), so a hung tool's line names the tool.
const BROWSER_BUDGET_MS = Number(cfg.browser_check[1]);
const TOOL_MS = cfg.tool_ms || BROWSER_BUDGET_MS;
const BROWSER_SLACK_MS = 3000; // node's start and check.mjs's clean-up, on top of the browser's budget
// EADDRNOTAVAIL: no source address for that family at all (IPv6 on a v4-only network).
const REFUSALS = new Set(["EHOSTUNREACH", "EACCES", "EPERM", "ENETUNREACH", "EADDRNOTAVAIL"]);

const short = (s, n = 160) => {
  const t = String(s ?? "").replace(/\s+/g, " ").trim();
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
};

/** Run a program; never throws. {code, out, err, missing, timedOut, spawnError} */
function run(cmd, args = [], { timeout = TOOL_MS, input = null, env = process.env, cwd = undefined } = {}) {
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
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
      if (exited) letGo();
    }, timeout);
    child.on("exit", () => {
      exited = true;
      if (timedOut) letGo();
    });
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    if (input !== null) child.stdin.end(input);
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ code: null, out, err: err || String(e), missing: e.code === "ENOENT", spawnError: e.code || String(e) });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err, missing: false, timedOut });
    });
  });
}

/** A node script's version from its package's package.json (beside its dist/), in a run's
 * shape. Not `srt --version`: that loads all of srt (0.2 s of CPU a check), and the
 * read jail's line runs srt anyway. */
function packageVersion(name) {
  const file = path.join(path.dirname(tool(name)), "..", "package.json");
  try {
    return { code: 0, out: String(JSON.parse(fs.readFileSync(file, "utf8")).version), err: "" };
  } catch (e) {
    const missing = e.code === "ENOENT" || e.code === "ENOTDIR";
    return { code: null, out: "", err: "", missing, spawnError: missing ? undefined : e.code || String(e) };
  }
}

/** Why a tool run is not usable evidence, or null when it ran. */
function unusable(name, r) {
  if (r.missing) return `${name} is missing from the box`;
  if (r.spawnError) return `${name} could not run: ${r.spawnError}`;
  if (r.timedOut) return `${name} timed out`;
  return null;
}

function statusFields(pid = "self") {
  const fields = {};
  for (const line of fs.readFileSync(`/proc/${pid}/status`, "utf8").split("\n")) {
    const i = line.indexOf(":");
    if (i > 0) fields[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return fields;
}

/** TCP connect: refused (by a filter) | reached (connected or reset by the peer) | timeout | error. */
function tcp(host, port = PORT, ms = CONNECT_MS) {
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
      else if (e.code === "ECONNREFUSED") done("reached", "reset by the far side (ECONNREFUSED)");
      else done("error", e.code || String(e));
    });
  });
}

/** UDP send: refused (the send failed at the filter) | sent (it left the box) | answered. */
function udp(host, port, { broadcast = false, payload = Buffer.from("imd-box-check"), wait = 300 } = {}) {
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
    sock.on("error", (e) => done(REFUSALS.has(e.code) ? "refused" : "error", e.code || String(e)));
    sock.on("message", () => done("answered", "an answer came back"));
    sock.bind(0, () => {
      if (broadcast) sock.setBroadcast(true);
      sock.send(payload, port, host, (e) => {
        if (e) done(REFUSALS.has(e.code) ? "refused" : "error", e.code || String(e));
        else setTimeout(() => done("sent", "the packet left the box"), wait);
      });
    });
  });
}

/** Several refusal probes; ok only if every one was refused. */
async function refusedAll(label, probes) {
  const results = await Promise.all(probes.map(async ([name, p]) => [name, await p]));
  const bad = results.filter(([, r]) => r.outcome !== "refused");
  if (results.length === 0) return { ok: false, detail: `${label}: nothing to probe` };
  if (bad.length) return { ok: false, detail: bad.map(([n, r]) => `${n}: ${r.outcome.toUpperCase()} (${r.how})`).join("; ") };
  return { ok: true, detail: results.map(([n, r]) => `${n} ${r.how}`).join(", ") };
}

const dnsQuery = () =>
  // A minimal DNS query for "." NS: harmless if it ever got out.
  Buffer.from([0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1]);

// ------------------------------------------------------------------ the walls

async function user() {
  const uid = process.getuid();
  const gid = process.getgid();
  const groups = process.getgroups();
  const name = os.userInfo().username;
  const detail = `uid ${uid} (${name}), gid ${gid}, groups ${groups.join(",") || "none"}`;
  const ok = uid === cfg.expect.uid && name === cfg.expect.user && uid !== 0 && gid !== 0 && !groups.includes(0);
  return { ok, detail: ok ? detail : `${detail}: expected uid ${cfg.expect.uid} (${cfg.expect.user}), never root` };
}

async function capabilities() {
  const s = statusFields();
  const sets = ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"];
  const held = sets.filter((k) => !/^0+$/.test(s[k] || "x"));
  if (held.length) return { ok: false, detail: `not empty: ${held.map((k) => `${k}=${s[k]}`).join(" ")}` };
  return { ok: true, detail: "CapInh CapPrm CapEff CapBnd CapAmb all 0" };
}

async function noNewPrivs() {
  // The flag itself, for this process and for PID 1 (everything after the drop
  // descends from it), and nothing it would have to stop: no setuid or setgid
  // file anywhere imd can reach in the image.
  const mine = statusFields().NoNewPrivs;
  let first;
  try {
    first = statusFields(1).NoNewPrivs;
  } catch (e) {
    first = `unreadable (${e.code || e})`;
  }
  const r = await run("find", ["/", "-xdev", "-perm", "/6000", "-type", "f"], { timeout: TOOL_MS });
  const why = unusable("find", r);
  const flags = `NoNewPrivs ${mine} (PID 1: ${first})`;
  if (why) return { ok: false, detail: `${flags}; ${why}` };
  const found = r.out.split("\n").filter(Boolean);
  const ok = mine === "1" && first === "1" && found.length === 0;
  const files = found.length ? `setuid/setgid files: ${short(found.join(" "), 120)}` : "no setuid or setgid file in the image";
  return { ok, detail: `${flags}; ${files}` };
}

async function seccomp() {
  const s = statusFields();
  // personality(ADDR_NO_RANDOMIZE) needs no privilege but Docker's filter refuses it.
  const r = await run("setarch", [os.machine(), "-R", "true"]);
  const why = unusable("setarch", r);
  const mode = `Seccomp ${s.Seccomp} (filters: ${s.Seccomp_filters ?? "?"})`;
  if (why) return { ok: false, detail: `${mode}; ${why}` };
  const blocked = r.code !== 0;
  const ok = s.Seccomp === "2" && blocked;
  return {
    ok,
    detail: `${mode}; personality(ADDR_NO_RANDOMIZE) ${blocked ? "refused" : "ALLOWED"}${blocked ? "" : " (no filter in force)"}`,
  };
}

function mountinfo() {
  return fs
    .readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [pre, post] = line.split(" - ");
      const f = pre.split(" ");
      const g = post.split(" ");
      const unesc = (s) => s.replace(/\\(\d{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
      return { root: unesc(f[3]), point: unesc(f[4]), options: f[5], fstype: g[0], source: g[1] };
    });
}

const PSEUDO_FS = new Set(["proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "shm"]);
const DOCKER_FILES = new Set(["/etc/resolv.conf", "/etc/hostname", "/etc/hosts"]);
const SOCKETS = [
  "/var/run/docker.sock",
  "/run/docker.sock",
  "/run/host-services/docker.proxy.sock",
  "/run/host-services/ssh-auth.sock",
  "/var/run/docker/docker.sock",
];

async function mounts() {
  const seen = [];
  const bad = [];
  for (const m of mountinfo()) {
    if (m.point === "/") {
      seen.push("image");
      continue;
    }
    if (PSEUDO_FS.has(m.fstype)) continue;
    if (DOCKER_FILES.has(m.point) && m.root.includes("/containers/")) continue;
    if (m.point === HOME && /\/volumes\/[^/]+\/_data$/.test(m.root)) {
      seen.push(`volume at ${HOME}`);
      continue;
    }
    bad.push(`${m.root} (${m.fstype}) at ${m.point}`);
  }
  const sockets = [...SOCKETS, path.join(HOME, ".docker/run/docker.sock")].filter((p) => {
    try {
      return fs.statSync(p).isSocket();
    } catch {
      return false;
    }
  });
  if (sockets.length) bad.push(`Docker socket at ${sockets.join(", ")}`);
  if (bad.length) return { ok: false, detail: `host mounts: ${bad.join("; ")}` };
  return { ok: true, detail: `only the image, the volume at ${HOME} and Docker's pseudo filesystems; no Docker socket` };
}

const argvOf = (prefix, args) => {
  const argv = [...prefix, ...args];
  return [argv[0], argv.slice(1)];
};

async function iptablesAttempts(prefix = []) {
  // prefix: a jail to run the attempts in (e.g. ["unshare", "-U", "-r", "--"]).
  const jail = prefix.length ? path.basename(prefix[0]) : null;
  const attempt = async (label, args) => {
    const argv = [...prefix, ...args];
    const r = await run(argv[0], argv.slice(1));
    const why = unusable(jail || path.basename(args[0]), r);
    if (why) return { label, ran: false, why };
    return { label, ran: true, allowed: r.code === 0, msg: short(r.err || r.out, 90) };
  };
  // Changing and flushing are tried on a chain of the check's own: the same permission as
  // touching OUTPUT, but if the wall is down the probe does not open it for the other probes.
  const chain = `IMD-BOX-CHECK-${process.pid}`;
  const ipt = tool("iptables");
  const list = await attempt("list", [ipt, "-w", "-S"]);
  const list6 = await attempt("list v6", [tool("ip6tables"), "-w", "-S"]);
  const change = await attempt("add a chain", [ipt, "-w", "-N", chain]);
  const flush = await attempt("flush", [ipt, "-w", "-F", chain]);
  if (change.ran && change.allowed) await run(...argvOf(prefix, [ipt, "-w", "-X", chain]));
  return [list, list6, change, flush];
}

function judgeAttempts(attempts) {
  const notRun = attempts.filter((a) => !a.ran);
  if (notRun.length) return { ok: false, detail: notRun.map((a) => `${a.label}: ${a.why}`).join("; ") };
  const allowed = attempts.filter((a) => a.allowed);
  if (allowed.length) return { ok: false, detail: `ALLOWED: ${allowed.map((a) => a.label).join(", ")}` };
  const why = attempts[0].msg.includes("Permission denied") ? "Permission denied" : attempts[0].msg;
  return { ok: true, detail: `${attempts.map((a) => a.label).join(", ")}: refused (${why})` };
}

async function firewall() {
  const j = judgeAttempts(await iptablesAttempts());
  return { ok: j.ok, detail: `as imd: ${j.detail}` };
}

/** What `promise` gives within `ms`, else `late()`. An answer already waiting when the time
 * is up still counts: on a starved event loop libuv runs the due timer before it polls for
 * the answer (a resolver's socket, the thread pool's lookup), so the verdict waits one poll. */
async function within(promise, ms, late) {
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

/** A name's IPv4 addresses through the system resolver, bounded (no upstream DNS can mean a long hang). */
async function addressesOf(name, ms = CONNECT_MS) {
  try {
    const found = await within(dns.promises.lookup(name, { all: true, family: 4 }), ms, () => []);
    return found.map((a) => a.address);
  } catch {
    return [];
  }
}

function gatewaysV4() {
  const out = new Set();
  try {
    for (const line of fs.readFileSync("/proc/net/route", "utf8").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 2 && f[2] !== "00000000") {
        const h = f[2];
        out.add([6, 4, 2, 0].map((i) => parseInt(h.slice(i, i + 2), 16)).join("."));
      }
    }
  } catch {}
  return [...out];
}

function gatewaysV6() {
  const out = new Set();
  try {
    for (const line of fs.readFileSync("/proc/net/ipv6_route", "utf8").split("\n")) {
      const f = line.trim().split(/\s+/);
      if (f.length > 4 && !/^0+$/.test(f[4])) out.add(f[4].match(/.{4}/g).join(":").replace(/\b0{1,3}/g, ""));
    }
  } catch {}
  return [...out];
}

async function mac() {
  const probes = [];
  const names = [];
  const found = await Promise.all(cfg.targets.mac_names.map(async (name) => [name, await addressesOf(name)]));
  for (const [name, addrs] of found) {
    if (!addrs.length) names.push(name);
    for (const a of addrs) probes.push([`${name} ${a}:${PORT}`, tcp(a)]);
  }
  for (const gw of gatewaysV4()) probes.push([`gateway ${gw}:${PORT}`, tcp(gw)]);
  if (!probes.length) return { ok: false, detail: "no gateway and no host.docker.internal: nothing to probe" };
  const r = await refusedAll("the Mac", probes);
  return names.length ? { ok: r.ok, detail: `${r.detail}; ${names.join(", ")}: no such name here` } : r;
}

const ipList = (key, port = PORT) => cfg.targets[key].map((a) => [`${a}:${port}`, tcp(a, port)]);

async function lan() {
  return refusedAll("private ranges", ipList("lan"));
}
async function tailscale() {
  return refusedAll("Tailscale", ipList("tailscale"));
}
async function metadata() {
  return refusedAll("metadata", ipList("metadata"));
}

/** The directed broadcast address of every IPv4 subnet the box is on. */
function ownBroadcasts() {
  const toInt = (a) => a.split(".").reduce((n, o) => n * 256 + Number(o), 0);
  const toIp = (n) => [24, 16, 8, 0].map((b) => Math.floor(n / 2 ** b) % 256).join(".");
  const out = new Set();
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs || []) {
      if (a.family !== "IPv4" || a.internal) continue;
      const host = 2 ** 32 - 1 - toInt(a.netmask);
      if (host > 0) out.add(toIp(toInt(a.address) - (toInt(a.address) % (host + 1)) + host));
    }
  }
  return [...out];
}

async function multicast() {
  const targets = [...cfg.targets.multicast, ...ownBroadcasts().map((a) => [a, 9])];
  return refusedAll(
    "multicast",
    // SO_BROADCAST on every socket: a refusal must be the firewall's, not the socket's.
    targets.map(([a, port]) => [`udp ${a}:${port}`, udp(a, port, { broadcast: true })]),
  );
}

async function ipv6() {
  const hasV6 = fs.existsSync("/proc/net/if_inet6") && fs.readFileSync("/proc/net/if_inet6", "utf8").trim().length > 0;
  const targets = new Set(cfg.targets.ipv6);
  for (const gw of gatewaysV6()) targets.add(gw);
  const probes = [...targets].map((a) => [`[${a}]:${PORT}`, tcp(a, PORT, V6_CONNECT_MS)]);
  for (const [a, port] of cfg.targets.multicast6) probes.push([`udp [${a}]:${port}`, udp(a, port)]);
  const r = await refusedAll("IPv6", probes);
  const global = hasV6
    ? fs
        .readFileSync("/proc/net/if_inet6", "utf8")
        .split("\n")
        .filter((l) => l && !l.startsWith("00000000000000000000000000000001") && !l.startsWith("fe80"))
    : [];
  return { ok: r.ok, detail: `${global.length ? `v6 addresses here: ${global.length}; ` : "no v6 address here; "}${r.detail}` };
}

async function dnsWall() {
  // The bound is ours (within), not c-ares's own timer, which would end the query on a
  // starved loop before the answer waiting in its socket was read: c-ares gets longer.
  const resolver = new dns.promises.Resolver({ timeout: CONNECT_MS * 2, tries: 1 });
  const query = resolver.resolve4(cfg.dns_name).catch((e) => e);
  const resolved = await within(query, CONNECT_MS, () => {
    resolver.cancel();
    return Object.assign(new Error(`no answer in ${CONNECT_MS} ms`), { code: "ETIMEOUT" });
  });
  const probes = [];
  for (const server of cfg.targets.dns_servers) {
    probes.push([`udp ${server}:53`, udp(server, 53, { payload: dnsQuery(), wait: 500 })]);
    probes.push([`tcp ${server}:53`, tcp(server, 53)]);
  }
  const other = await refusedAll("other DNS servers", probes);
  const servers = dns.getServers().join(",");
  const lookedUp = Array.isArray(resolved);
  const first = lookedUp
    ? `${cfg.dns_name} -> ${resolved[0]} via ${servers}`
    : `${cfg.dns_name} did NOT resolve via ${servers} (${resolved.code || resolved})`;
  return { ok: lookedUp && other.ok, detail: `${first}; other servers: ${other.detail}` };
}

async function internet() {
  const started = Date.now();
  try {
    const res = await fetch(cfg.internet_url, { signal: AbortSignal.timeout(cfg.internet_ms || 6000), redirect: "manual" });
    await res.arrayBuffer().catch(() => null);
    return { ok: true, detail: `GET ${cfg.internet_url} -> ${res.status} in ${Date.now() - started} ms` };
  } catch (e) {
    const cause = e.cause ? e.cause.code || e.cause.message : e.name === "TimeoutError" ? "timed out" : e.message;
    return { ok: false, detail: `GET ${cfg.internet_url} failed: ${short(cause, 100)}` };
  }
}

async function browser() {
  const [script, budgetMs] = cfg.browser_check;
  if (!fs.existsSync(script)) return { ok: false, detail: `${script} is missing from the image` };
  // check.mjs gives up after its budget; node's start and the clean-up get BROWSER_SLACK_MS more.
  const r = await run(process.execPath, [script, budgetMs], { timeout: BROWSER_BUDGET_MS + BROWSER_SLACK_MS });
  const why = unusable("the browser check", r);
  if (why) return { ok: false, detail: why };
  const last = r.out.trim().split("\n").pop() || "";
  try {
    const j = JSON.parse(last);
    return { ok: j.ok === true && r.code === 0, detail: short(j.detail, 200) || `exit ${r.code}` };
  } catch {
    return { ok: false, detail: `no result line (exit ${r.code}): ${short(r.err || r.out, 120)}` };
  }
}

// The secrets the home holds once set up. Paths follow the tools' own env vars.
function secretPaths() {
  const claudeDir = process.env.CLAUDE_CONFIG_DIR || path.join(HOME, ".claude");
  const imdDir = process.env.IDENTITYMD_HOME || path.join(HOME, ".identitymd");
  return {
    claudeDir,
    imdDir,
    claudeLogin: path.join(claudeDir, ".credentials.json"),
    deviceKey: path.join(imdDir, "config.json"),
    toolsEnv: path.join(imdDir, "tools.env"),
    workRoot: path.join(imdDir, "work"),
  };
}

const CANARY = ".imd-box-check-canary";
const CANARY_TEXT = "imd-box check canary: the read jail must not see this\n";

/** A file that is not there yet, made for the test (never over a real one: O_EXCL). */
function makeCanary(file, made) {
  const dir = path.dirname(file);
  const missing = [];
  for (let d = dir; d !== path.dirname(d) && !fs.existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) {
    fs.mkdirSync(d, { mode: 0o700 });
    made.push({ path: d });
  }
  fs.writeFileSync(file, CANARY_TEXT, { mode: 0o600, flag: "wx" });
  made.push({ path: file, ino: fs.statSync(file).ino });
}

/** What the jail must not read (the real login, device key and tools.env, or a canary AT
 * each path when it does not exist yet), a canary in another job's workspace and one in the
 * home itself (the jail is the whole home, not a list of files), and the workspace of the job
 * the jail runs for, which it must read: srt runs in it, as Claude Code runs a job's command. */
function jailTargets(made) {
  const p = secretPaths();
  const secrets = [];
  for (const [label, file] of [
    ["the Claude login", p.claudeLogin],
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
  for (const [label, file] of [
    ["another job's workspace", path.join(p.workRoot, `${CANARY}-other`, "file")],
    ["the rest of the home", path.join(HOME, CANARY)],
  ]) {
    makeCanary(file, made);
    secrets.push([label, file]);
  }
  const workspace = path.join(p.workRoot, CANARY);
  const work = path.join(workspace, "file");
  makeCanary(work, made);
  return { secrets, work, workspace };
}

/** Remove what the test made, newest first, and forget it (the exit's pass touches only what
 * a cut-off line left); a file replaced meanwhile (a login written while the check ran) is
 * not ours any more and stays. */
function cleanup(made) {
  for (const m of made.splice(0).reverse()) {
    try {
      if (m.ino === undefined) fs.rmdirSync(m.path);
      else if (fs.statSync(m.path).ino === m.ino && fs.readFileSync(m.path, "utf8") === CANARY_TEXT) fs.unlinkSync(m.path);
    } catch {}
  }
}

/** A regular file's digest, read through the one descriptor it was checked on. Opened
 * without waiting: a FIFO planted where a secret goes would block the probe's one thread
 * on its open or its read, and every line with it. */
function sha256(file) {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      const kind = st.isFIFO() ? "fifo" : st.isDirectory() ? "directory" : st.isSocket() ? "socket" : "device";
      throw Object.assign(new Error(`${file} is a ${kind}`), { code: "ENOTREG", kind });
    }
    return createHash("sha256").update(fs.readFileSync(fd)).digest("hex");
  } finally {
    fs.closeSync(fd);
  }
}

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
const MADE = [];

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

/** A server that runs until stopped: {url, stop} once it prints its port, else {why, stop}. */
function startPreview(cmd, args, { cwd, env }) {
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise((r) => child.once("close", r));
    const stop = async () => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
      await exited;
    };
    const give = (r) => {
      clearTimeout(timer);
      resolve(r);
    };
    const timer = setTimeout(() => {
      give({ why: "srt in the job's jail timed out starting a preview server", stop });
      stop();
    }, TOOL_MS);
    child.on("error", (e) => give({ why: `srt in the job's jail could not run: ${e.code || e}` }));
    child.stderr.on("data", (d) => (err += d));
    child.stdout.on("data", (d) => {
      out += d;
      const m = /IMD-PREVIEW (\d+)/.exec(out);
      if (m) give({ url: `http://127.0.0.1:${m[1]}/`, stop });
    });
    child.on("close", (code) => give({ why: `srt in the job's jail did not start a preview server (exit ${code}): ${short(err || out, 160)}`, stop }));
  });
}

async function readJail() {
  const claude = claudeSandboxSettings();
  if (claude.why) return { ok: false, detail: claude.why };
  let secrets, work, workspace;
  try {
    ({ secrets, work, workspace } = jailTargets(MADE));
  } catch (e) {
    cleanup(MADE);
    return { ok: false, detail: `cannot set up the test in ${HOME} (${e.code || e}): nothing proved` };
  }
  let scratch, preview;
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
    const inJail = (args) => [tool("jail"), ["claude", "--program", ...args], { cwd: workspace, env: { ...process.env, HOME } }];
    const sandboxed = (...args) => inJail([process.execPath, tool("srt"), "--settings", settings, "--", ...args]);
    // Each file is read, and through /proc/<pid>/root of this (outside) process; only a
    // digest leaves the jail, never the content.
    const viaProc = secrets.map(([, f]) => `/proc/${process.pid}/root${f}`);
    const asked = [...secrets.map(([, f]) => f), ...viaProc, work];
    const reads = `for f in "$@"; do d=$(${tool("sha256sum")} -- "$f" 2>/dev/null) && echo "IMD-JAIL $f \${d%% *}" || echo "IMD-JAIL $f denied"; done`;
    // A job's work needs the network: a preview server one command starts, reached by the
    // next command (which also fetches the internet URL) and by the browser.
    const bad = [];
    const [started, toolsRun] = await Promise.all([
      startPreview(...sandboxed(process.execPath, "-e", PREVIEW_SERVER, PREVIEW_TOKEN)),
      run(...inJail([tool("sh"), "-c", reads, "jail", ...asked])),
    ]);
    preview = started;
    let sandboxRun, browserRun;
    if (preview.why) bad.push(preview.why);
    else {
      const page = path.join(scratch, "page.html");
      fs.writeFileSync(page, browserPage(asked, preview.url));
      const next = `p=$1 i=$2 c=$3; shift 3; ${reads}; exec ${process.execPath} -e "$c" "$p" "$i"`;
      [sandboxRun, browserRun] = await Promise.all([
        run(...sandboxed(tool("sh"), "-c", next, "jail", preview.url, cfg.internet_url, NET_CLIENT, ...asked)),
        // The page may read files (a flag no job's browser has): what the jail holds is all it
        // can reach, so the jail, not Playwright's file:// guardrail, is what is proved.
        run(...inJail([tool("chromium"), "--allow-file-access-from-files", "--dump-dom", `file://${page}`])),
      ]);
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
    const readBy = (seen, skip = () => false) => {
      const read = [];
      secrets.forEach(([label, f], i) => {
        if (skip(label)) return;
        if (seen[f] === digest[f]) read.push(`${label} at ${f}`);
        if (seen[viaProc[i]] === digest[f]) read.push(`${label} through ${viaProc[i]}`);
      });
      return read;
    };
    // The jail holds the Claude login for Claude Code (its permission rules keep its tools
    // from it); nothing else of the home may be there.
    const login = (label) => label.startsWith("the Claude login");
    const views = [
      ["srt in the job's jail", sandboxRun, "the sandbox", () => false],
      ["the job's jail", toolsRun, `the job's jail (${tool("jail")})`, login],
      ["the browser in the job's jail", browserRun, "the browser in the job's jail", login],
    ];
    const seen = {};
    for (const [label, r, who, skip] of views) {
      if (!r) continue; // not run: no preview server to work with
      const v = seenBy(label, r, label.startsWith("the browser") ? digestOfBase64 : undefined);
      if (v.why) {
        bad.push(v.why);
        continue;
      }
      seen[label] = v.seen;
      const read = readBy(v.seen, skip);
      if (read.length) bad.push(`${who} READ ${read.join(", ")}${who === "the sandbox" ? ` (rules from ${claude.file})` : ""}`);
      if (v.seen[work] !== digest[work])
        bad.push(`${who} cannot read the job's own workspace either (${work}): not a jail a job can work in`);
    }
    const preview_ = `the preview server a sandboxed command started (${preview.url})`;
    for (const [label, by] of [["srt in the job's jail", "the next command"], ["the browser in the job's jail", "the browser"]]) {
      const got = (seen[label] || {})["net:preview"];
      if (label in seen && got !== PREVIEW_TOKEN) bad.push(`${preview_} is out of reach of ${by} (${short(got || "no answer", 60)})`);
    }
    const net = (seen["srt in the job's jail"] || {})["net:internet"];
    if ("srt in the job's jail" in seen && !/^\d+$/.test(net)) bad.push(`a sandboxed command cannot reach ${cfg.internet_url} (${short(net || "no answer", 60)})`);
    if (bad.length) return { ok: false, detail: bad.join("; ") };
    const labels = secrets.map(([l]) => l);
    return {
      ok: true,
      detail:
        `in a job's jail (${tool("jail")}), Claude's sandbox (srt, rules from ${claude.file}) cannot read ` +
        `${labels.slice(0, -1).join(", ")} or ${labels.at(-1)} — nor through /proc/<pid>/root — and Claude's own tools ` +
        `and its browser read none of them but the login; all three read the job's own workspace; the worker can; ` +
        `a preview server one command started is reached by the next command and by the browser; a command gets ` +
        `${cfg.internet_url} (${net})`,
    };
  } finally {
    if (preview && preview.stop) await preview.stop();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
    cleanup(MADE);
  }
}

function nodeConnectScript(host, port, ms) {
  return `import net from "node:net";const s=net.connect({host:${JSON.stringify(host)},port:${port}});
const t=setTimeout(()=>{console.log("timeout");process.exit(0)},${ms});
s.on("connect",()=>{console.log("reached connected");process.exit(0)});
s.on("error",(e)=>{console.log((${JSON.stringify([...REFUSALS])}.includes(e.code)?"refused ":"reached ")+e.code);process.exit(0)});`;
}

async function jailedRoot() {
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

function readNum(file) {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    return null;
  }
}

async function resources() {
  let cpus, memory, pids, version;
  if (fs.existsSync("/sys/fs/cgroup/cgroup.controllers")) {
    version = "v2";
    const cpuMax = readNum("/sys/fs/cgroup/cpu.max");
    if (cpuMax && !cpuMax.startsWith("max")) {
      const [q, p] = cpuMax.split(/\s+/).map(Number);
      cpus = q / p;
    }
    memory = readNum("/sys/fs/cgroup/memory.max");
    pids = readNum("/sys/fs/cgroup/pids.max");
  } else {
    version = "v1";
    const q = Number(readNum("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"));
    const p = Number(readNum("/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
    if (q > 0 && p > 0) cpus = q / p;
    memory = readNum("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    pids = readNum("/sys/fs/cgroup/pids/pids.max");
  }
  const mem = memory && /^\d+$/.test(memory) ? Number(memory) : null;
  const pid = pids && /^\d+$/.test(pids) ? Number(pids) : null;
  const bad = [];
  if (!(cpus > 0) || cpus > cfg.expect.cpus + 1e-6) bad.push(`cpus ${cpus ?? "unlimited"} (want ≤ ${cfg.expect.cpus})`);
  // A v1 "unlimited" memory reads as a huge number; anything above the cap fails.
  if (!mem || mem > cfg.expect.memory) bad.push(`memory ${mem ? gib(mem) : memory ?? "unreadable"} (want ≤ ${gib(cfg.expect.memory)})`);
  if (!pid || pid > cfg.expect.pids) bad.push(`pids ${pids ?? "unreadable"} (want ≤ ${cfg.expect.pids})`);
  const seen = `cpus ${cpus ?? "max"}, memory ${mem ? gib(mem) : memory}, pids ${pids} (cgroup ${version})`;
  return bad.length ? { ok: false, detail: `no cap: ${bad.join(", ")}` } : { ok: true, detail: seen };
}

const gib = (n) => `${(n / 1024 ** 3).toFixed(1)} GiB`;

async function secrets() {
  const p = secretPaths();
  const bad = [];
  const checked = [];
  // kind: "private-dir" (700), "dir" (nobody else may write), "file" (nobody else may read or write).
  const check = (file, kind) => {
    let st;
    try {
      st = fs.lstatSync(file);
    } catch {
      return;
    }
    const mode = st.mode & 0o777;
    checked.push(path.relative(HOME, file) || "~");
    if (st.uid !== cfg.expect.uid) bad.push(`${file} owned by uid ${st.uid}`);
    if (kind === "private-dir" && mode !== 0o700) bad.push(`${file} mode ${mode.toString(8)} (want 700)`);
    if (kind === "dir" && mode & 0o022) bad.push(`${file} mode ${mode.toString(8)} (others may write)`);
    if (kind === "file" && mode & 0o077) bad.push(`${file} mode ${mode.toString(8)} (want 600)`);
  };
  check(HOME, "private-dir");
  check(p.imdDir, "private-dir");
  check(p.claudeDir, "dir");
  const files = [p.claudeLogin, path.join(HOME, ".claude.json"), path.join(HOME, ".codex/auth.json"), path.join(HOME, ".git-credentials")];
  try {
    for (const f of fs.readdirSync(p.imdDir)) if (f !== CANARY) files.push(path.join(p.imdDir, f));
  } catch {}
  for (const f of files) check(f, "file");
  if (bad.length) return { ok: false, detail: bad.join("; ") };
  return { ok: true, detail: `${checked.join(", ")}: owned by imd, nobody else may read` };
}

async function readOnly() {
  // As imd, a write to image paths must fail because the filesystem is read-only
  // (EROFS), not only because imd lacks permission (EACCES): then root cannot either.
  const tries = ["/usr/local/bin", "/etc"].map((dir) => {
    const file = path.join(dir, `.imd-box-check-${process.pid}`);
    try {
      fs.writeFileSync(file, "x");
      fs.unlinkSync(file);
      return [dir, "WRITTEN"];
    } catch (e) {
      return [dir, e.code || String(e)];
    }
  });
  const root = mountinfo().find((m) => m.point === "/");
  const bad = tries.filter(([, code]) => code !== "EROFS");
  const seen = tries.map(([dir, code]) => `${dir}: ${code}`).join(", ");
  const rootMount = `/ mounted ${root && root.options.split(",").includes("ro") ? "ro" : "RW"}`;
  return { ok: bad.length === 0, detail: `write as imd: ${seen}; ${rootMount}` };
}

async function hostAddrs() {
  const addrs = cfg.host_addresses || [];
  if (!addrs.length) return { ok: false, detail: "box found no address of the host to probe" };
  const r = await refusedAll("host addresses", addrs.map((a) => [`${a}:${PORT}`, tcp(a)]));
  return { ok: r.ok, detail: `${addrs.length} host address(es): ${r.detail}` };
}

async function image() {
  const want = cfg.expect;
  const bad = [];
  const seen = [];
  const node = process.version.replace(/^v/, "");
  if (want.node ? node !== want.node : !node.startsWith("24.")) bad.push(`node ${node} (want ${want.node || "24.x"})`);
  else seen.push(`node ${node}`);
  const tools = [
    ["git", ["--version"], /git version (\S+)/, null],
    ["forge", ["--version"], /forge Version: (\S+)/, want.forge],
    ["bwrap", ["--version"], /bubblewrap (\S+)/, null],
    ["socat", ["-V"], /socat version (\S+)/, null],
    ["rg", ["--version"], /ripgrep (\S+)/, null],
    ["srt", null, /^(\S+)/, want.srt],
  ];
  await Promise.all(
    tools.map(async ([name, args, re, pin]) => {
      const r = args ? await run(name, args) : packageVersion(name);
      const why = unusable(name, r);
      const m = (r.out + r.err).match(re);
      if (why || !m) bad.push(why || `${name}: no version (exit ${r.code})`);
      else if (pin && m[1] !== pin) bad.push(`${name} ${m[1]} (want ${pin})`);
      else seen.push(`${name} ${m[1]}`);
    }),
  );
  return bad.length ? { ok: false, detail: bad.join("; ") } : { ok: true, detail: seen.join(", ") };
}

// ------------------------------------------------------------------ run them all

const CHECKS = {
  user, capabilities, no_new_privs: noNewPrivs, seccomp, mounts, firewall, mac, lan, tailscale, metadata,
  multicast, ipv6, dns: dnsWall, internet, browser, read_jail: readJail, jailed_root: jailedRoot, resources,
  secrets, image, read_only: readOnly, host_addrs: hostAddrs,
}; // prettier-ignore

async function guarded(id, fn) {
  // Each line's own limit; the browser's, the slowest, is its budget plus its slack.
  const limit = BROWSER_BUDGET_MS + BROWSER_SLACK_MS + 1000;
  let timer;
  try {
    return await Promise.race([
      fn(),
      new Promise((resolve) => {
        timer = setTimeout(() => resolve({ ok: false, detail: `the probe timed out after ${limit} ms` }), limit);
      }),
    ]);
  } catch (e) {
    return { ok: false, detail: `the probe crashed: ${short(e && e.stack ? e.stack.split("\n")[0] : e, 150)}` };
  } finally {
    clearTimeout(timer);
  }
}

// secrets reads modes before read_jail may add canaries beside them.
const wanted = (cfg.only && cfg.only.length ? cfg.only : Object.keys(CHECKS)).filter((id) => CHECKS[id]);
const secretsFirst = wanted.includes("secrets") ? guarded("secrets", CHECKS.secrets) : null;
if (secretsFirst) await secretsFirst;
const results = await Promise.all(
  wanted.map(async (id) => {
    const started = Date.now();
    const r = id === "secrets" ? await secretsFirst : await guarded(id, CHECKS[id]);
    return { id, ok: r.ok === true, detail: String(r.detail), ms: Date.now() - started };
  }),
);
cleanup(MADE);
process.stdout.write(`IMD-BOX-CHECK ${JSON.stringify({ results })}\n`);
process.exit(0);
