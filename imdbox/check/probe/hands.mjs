// box check's probe, the worker's own hands (line 23): its git and forge on a tree a job wrote,
// and a job's environment.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { tool, HOME, short, run, unusable } from "./base.mjs";
import { secretPaths, CANARY, CANARY_TEXT, makeDirs, makeCanary, cleanup, readRegular } from "./home.mjs";

// What line 23 made, until removed: a list of its own, as it runs beside line 16, which clears
// MADE when it ends. The probe's exit removes what a cut-off line 23 left.
export const MADE_HANDS = [];
const HANDS_SEEN = "imd-box-check-seen";
// Where the fsmonitor puts a link to the home: in the workspace, and beside the bundles.
const HANDS_LINKS = ["node/imd-box-check-link.sol", "imd-box-check-link.bundle"];
const HANDS_KEY = "IMD_BOX_CHECK_KEY";

/** Line 23: the worker's own git and forge (worker/hands, first on its PATH), on a tree a job
 * wrote, read nothing of the home; and a job's CLI gets none of tools.env's values. A nested
 * repository's fsmonitor, planted as a job plants it, runs under the worker's `git status`; a
 * .sol link to each secret is formatted by the worker's `forge fmt`; the worker's environment,
 * with tools.env's values in it as the worker puts them, starts a program in a job's jail.
 * Everything it plants is its own (a canary in the home, a job's folder, a tools.env in a home
 * of its own that IDENTITYMD_HOME names), so it never meets line 16's canaries. */
