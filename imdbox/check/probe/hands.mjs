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

/** Line 23's place: a job's folder (its workspace `ws`, a home of its own for IDENTITYMD_HOME
 * with a tools.env whose `key` the job must not get), a canary in the home, and what the job
 * must not read (`secrets`: [label, file]) with each one's text and digest. Throws what stops it. */
function handsPlace(made) {
  const p = secretPaths();
  const job = path.join(p.workRoot, `${CANARY}-hands`);
  const h = { job, ws: path.join(job, "node"), imdHome: path.join(job, "identitymd"), home: path.join(HOME, `${CANARY}-hands`) };
  h.sub = path.join(h.ws, "sub");
  h.key = `imd-box-check-${randomBytes(8).toString("hex")}`;
  h.secrets = [["the rest of the home", h.home]];
  h.text = { [h.home]: CANARY_TEXT };
  fs.rmSync(job, { recursive: true, force: true }); // a check cut off before its clean-up
  makeCanary(h.home, made);
  makeDirs(p.workRoot, made);
  fs.mkdirSync(job, { mode: 0o700 });
  made.push({ path: job, tree: true });
  fs.mkdirSync(h.sub, { recursive: true, mode: 0o700 });
  fs.mkdirSync(h.imdHome, { mode: 0o700 });
  fs.writeFileSync(path.join(h.imdHome, "tools.env"), `${HANDS_KEY}=${h.key}\n`, { mode: 0o600 });
  // The device key as it is now, read once (not line 16's canary, nor anything but a file).
  try {
    const device = readRegular(p.deviceKey).toString("utf8");
    if (device !== CANARY_TEXT) {
      h.secrets.unshift(["the device key", p.deviceKey]);
      h.text[p.deviceKey] = device;
    }
  } catch {}
  h.digest = Object.fromEntries(h.secrets.map(([, f]) => [f, createHash("sha256").update(h.text[f]).digest("hex")]));
  h.env = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
  return h;
}

const ran = (label, r) => unusable(label, r) || (r.code !== 0 ? `exit ${r.code}: ${short(r.err, 80)}` : null);

/** The worker's git on the job's node, or why it did not run. */
async function workersGit(h, args) {
  const why = ran("the worker's git", await run(tool("hands_git"), args, { cwd: h.ws, env: h.env }));
  return why && `the worker's git (${tool("hands_git")}) did not run (${why})`;
}

/** The probe's own git (the image's) in `cwd`, planting the job's tree; why it could not. */
async function plantingGit(h, cwd, args) {
  const r = await run(tool("git"), ["-c", "user.name=c", "-c", "user.email=c@c", ...args], { cwd, env: h.env });
  return r.code === 0 ? null : `cannot plant the job's tree (git ${args[0]}: ${unusable("git", r) || short(r.err, 80)}): nothing proved`;
}

/** The job's tree: a nested repository staged as a gitlink, its fsmonitor set last (the probe's
 * own git must not run it) and the worker's git run over it, as after a job. {why} nothing is
 * proved, or {bad}: what the fsmonitor read, and the links it left. */
async function underTheWorkersGit(h) {
  const planted = HANDS_LINKS.map((l) => path.relative(h.sub, path.join(h.job, l)));
  const fsmonitor =
    `${tool("sha256sum")} ${h.secrets.map(([, f]) => f).join(" ")} > ../${HANDS_SEEN} 2>&1; ` +
    `${planted.map((l) => `${tool("ln")} -s ${h.home} ${l} 2>/dev/null; `).join("")}echo`;
  const steps = [
    () => plantingGit(h, h.ws, ["init", "-q", "."]),
    () => plantingGit(h, h.sub, ["init", "-q", "."]),
    () => plantingGit(h, h.sub, ["commit", "-q", "--allow-empty", "-m", "sub"]),
    () => plantingGit(h, h.ws, ["add", "sub"]),
    // The worker's first git on the node: its launcher searches for links after it and finds
    // the node clear, as after a job's run that left none, so it watches no later call.
    () => workersGit(h, ["status", "--porcelain"]),
    () => plantingGit(h, h.sub, ["config", "core.fsmonitor", fsmonitor]),
    // The worker's git, as the worker runs it after a job.
    () => workersGit(h, ["status", "--porcelain", "--untracked-files=all"]),
  ];
  for (const step of steps) {
    const why = await step();
    if (why) return { why };
  }
  let seen = "";
  try {
    seen = readRegular(path.join(h.ws, HANDS_SEEN)).toString("utf8");
  } catch {}
  if (!seen) return { why: "the nested repository's fsmonitor did not run under the worker's git: nothing proved" };
  const bad = [];
  const read = h.secrets.filter(([, f]) => seen.includes(h.digest[f])).map(([label]) => label);
  if (read.length) bad.push(`a job's fsmonitor under the worker's git READ ${read.join(", ")}`);
  // A link it left would lead the worker's own reads and writes, outside every jail.
  const stayed = HANDS_LINKS.filter((l) => {
    try {
      return fs.lstatSync(path.join(h.job, l)).isSymbolicLink();
    } catch {
      return false;
    }
  });
  if (stayed.length) bad.push(`a link a job's fsmonitor made under the worker's git STAYED (${stayed.join(", ")})`);
  return { bad };
}

