// box check's probe, the network walls: the Mac, your networks, Tailscale, metadata, multicast,
// IPv6, DNS, the internet, the browser, the host's addresses.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import dns from "node:dns";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { cfg, HOME, PORT, TOOL_MS, LINE_MS, CONNECT_MS, V6_CONNECT_MS, BROWSER_BUDGET_MS, BROWSER_SLACK_MS, IN_JAIL, MACHINE, RESULT_MARK, REFUSALS, mostOf, short, run, unusable, tcp, udp, refusedAll, dnsQuery, within } from "./base.mjs";
import { secretPaths, makeDirs, cleanup, CANARY } from "./home.mjs";
import { inAJobsJail } from "./jobs.mjs";

// ------------------------------------------------------------------ the network walls

// How long a datagram that went out waits for an answer. In the box a refusal is the send's own
// error, at once; a datagram that went out is the FAIL whatever the wait, which only tells "sent"
// from "answered". In a job's jail every datagram goes out to pasta, and the firewall's counters
// read around the jail judge it (counters.py): the wait is only for an answer from the box itself
// (its loopback, past those counters), which comes in a few ms. Scaled as every limit is.
const UDP_WAIT_MS = IN_JAIL ? Math.round(100 * MACHINE.scale) : 500;

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

// A job's jail looks up no name (fromJobsJail hands it the box's answers): its lookups would
// go to the box's resolver over the box's loopback, past the counters' verdict.
const macAddresses = () => Promise.all(cfg.targets.mac_names.map(async (name) => [name, await addressesOf(name)]));

