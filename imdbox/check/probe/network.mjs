// box check's probe, the network walls: the Mac, your networks, Tailscale, metadata, multicast,
// IPv6, DNS, the internet, the browser, the host's addresses.
// One script with the other parts when it runs (imdbox/check/runner.py probe_source).
import dns from "node:dns";
import fs from "node:fs";
import os from "node:os";
import { cfg, PORT, CONNECT_MS, V6_CONNECT_MS, BROWSER_BUDGET_MS, BROWSER_SLACK_MS, short, run, unusable, tcp, udp, refusedAll, dnsQuery, within } from "./base.mjs";

// ------------------------------------------------------------------ the network walls

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

export async function mac() {
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
    targets.map(([a, port]) => [`udp ${a}:${port}`, udp(a, port, { broadcast: true })]),
  );
}

export async function ipv6() {
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

export async function dnsWall() {
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

export async function internet() {
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

export async function browser() {
  const { script } = cfg.browser;
  if (!fs.existsSync(script)) return { ok: false, detail: `${script} is missing from the image` };
  // check.mjs gives up after its budget; node's start and the clean-up get BROWSER_SLACK_MS more.
  const r = await run(process.execPath, [script, String(BROWSER_BUDGET_MS)], { timeout: BROWSER_BUDGET_MS + BROWSER_SLACK_MS });
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

export async function hostAddrs() {
  const addrs = cfg.host_addresses || [];
  if (!addrs.length) return { ok: false, detail: "box found no address of the host to probe" };
  const r = await refusedAll("host addresses", addrs.map((a) => [`${a}:${PORT}`, tcp(a)]));
  return { ok: r.ok, detail: `${addrs.length} host address(es): ${r.detail}` };
}
