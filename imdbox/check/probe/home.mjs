// box check's probe, the home's fixtures, which the walls share: where the secrets are, the
// canaries made where they are not, their clean-up, a regular file's read, and the Claude login
// (or its canary) that lines 16 and 25 both hold.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import fs from "node:fs";
import path from "node:path";
import { HOME, cfg } from "./base.mjs";

// The secrets the home holds once set up. Paths follow the tools' own env vars.
export function secretPaths() {
  const claudeDir = process.env.CLAUDE_CONFIG_DIR || path.join(HOME, ".claude");
  const imdDir = process.env.IDENTITYMD_HOME || path.join(HOME, ".identitymd");
  return {
    claudeDir,
    imdDir,
    claudeLogin: path.join(claudeDir, ".credentials.json"),
    // Where the jail holds Codex's login for Codex (worker/jail), and Codex itself, when installed.
    codexLogin: path.join(HOME, ".codex", "auth.json"),
    codex: path.join(HOME, ".npm-global", "bin", "codex"),
    claude: path.join(HOME, ".npm-global", "bin", "claude"),
    deviceKey: path.join(imdDir, "config.json"),
    toolsEnv: path.join(imdDir, "tools.env"),
    workRoot: path.join(imdDir, "work"),
  };
}

export const CANARY = ".imd-box-check-canary";
export const CANARY_TEXT = "imd-box check canary: the read jail must not see this\n";

// Every canary and folder the read jail's line makes (and the workspace of the network lines'
// job's jail), until removed. A line cut off at its time limit (a tool that hangs) never gets
// to its own clean-up; the probe removes these before it exits, or every later check would find
// them there (EEXIST: nothing proved).
export const MADE = [];

/** The folders of `dir` that are not there yet, made for the test. */
export function makeDirs(dir, made) {
  const missing = [];
  for (let d = dir; d !== path.dirname(d) && !fs.existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) {
    fs.mkdirSync(d, { mode: 0o700 });
    made.push({ path: d });
  }
}

/** A file that is not there yet, made for the test (never over a real one: O_EXCL); `text`,
 * else the canary's. */
export function makeCanary(file, made, text = CANARY_TEXT) {
  makeDirs(path.dirname(file), made);
  fs.writeFileSync(file, text, { mode: 0o600, flag: "wx" });
  made.push({ path: file, ino: fs.statSync(file).ino, text });
}

/** Remove what the test made, newest first, and forget it (the exit's pass touches only what
 * a cut-off line left); a file replaced meanwhile (a login written while the check ran) is
 * not ours any more and stays. A folder made whole for the test (`tree`) goes whole. */
export function cleanup(made) {
  for (const m of made.splice(0).reverse()) {
    try {
      if (m.tree) fs.rmSync(m.path, { recursive: true, force: true });
      else if (m.ino === undefined) fs.rmdirSync(m.path);
      else if (fs.statSync(m.path).ino === m.ino && fs.readFileSync(m.path, "utf8") === m.text) fs.unlinkSync(m.path);
    } catch {}
  }
}

/** A regular file's bytes, read through the one descriptor it was checked on. Opened
 * without waiting: a FIFO planted where a secret goes would block the probe's one thread
 * on its open or its read, and every line with it. */
export function readRegular(file) {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      const kind = st.isFIFO() ? "fifo" : st.isDirectory() ? "directory" : st.isSocket() ? "socket" : "device";
      throw Object.assign(new Error(`${file} is a ${kind}`), { code: "ENOTREG", kind });
    }
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

// How a sentinel login's access token starts, as the login broker mints it (worker/broker, its
// mark from imdbox/layout.py BROKER_SENTINEL): lines 24 and 25 tell the broker's stand-in from a login by it.
export const CLAUDE_SENTINEL = `sk-ant-oat01-${cfg.broker.sentinel}`;

// A Claude login's canary has a login's shape, so the login broker stands in for it in a job's
// jail as for the owner's (worker/jail.d/login): lines 16 and 25 both may make it.
export const LOGIN_CANARY = `${JSON.stringify({
  claudeAiOauth: {
    accessToken: `sk-ant-oat01-${CANARY}-access`,
    refreshToken: `sk-ant-ort01-${CANARY}-refresh`,
    expiresAt: 4102444800000,
    scopes: ["user:inference"],
  },
})}\n`;

/** The Claude login at `file`, or its canary where there is none: "real" or "canary". Lines 16
 * and 25 run at once and both want it: the canary is made by the first that holds it, and
 * removed when the last lets go (letLoginGo; main.mjs's end, for a line cut off). */
const loginCanary = { holds: 0, made: [] };
export function claudeLogin(file) {
  loginCanary.holds += 1;
  if (fs.existsSync(file)) return readRegular(file).toString("utf8") === LOGIN_CANARY ? "canary" : "real";
  makeCanary(file, loginCanary.made, LOGIN_CANARY);
  return "canary";
}
export function letLoginGo(all = false) {
  loginCanary.holds = all ? 0 : Math.max(0, loginCanary.holds - 1);
  if (loginCanary.holds === 0) cleanup(loginCanary.made);
}
