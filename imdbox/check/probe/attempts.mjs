// box check's probe, the attempts on the firewall: listing and changing its rules, as imd (line
// 6) and as root in a user namespace (line 17), and the verdict on them.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import path from "node:path";
import { tool, short, run, unusable } from "./base.mjs";

const argvOf = (prefix, args) => {
  const argv = [...prefix, ...args];
  return [argv[0], argv.slice(1)];
};

export async function iptablesAttempts(prefix = []) {
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

export function judgeAttempts(attempts) {
  const notRun = attempts.filter((a) => !a.ran);
  if (notRun.length) return { ok: false, detail: notRun.map((a) => `${a.label}: ${a.why}`).join("; ") };
  const allowed = attempts.filter((a) => a.allowed);
  if (allowed.length) return { ok: false, detail: `ALLOWED: ${allowed.map((a) => a.label).join(", ")}` };
  const why = attempts[0].msg.includes("Permission denied") ? "Permission denied" : attempts[0].msg;
  return { ok: true, detail: `${attempts.map((a) => a.label).join(", ")}: refused (${why})` };
}
