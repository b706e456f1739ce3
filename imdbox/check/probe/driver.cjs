// box check's probe (line 16), a job's work as one run of a job's jail holds it (each run has a
// network of its own), run by the image's node in the jail (`node -e`, CommonJS): it starts the
// preview server in the sandbox, then, once its stdin says go, runs the next command and the
// browser; it prints what each gave, and holds the server until its stdin closes, while others
// try to reach it from outside the jail. Its argument: the work (jobs.mjs startDriver); its page
// is the browser's page.json, where it puts the preview's URL. Shipped as text (bundle.py).
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const c = JSON.parse(process.argv[1]);
const say = (what, r) => console.log("IMD-DRIVER " + what + " " + JSON.stringify(r));
const start = (argv) => spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], detached: true });
const kill = (child) => { try { process.kill(-child.pid, "SIGKILL"); } catch {} };
const runIt = (argv) => new Promise((resolve) => {
  let out = "", err = "", timedOut = false;
  const child = start(argv);
  const timer = setTimeout(() => { timedOut = true; kill(child); }, c.ms);
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  child.on("error", (e) => { clearTimeout(timer); resolve({ code: null, out, err: String(e) }); });
  child.on("close", (code) => { clearTimeout(timer); resolve({ code, out, err, timedOut, limit: c.ms }); });
});
const server = start(c.server);
let out = "", err = "", started = false;
const end = () => { kill(server); process.exit(0); };
let go;
const gone = new Promise((r) => (go = r));
process.stdin.on("data", (d) => String(d).includes("go") && go()).on("end", end).resume();
const timer = setTimeout(() => { say("preview", { why: "timed out starting a preview server", late: true }); end(); }, c.ms);
server.stderr.on("data", (d) => (err += d));
server.on("close", (code) => { if (!started) say("preview", { why: "did not start a preview server (exit " + code + "): " + (err || out).slice(0, 300) }); });
server.stdout.on("data", async (d) => {
  out += d;
  const m = /IMD-PREVIEW (\d+)/.exec(out);
  if (!m || started) return;
  started = true;
  clearTimeout(timer);
  const url = "http://127.0.0.1:" + m[1] + "/";
  say("preview", { url });
  fs.writeFileSync(c.page, JSON.stringify({ ...JSON.parse(fs.readFileSync(c.page, "utf8")), preview: url }));
  await gone;
  const [next, browser] = await Promise.all([runIt(c.next.map((a) => (a === "IMD-PREVIEW-URL" ? url : a))), runIt(c.browser)]);
  say("next", next);
  say("browser", browser);
});
