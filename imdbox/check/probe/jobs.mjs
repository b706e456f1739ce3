// box check's probe, a job's jail (worker/jail), as the walls run things in it: one of the image's
// programs as a job's CLI runs it, a command in Codex's sandbox as the jail asks Codex for it, and
// the driver of a job's work in one run of the jail.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import { spawn } from "node:child_process";
import { tool, HOME, TOOL_MS, late, limit, short } from "./base.mjs";
import { DRIVER } from "./shipped.mjs";

/** One of the image's programs as a job's CLI runs in `workspace` (worker/jail's --program):
 * run()'s arguments. */
export const inAJobsJail = (workspace, ...args) => [tool("jail"), ["claude", "--program", ...args], { cwd: workspace, env: { ...process.env, HOME } }];

// The sandbox options the worker gives a Codex job's exec (tests/harness/jobs.py has the argv).
const CODEX_JOB_SANDBOX = ["--sandbox", "workspace-write", "-c", "sandbox_workspace_write.network_access=true"];

/** A command in Codex's sandbox with the options the worker gives a job's exec, through the jail,
 * which asks Codex for it as it does for a job, from `workspace`: run()'s arguments. */
export const inCodexsSandbox = (workspace, ...args) => [tool("jail"), ["codex", "sandbox", ...CODEX_JOB_SANDBOX, "--", ...args], { cwd: workspace, env: { ...process.env, HOME } }];

/** The driver (shipped.mjs DRIVER) in one run of a job's jail, from `workspace`, given `work`
 * (its {ms, page, server, next, browser}): `preview` once the server runs (its {url}, or {why}),
 * `runs` once the next command and the browser, which wait for `go`, are done ({next, browser},
 * or {why}), and stop(). */
export function startDriver(workspace, work, go) {
  const [jail, args, { cwd, env }] = inAJobsJail(workspace, process.execPath, "-e", DRIVER, JSON.stringify(work));
  const child = spawn(jail, args, { cwd, env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
  const exited = new Promise((r) => child.once("close", r));
  let buf = "";
  let err = "";
  const got = {};
  let givePreview, giveRuns;
  const preview = new Promise((r) => (givePreview = r));
  const runs = new Promise((r) => (giveRuns = r));
  const stop = async () => {
    cancel();
    try {
      child.stdin.end();
    } catch {}
    const gone = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    }, 2000);
    await exited;
    clearTimeout(gone);
  };
  // A jail that hangs is ended at a tool's limit (grown with the machine's load), and named so:
  // first its preview server's start, then, from `go`, its next command and browser. (The
  // driver's own limits are its last resort: MOST_TOOL_MS.)
  const hung = (what) => (ms) => {
    const why = late(what, ms);
    givePreview({ why });
    giveRuns({ why });
    stop();
  };
  let cancel = limit(TOOL_MS, hung("starting its preview server"));
  child.on("error", (e) => (err += String(e)));
  child.stdin.on("error", () => {});
  preview.then((p) =>
    go.then(() => {
      if (!p.url) return;
      child.stdin.write("go\n");
      cancel = limit(TOOL_MS, hung("its next command and browser"));
    }),
  );
  child.stderr.on("data", (d) => (err += d));
  child.stdout.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const m = /^IMD-DRIVER (\w+) (.*)$/.exec(line);
      if (!m) continue;
      try {
        got[m[1]] = JSON.parse(m[2]);
      } catch {
        continue; // not the driver's line: judged as missing
      }
      if (m[1] === "preview") {
        cancel();
        givePreview(got.preview);
        if (got.preview.why) giveRuns({});
      }
      if ("next" in got && "browser" in got) {
        cancel();
        giveRuns({ next: got.next, browser: got.browser });
      }
    }
  });
  exited.then((code) => {
    cancel();
    givePreview({ why: `did not start (exit ${code}): ${short(err, 160)}` });
    giveRuns({});
  });
  return { preview, runs, stop };
}