export async function mac() {
  const probes = [];
  const names = [];
  const found = IN_JAIL ? Object.entries(cfg.jail_names) : await macAddresses();
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

export async function lan() {
  return refusedAll("private ranges", ipList("lan"));
}
export async function tailscale() {
  return refusedAll("Tailscale", ipList("tailscale"));
}
export async function metadata() {
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

export async function multicast() {
  const targets = [...cfg.targets.multicast, ...ownBroadcasts().map((a) => [a, 9])];
  return refusedAll(
    "multicast",
    // SO_BROADCAST on every socket: a refusal must be the firewall's, not the socket's.
    targets.map(([a, port]) => [`udp ${a}:${port}`, udp(a, port, { broadcast: true, wait: UDP_WAIT_MS })]),
  );
}

export async function ipv6() {
  const hasV6 = fs.existsSync("/proc/net/if_inet6") && fs.readFileSync("/proc/net/if_inet6", "utf8").trim().length > 0;
  const targets = new Set(cfg.targets.ipv6);
  for (const gw of gatewaysV6()) targets.add(gw);
  const probes = [...targets].map((a) => [`[${a}]:${PORT}`, tcp(a, PORT, V6_CONNECT_MS)]);
  for (const [a, port] of cfg.targets.multicast6) probes.push([`udp [${a}]:${port}`, udp(a, port, { wait: UDP_WAIT_MS })]);
  const r = await refusedAll("IPv6", probes);
  const global = hasV6
    ? fs
        .readFileSync("/proc/net/if_inet6", "utf8")
        .split("\n")
        .filter((l) => l && !l.startsWith("00000000000000000000000000000001") && !l.startsWith("fe80"))
    : [];
  return { ok: r.ok, detail: `${global.length ? `v6 addresses here: ${global.length}; ` : "no v6 address here; "}${r.detail}` };
}

export async function dnsWall() {
  const probes = [];
  for (const server of cfg.targets.dns_servers) {
    probes.push([`udp ${server}:53`, udp(server, 53, { payload: dnsQuery(), wait: UDP_WAIT_MS })]);
    probes.push([`tcp ${server}:53`, tcp(server, 53)]);
  }
  if (IN_JAIL) {
    const other = await refusedAll("other DNS servers", probes);
    return { ok: other.ok, detail: `other servers: ${other.detail}` };
  }
  // The bound is ours (within), not c-ares's own timer, which would end the query on a
  // starved loop before the answer waiting in its socket was read: c-ares gets longer.
  const resolver = new dns.promises.Resolver({ timeout: CONNECT_MS * 2, tries: 1 });
  const query = resolver.resolve4(cfg.dns_name).catch((e) => e);
  const resolved = await within(query, CONNECT_MS, () => {
    resolver.cancel();
    return Object.assign(new Error(`no answer in ${CONNECT_MS} ms`), { code: "ETIMEOUT" });
  });
  const other = await refusedAll("other DNS servers", probes);
  const servers = dns.getServers().join(",");
  const lookedUp = Array.isArray(resolved);
  const first = lookedUp
    ? `${cfg.dns_name} -> ${resolved[0]} via ${servers}`
    : `${cfg.dns_name} did NOT resolve via ${servers} (${resolved.code || resolved})`;
  // The name is the internet URL's host: when the box cannot reach the URL, its lookup proves
  // nothing about the resolver (imdbox/check/runner.py decides); the refusals still count.
  const unreached = !lookedUp && other.ok && cfg.dns_name_is_the_urls === true;
  return { ok: lookedUp && other.ok, detail: `${first}; other servers: ${other.detail}`, unreached };
}

export async function internet() {
  const started = Date.now();
  try {
    const res = await fetch(cfg.internet_url, { signal: AbortSignal.timeout(cfg.internet_ms || 6000), redirect: "manual" });
    await res.arrayBuffer().catch(() => null);
    return { ok: true, detail: `GET ${cfg.internet_url} -> ${res.status} in ${Date.now() - started} ms` };
  } catch (e) {
    const cause = e.cause ? e.cause.code || e.cause.message : e.name === "TimeoutError" ? "timed out" : e.message;
    // The box's own firewall refusing it is a FAIL; anything else (no such name, no answer,
    // the far side's refusal) is the URL out of reach: `unreached`.
    const unreached = !REFUSALS.has(e.cause && e.cause.code);
    return { ok: false, detail: `GET ${cfg.internet_url} failed: ${short(cause, 100)}`, unreached };
  }
}

export async function browser() {
  const { script } = cfg.browser;
  if (!fs.existsSync(script)) return { ok: false, detail: `${script} is missing from the image` };
  // check.mjs gives up after its budget; node's start and the clean-up get BROWSER_SLACK_MS more.
  // Both grow with the machine's load (base.mjs limit): check.mjs is given the most its budget
  // grows to, and this limit, which grows, ends it sooner on a machine that is not that slow.
  // Its one line of stdout is the verdict, printed before the browser is stopped (some 60 ms more).
  const said = (out) => out.includes("\n");
  const r = await run(process.execPath, [script, String(mostOf(BROWSER_BUDGET_MS))], { timeout: BROWSER_BUDGET_MS + BROWSER_SLACK_MS, said });
  const why = unusable("the browser check", r);
  if (why) return { ok: false, detail: why };
  const last = r.out.trim().split("\n").pop() || "";
  try {
    const j = JSON.parse(last);
    return { ok: j.ok === true && (r.said || r.code === 0), detail: short(j.detail, 200) || `exit ${r.code}` };
  } catch {
    return { ok: false, detail: `no result line (exit ${r.code}): ${short(r.err || r.out, 120)}` };
  }
}

export async function hostAddrs() {
  const addrs = cfg.host_addresses || [];
  if (!addrs.length) return { ok: false, detail: "box found no address of the host to probe" };
  const r = await refusedAll("host addresses", addrs.map((a) => [`${a}:${PORT}`, tcp(a)]));
  return { ok: r.ok, detail: `${addrs.length} host address(es): ${r.detail}` };
}

// ------------------------------------------------------------------ the same walls, from a job's jail

const COUNT_MS = 10000;

/** Whether box read the firewall's counters at `step` (false: it did not, within COUNT_MS). It
 * asks by a file of its own and box answers by one of root's (imdbox/check/counters.py). */
async function countersRead(step) {
  try {
    fs.writeFileSync(`${cfg.count.asked}${step}`, "");
  } catch {
    return false;
  }
  for (const end = Date.now() + COUNT_MS; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) {
    if (fs.existsSync(`${cfg.count.answered}${step}`)) return true;
  }
  return false;
}

/** A listener on the box itself while the jail's attempts run, at the port they aim at (its own,
 * where the box keeps ports below 1024): an attempt that ends on the box (its loopback, one of
 * its addresses) connects, and is reached, where the firewall's ACCEPT rules would not tell it
 * from the firewall's own answers (those come back over the box's loopback). */
async function boxListener() {
  for (const [host, port] of [["::", PORT], ["0.0.0.0", PORT], ["::", 0], ["0.0.0.0", 0]]) {
    const server = net.createServer((sock) => sock.on("error", () => {}).end());
    const up = await new Promise((resolve) => {
      server.once("error", () => resolve(false));
      server.listen({ host, port, ipv6Only: false }, () => resolve(true));
    });
    if (up) return server;
  }
  throw new Error("no port on the box to listen on");
}

// The job's workspace the jail runs in, its own: line 16 removes what it made (MADE) as it
// ends, which may be while this jail starts. The probe's exit removes what a cut-off run left.
export const MADE_NETWORK = [];

/** `ids` again, by this probe, run by the image's node in one run of a job's jail: the job's
 * network of its own, the same walls. Before any other line runs, so that what the firewall
 * counts meanwhile is the jail's alone. {id: {ok, detail}}, or {why} when the jail gave none. */
export async function fromJobsJail(ids) {
  const workspace = path.join(secretPaths().workRoot, `${CANARY}-network`);
  try {
    makeDirs(workspace, MADE_NETWORK);
  } catch (e) {
    return { why: `cannot make the job's workspace in ${HOME} (${e.code || e})` };
  }
  try {
    return await inTheJail(ids, workspace);
  } finally {
    cleanup(MADE_NETWORK);
  }
}

async function inTheJail(ids, workspace) {
  const box = await boxListener();
  const config = { ...cfg, in_jail: true, machine: MACHINE, only: ids, port: box.address().port, jail_names: Object.fromEntries(await macAddresses()) };
  let r = null;
  if (await countersRead(cfg.count.steps[0])) {
    // Within a line's limit, as each of them: the other lines wait for it.
    const [jail, args, opts] = inAJobsJail(workspace, process.execPath, ...process.execArgv, JSON.stringify(config));
    r = await run(jail, args, { ...opts, timeout: Math.min(TOOL_MS, LINE_MS) });
  }
  box.close();
  if (!r || !(await countersRead(cfg.count.steps[1]))) return { why: "box did not read the firewall's counters" };
  const why = unusable("the job's jail", r);
  if (why) return { why, late: r.timedOut === true };
  const line = r.out.split("\n").find((l) => l.startsWith(RESULT_MARK));
  if (!line) return { why: `the job's jail gave no result (exit ${r.code}): ${short(r.err, 150)}` };
  return Object.fromEntries(JSON.parse(line.slice(RESULT_MARK.length)).results.map((j) => [j.id, j]));
}
