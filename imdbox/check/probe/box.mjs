// box check's probe, the box itself: its user, capabilities, no_new_privs, seccomp, mounts, firewall,
// resources, secrets' modes, image and read-only root.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { cfg, HOME, TOOL_MS, short, run, packageVersion, unusable, statusFields } from "./base.mjs";
import { iptablesAttempts, judgeAttempts } from "./attempts.mjs";
import { secretPaths, CANARY } from "./home.mjs";

// ------------------------------------------------------------------ the walls

export async function user() {
  const uid = process.getuid();
  const gid = process.getgid();
  const groups = process.getgroups();
  const name = os.userInfo().username;
  const detail = `uid ${uid} (${name}), gid ${gid}, groups ${groups.join(",") || "none"}`;
  const ok = uid === cfg.expect.uid && name === cfg.expect.user && uid !== 0 && gid !== 0 && !groups.includes(0);
  return { ok, detail: ok ? detail : `${detail}: expected uid ${cfg.expect.uid} (${cfg.expect.user}), never root` };
}

export async function capabilities() {
  const s = statusFields();
  const sets = ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"];
  const held = sets.filter((k) => !/^0+$/.test(s[k] || "x"));
  if (held.length) return { ok: false, detail: `not empty: ${held.map((k) => `${k}=${s[k]}`).join(" ")}` };
  return { ok: true, detail: "CapInh CapPrm CapEff CapBnd CapAmb all 0" };
}

export async function noNewPrivs() {
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

export async function seccomp() {
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

export async function mounts() {
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

export async function firewall() {
  const j = judgeAttempts(await iptablesAttempts());
  return { ok: j.ok, detail: `as imd: ${j.detail}` };
}

function readNum(file) {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    return null;
  }
}

export async function resources() {
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

export async function secrets() {
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

export async function readOnly() {
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

export async function image() {
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