export async function workerHands() {
  const p = secretPaths();
  for (const name of ["hands_git", "hands_forge", "jail", "git", "env", "sha256sum", "ln"]) if (!fs.existsSync(tool(name))) return { ok: false, detail: `${tool(name)} is missing from the box` };
  const made = MADE_HANDS;
  const job = path.join(p.workRoot, `${CANARY}-hands`);
  const ws = path.join(job, "node");
  const imdHome = path.join(job, "identitymd");
  const home = path.join(HOME, `${CANARY}-hands`);
  const key = `imd-box-check-${randomBytes(8).toString("hex")}`;
  const secrets = [];
  const text = {};
  try {
    fs.rmSync(job, { recursive: true, force: true }); // a check cut off before its clean-up
    makeCanary(home, made);
    secrets.push(["the rest of the home", home]);
    text[home] = CANARY_TEXT;
    makeDirs(p.workRoot, made);
    fs.mkdirSync(job, { mode: 0o700 });
    made.push({ path: job, tree: true });
    fs.mkdirSync(path.join(ws, "sub"), { recursive: true, mode: 0o700 });
    fs.mkdirSync(imdHome, { mode: 0o700 });
    fs.writeFileSync(path.join(imdHome, "tools.env"), `${HANDS_KEY}=${key}\n`, { mode: 0o600 });
  } catch (e) {
    cleanup(made);
    return { ok: false, detail: `cannot set up the test in ${HOME} (${e.code || e}): nothing proved` };
  }
  try {
    // The device key as it is now, read once (not line 16's canary, nor anything but a file).
    try {
      const device = readRegular(p.deviceKey).toString("utf8");
      if (device !== CANARY_TEXT) {
        secrets.unshift(["the device key", p.deviceKey]);
        text[p.deviceKey] = device;
      }
    } catch {}
    const digest = Object.fromEntries(secrets.map(([, f]) => [f, createHash("sha256").update(text[f]).digest("hex")]));
    // The job's tree: a nested repository staged as a gitlink, its fsmonitor set last (the
    // probe's own git must not run it), and later a .sol link to each secret.
    const env = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
    const sub = path.join(ws, "sub");
    const planted = HANDS_LINKS.map((l) => path.relative(sub, path.join(job, l)));
    const fsmonitor =
      `${tool("sha256sum")} ${secrets.map(([, f]) => f).join(" ")} > ../${HANDS_SEEN} 2>&1; ` +
      `${planted.map((l) => `${tool("ln")} -s ${home} ${l} 2>/dev/null; `).join("")}echo`;
    const ran = (label, r) => unusable(label, r) || (r.code !== 0 ? `exit ${r.code}: ${short(r.err, 80)}` : null);
    const workersGit = async (args) => {
      const why = ran("the worker's git", await run(tool("hands_git"), args, { cwd: ws, env }));
      return why && `the worker's git (${tool("hands_git")}) did not run (${why})`;
    };
    const git = async (cwd, args) => {
      const r = await run(tool("git"), ["-c", "user.name=c", "-c", "user.email=c@c", ...args], { cwd, env });
      return r.code === 0 ? null : `cannot plant the job's tree (git ${args[0]}: ${unusable("git", r) || short(r.err, 80)}): nothing proved`;
    };
    for (const [cwd, args] of [
      [ws, ["init", "-q", "."]],
      [sub, ["init", "-q", "."]],
      [sub, ["commit", "-q", "--allow-empty", "-m", "sub"]],
      [ws, ["add", "sub"]],
    ]) {
      const why = await git(cwd, args);
      if (why) return { ok: false, detail: why };
    }
    // The worker's first git on the node: its launcher searches for links after it and finds
    // the node clear, as after a job's run that left none, so it watches no later call.
    const firstWhy = await workersGit(["status", "--porcelain"]);
    if (firstWhy) return { ok: false, detail: firstWhy };
    const cwhy = await git(sub, ["config", "core.fsmonitor", fsmonitor]);
    if (cwhy) return { ok: false, detail: cwhy };
    const bad = [];
    // The worker's git, as the worker runs it after a job.
    const gwhy = await workersGit(["status", "--porcelain", "--untracked-files=all"]);
    if (gwhy) return { ok: false, detail: gwhy };
    let seen = "";
    try {
      seen = readRegular(path.join(ws, HANDS_SEEN)).toString("utf8");
    } catch {}
    if (!seen) return { ok: false, detail: "the nested repository's fsmonitor did not run under the worker's git: nothing proved" };
    const gread = secrets.filter(([, f]) => seen.includes(digest[f])).map(([label]) => label);
    if (gread.length) bad.push(`a job's fsmonitor under the worker's git READ ${gread.join(", ")}`);
    // A link it left would lead the worker's own reads and writes, outside every jail.
    const stayed = HANDS_LINKS.filter((l) => {
      try {
        return fs.lstatSync(path.join(job, l)).isSymbolicLink();
      } catch {
        return false;
      }
    });
    if (stayed.length) bad.push(`a link a job's fsmonitor made under the worker's git STAYED (${stayed.join(", ")})`);
    // A .sol link to each secret, and the worker's forge as it formats a job's changed .sol
    // files (its own environment); with --check, which reads and reports as fmt does but never
    // writes, whatever a link leads to.
    const links = secrets.map(([, f], i) => {
      fs.symlinkSync(f, path.join(ws, `Leak${i}.sol`));
      return `Leak${i}.sol`;
    });
    const forgeEnv = { PATH: env.PATH, HOME, CI: "1", NO_COLOR: "1", FOUNDRY_OFFLINE: "true" };
    const fmt = await run(tool("hands_forge"), ["fmt", "--check", ...links], { cwd: ws, env: forgeEnv });
    const fwhy = unusable("the worker's forge", fmt);
    if (fwhy) return { ok: false, detail: fwhy };
    const lines = (f) => text[f].split("\n").map((l) => l.trim()).filter((l) => l.length >= 8);
    const fread = secrets.filter(([, f]) => lines(f).some((l) => (fmt.out + fmt.err).includes(l))).map(([label]) => label);
    if (fread.length) bad.push(`the worker's forge showed ${fread.join(", ")} through a .sol link`);
    // A job's environment: the worker's, with a tools.env key in it as the worker copies them,
    // from the tools.env its IDENTITYMD_HOME names, through the jail a job's CLI runs in.
    const job_ = await run(tool("jail"), ["claude", "--program", tool("env")], { cwd: ws, env: { ...env, IDENTITYMD_HOME: imdHome, [HANDS_KEY]: key } });
    const jwhy = ran("the job's jail", job_);
    if (jwhy) return { ok: false, detail: `the job's jail did not start (${jwhy})` };
    if (job_.out.includes(key)) bad.push(`a job's environment holds tools.env's ${HANDS_KEY}`);
    if (bad.length) return { ok: false, detail: bad.join("; ") };
    return {
      ok: true,
      detail:
        `under the worker's git (${tool("hands_git")}) a job's nested fsmonitor read none of ${secrets.map(([l]) => l).join(", ")} and left no link; ` +
        `the worker's forge fmt showed none through .sol links; a job's environment holds no tools.env value`,
    };
  } finally {
    cleanup(made);
  }
}
