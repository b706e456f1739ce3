// box check's probe, every line run, each within its limit, and the one result line printed.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import { cfg, LINE_MS, IN_JAIL, MACHINE, RESULT_MARK, late, lateness, limit, onlyLate, short } from "./base.mjs";
import { user, capabilities, noNewPrivs, seccomp, mounts, firewall, resources, secrets, readOnly, image } from "./box.mjs";
import { mac, lan, tailscale, metadata, multicast, ipv6, dnsWall, internet, browser, hostAddrs, fromJobsJail, MADE_NETWORK } from "./network.mjs";
import path from "node:path";
import { cleanup, letLoginGo, makeDirs, secretPaths, MADE } from "./home.mjs";
import { readJail } from "./jail.mjs";
import { jailedRoot } from "./root.mjs";
import { MADE_HANDS, workerHands } from "./hands.mjs";
import { MADE_VIEW, workerView } from "./view.mjs";
import { MADE_LOGIN, loginBroker } from "./login.mjs";

// ------------------------------------------------------------------ run them all

const CHECKS = {
  user, capabilities, no_new_privs: noNewPrivs, seccomp, mounts, firewall, mac, lan, tailscale, metadata,
  multicast, ipv6, dns: dnsWall, internet, browser, read_jail: readJail, jailed_root: jailedRoot, resources,
  secrets, image, read_only: readOnly, host_addrs: hostAddrs, worker_hands: workerHands, worker_view: workerView,
  login_broker: loginBroker,
}; // prettier-ignore

/** A line's probe within LINE_MS of `before` (the count it waits for; grown with the machine's
 * load, base.mjs limit), what ran out of time in it noted as its own (lateness): a line that
 * failed on that alone is late (not proved), never a FAIL. */
const guarded = (id, fn, before) => lateness.run([], async () => {
  let cancel = () => {};
  let done = false; // a line done before `before` starts no limit
  try {
    const r = await Promise.race([
      fn(before),
      before.then(
        () =>
          new Promise((resolve) => {
            if (!done) cancel = limit(LINE_MS, (ms) => resolve({ ok: false, detail: late("the line's probe", ms) }));
          }),
      ),
    ]);
    return r.ok !== true && onlyLate([r.detail]) ? { ...r, late: true } : r;
  } catch (e) {
    return { ok: false, detail: `the probe crashed: ${short(e && e.stack ? e.stack.split("\n")[0] : e, 150)}` };
  } finally {
    done = true;
    cancel();
  }
});

// Lines that send nothing out of the box (no packet past its loopback, nor one its firewall
// refuses): they run while a job's jail runs the network lines again, whose verdict is the
// firewall's counters read around it (counters.py: nothing else may count then). A line of
// QUIET_FIRST starts then too, and waits for the count (its argument) before its first packet
// that may leave the box. Every other line waits for the jail.
const QUIET = new Set(["user", "capabilities", "no_new_privs", "seccomp", "mounts", "firewall", "resources", "image", "read_only", "worker_hands", "worker_view"]); // prettier-ignore
const QUIET_FIRST = new Set(["read_jail"]);

/** A line's result as main prints it, `fromJail` the same line's from a job's jail, if it ran there. */
function resultOf(id, r, started, fromJail) {
  const unreached = r.unreached === true;
  const isLate = r.ok !== true && r.late === true;
  if (!jailed.includes(id)) return { id, ok: r.ok === true, detail: String(r.detail), unreached, late: isLate, ms: Date.now() - started };
  const j = fromJail[id] || { ok: false, detail: fromJail.why || "no result", late: fromJail.late === true };
  // Late when neither side has evidence of an open wall: each is ok or late, and one is late.
  const ok = r.ok === true && j.ok === true;
  const late = !ok && (r.ok === true || isLate) && (j.ok === true || j.late === true);
  const both = { ok, unreached: unreached && j.ok === true, late };
  return { id, ...both, detail: `${r.detail}; from a job's jail: ${j.detail}`, ms: Date.now() - started };
}

/** Each line of `ids`, side by side, once `before` is done (its time its own from then); a line
 * of QUIET_FIRST at once, given `before` to wait for. */
const lines = (ids, before) =>
  ids.map(async (id) => {
    const gate = Promise.resolve(before);
    if (!QUIET_FIRST.has(id)) await gate;
    const started = Date.now();
    const r = await guarded(id, CHECKS[id], gate);
    return resultOf(id, r, started, await gate);
  });

// secrets reads modes before read_jail may add canaries beside them (and before the network
// lines from a job's jail make its workspace).
const wanted = (cfg.only && cfg.only.length ? cfg.only : Object.keys(CHECKS)).filter((id) => CHECKS[id]);
const jailed = IN_JAIL ? [] : wanted.filter((id) => cfg.from_a_jobs_jail.includes(id));
const secretsFirst = wanted.includes("secrets") ? lines(["secrets"], {}) : [];
await Promise.all(secretsFirst);
// The folders several lines make their own in (the jobs' root, the Claude login's), made here
// once the secrets line has seen the home as it was, and removed last: a line that made one
// would remove it when it ends, while another line's files are still in it (it stays then).
const SHARED = [];
try {
  for (const dir of [secretPaths().workRoot, path.dirname(secretPaths().claudeLogin)]) makeDirs(dir, SHARED);
} catch {} // each line that needs one makes it, and says so when it cannot
const quiet = wanted.filter((id) => id !== "secrets" && QUIET.has(id));
const quietLines = lines(quiet, {});
const fromJail = jailed.length ? fromJobsJail(jailed).catch((e) => ({ why: `the probe crashed: ${short(e && e.message, 150)}` })) : {};
const rest = lines(wanted.filter((id) => id !== "secrets" && !QUIET.has(id)), fromJail);
const byId = Object.fromEntries((await Promise.all([...secretsFirst, ...quietLines, ...rest])).map((r) => [r.id, r]));
const results = wanted.map((id) => byId[id]);
cleanup(MADE);
cleanup(MADE_HANDS);
cleanup(MADE_VIEW);
cleanup(MADE_LOGIN);
cleanup(MADE_NETWORK);
cleanup(SHARED);
letLoginGo(true);
process.stdout.write(`${RESULT_MARK}${JSON.stringify({ results, jailed, machine: MACHINE })}\n`);
process.exit(0);