/** A .sol link to each secret, and the worker's forge as it formats a job's changed .sol files
 * (its own environment); with --check, which reads and reports as fmt does but never writes,
 * whatever a link leads to. {why} or {bad}. */
async function throughTheWorkersForge(h) {
  const links = h.secrets.map(([, f], i) => {
    fs.symlinkSync(f, path.join(h.ws, `Leak${i}.sol`));
    return `Leak${i}.sol`;
  });
  const forgeEnv = { PATH: h.env.PATH, HOME, CI: "1", NO_COLOR: "1", FOUNDRY_OFFLINE: "true" };
  const fmt = await run(tool("hands_forge"), ["fmt", "--check", ...links], { cwd: h.ws, env: forgeEnv });
  const why = unusable("the worker's forge", fmt);
  if (why) return { why };
  const lines = (f) => h.text[f].split("\n").map((l) => l.trim()).filter((l) => l.length >= 8);
  const read = h.secrets.filter(([, f]) => lines(f).some((l) => (fmt.out + fmt.err).includes(l))).map(([label]) => label);
  return { bad: read.length ? [`the worker's forge showed ${read.join(", ")} through a .sol link`] : [] };
}

/** A job's environment: the worker's, with a tools.env key in it as the worker copies them, from
 * the tools.env its IDENTITYMD_HOME names, through the jail a job's CLI runs in. {why} or {bad}. */
async function aJobsEnvironment(h) {
  const env = { ...h.env, IDENTITYMD_HOME: h.imdHome, [HANDS_KEY]: h.key };
  const job = await run(tool("jail"), ["claude", "--program", tool("env")], { cwd: h.ws, env });
  const why = ran("the job's jail", job);
  if (why) return { why: `the job's jail did not start (${why})` };
  return { bad: job.out.includes(h.key) ? [`a job's environment holds tools.env's ${HANDS_KEY}`] : [] };
}

/** Line 23: the worker's own git and forge (worker/hands, first on its PATH), on a tree a job
 * wrote, read nothing of the home; and a job's CLI gets none of tools.env's values. A nested
 * repository's fsmonitor, planted as a job plants it, runs under the worker's `git status`; a
 * .sol link to each secret is formatted by the worker's `forge fmt`; the worker's environment,
 * with tools.env's values in it as the worker puts them, starts a program in a job's jail.
 * Everything it plants is its own (a canary in the home, a job's folder, a tools.env in a home
 * of its own that IDENTITYMD_HOME names), so it never meets line 16's canaries. */
export async function workerHands() {
  for (const name of ["hands_git", "hands_forge", "jail", "git", "env", "sha256sum", "ln"]) if (!fs.existsSync(tool(name))) return { ok: false, detail: `${tool(name)} is missing from the box` };
  const made = MADE_HANDS;
  let h;
  try {
    h = handsPlace(made);
  } catch (e) {
    cleanup(made);
    return { ok: false, detail: `cannot set up the test in ${HOME} (${e.code || e}): nothing proved` };
  }
  try {
    const bad = [];
    for (const step of [underTheWorkersGit, throughTheWorkersForge, aJobsEnvironment]) {
      const r = await step(h);
      if (r.why) return { ok: false, detail: r.why };
      bad.push(...r.bad);
    }
    if (bad.length) return { ok: false, detail: bad.join("; ") };
    return {
      ok: true,
      detail:
        `under the worker's git (${tool("hands_git")}) a job's nested fsmonitor read none of ${h.secrets.map(([l]) => l).join(", ")} and left no link; ` +
        `the worker's forge fmt showed none through .sol links; a job's environment holds no tools.env value`,
    };
  } finally {
    cleanup(made);
  }
}
