// box check's probe, root in a user namespace (line 17): it may not change the firewall, nor get
// past it.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import path from "node:path";
import { cfg, tool, PORT, CONNECT_MS, REFUSALS, short, run, unusable } from "./base.mjs";
import { iptablesAttempts, judgeAttempts } from "./attempts.mjs";
import { CONNECT, WHO } from "./shipped.mjs";

export async function jailedRoot() {
  const jails = [
    ["unshare -U -r", [tool("unshare"), "-U", "-r", "--"]],
    ["bwrap --uid 0", [tool("bwrap"), "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--"]],
  ];
  const parts = [];
  let ok = true;
  for (const [name, prefix] of jails) {
    const who = await run(prefix[0], [...prefix.slice(1), tool("sh"), "-c", WHO]);
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
  const connect = [process.execPath, "-e", CONNECT, target, String(PORT), String(CONNECT_MS), JSON.stringify([...REFUSALS])];
  const r = await run(tool("unshare"), ["-U", "-r", "--", ...connect]);
  const why = unusable("unshare", r) || (r.code !== 0 || !r.out.trim() ? `exit ${r.code}: ${short(r.err, 80)}` : null);
  const outcome = why ? `could not run (${why})` : short(r.out, 60);
  if (why || !outcome.startsWith("refused")) ok = false;
  parts.push(`${target}:${PORT} from the jail: ${outcome}`);
  return { ok, detail: parts.join("; ") };
}
