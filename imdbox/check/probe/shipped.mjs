// box check's probe, the programs it hands to other processes, as their text: node in a job's jail
// (line 16's preview server, its client, and the driver of a job's work) and in a user namespace
// (line 17's connect), a shell's reads in a job's jail, and the browser's page. Each runs in a
// process of its own, never in this one: the probe is one script (`node -e`), so what another
// node, a shell or the browser runs is shipped as text, and kept here, not in a wall's function.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import { tool, CONNECT_MS, TOOL_MS, REFUSALS } from "./base.mjs";

// A job's preview server and its clients, for line 16: run by the image's node in the job's
// jail (`node -e`, CommonJS). The server answers every request with a token (its argument), to
// any origin (the browser's page is a file); the client prints what the server (its first
// argument) and the internet URL (its second) gave it.
export const PREVIEW_SERVER = `const http = require("node:http");
const s = http.createServer((q, r) => {
  r.writeHead(200, { "content-type": "text/plain", "access-control-allow-origin": "*" });
  r.end(process.argv[1]);
});
s.listen(0, "127.0.0.1", () => console.log("IMD-PREVIEW " + s.address().port));
setTimeout(() => process.exit(0), ${TOOL_MS});
`;
export const NET_CLIENT = `const get = async (what, url) => {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(${CONNECT_MS * 2}), redirect: "manual" });
    const text = await r.text();
    return "IMD-NET " + what + " " + (what === "preview" ? text.trim() : r.status);
  } catch (e) {
    return "IMD-NET " + what + " " + ((e.cause && (e.cause.code || e.cause.message)) || e.name);
  }
};
Promise.all([get("preview", process.argv[1]), get("internet", process.argv[2])]).then((l) => console.log(l.join("\\n")));
`;

// A job's work, as one run of a job's jail holds it (each run has a network of its own): the
// driver, run by the image's node in the jail, starts the preview server in the sandbox, then
// runs the next command and the browser; it prints what each gave, and holds the server until
// its stdin closes, while others try to reach it from outside the jail. Its argument: the
// work (jobs.mjs startDriver).
export const DRIVER = `const { spawn } = require("node:child_process");
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
process.stdin.on("end", end).resume();
const timer = setTimeout(() => { say("preview", { why: "timed out starting a preview server", late: true }); end(); }, c.ms);
server.stderr.on("data", (d) => (err += d));
server.on("close", (code) => { if (!started) say("preview", { why: "did not start a preview server (exit " + code + "): " + (err || out).slice(0, 300) }); });
server.stdout.on("data", async (d) => {
  out += d;
  const m = /IMD-PREVIEW (\\d+)/.exec(out);
  if (!m || started) return;
  started = true;
  clearTimeout(timer);
  const url = "http://127.0.0.1:" + m[1] + "/";
  say("preview", { url });
  fs.writeFileSync(c.page, fs.readFileSync(c.page, "utf8").replace("IMD-PREVIEW-URL", url));
  const [next, browser] = await Promise.all([runIt(c.next.map((a) => (a === "IMD-PREVIEW-URL" ? url : a))), runIt(c.browser)]);
  say("next", next);
  say("browser", browser);
});
`;

// A shell's reads of its arguments: each file's digest, or "denied"; only a digest leaves the
// jail, never the content. `sh -c READS jail FILE...`
export const READS = `for f in "$@"; do d=$(${tool("sha256sum")} -- "$f" 2>/dev/null) && echo "IMD-JAIL $f \${d%% *}" || echo "IMD-JAIL $f denied"; done`;
// The next command of a job's work, in a sandbox: the reads, then the client of the preview
// server. `sh -c NEXT_COMMAND jail PREVIEW-URL INTERNET-URL NET_CLIENT FILE...`
export const NEXT_COMMAND = `p=$1 i=$2 c=$3; shift 3; ${READS}; exec ${process.execPath} -e "$c" "$p" "$i"`;

/** A page for the browser: it reads each file by file:// and the preview by http://, and
 * shows one line per read, a file's bytes in base64 (only a digest of them is kept). */
export function browserPage(files, previewUrl) {
  return `<!doctype html><title>imd-box check</title><pre id="o"></pre><script>
const out = [];
for (const f of ${JSON.stringify(files)}) {
  const x = new XMLHttpRequest();
  try {
    x.open("GET", "file://" + f, false);
    x.overrideMimeType("text/plain; charset=x-user-defined");
    x.send();
    let bytes = "";
    for (let i = 0; i < x.responseText.length; i++) bytes += String.fromCharCode(x.responseText.charCodeAt(i) & 255);
    out.push("IMD-JAIL " + f + " " + btoa(bytes));
  } catch {
    out.push("IMD-JAIL " + f + " denied");
  }
}
try {
  const x = new XMLHttpRequest();
  x.open("GET", ${JSON.stringify(previewUrl)}, false);
  x.send();
  out.push("IMD-NET preview " + (x.status === 200 ? x.responseText.trim() : "HTTP " + x.status));
} catch (e) {
  out.push("IMD-NET preview " + e.name);
}
document.getElementById("o").textContent = "\\n" + out.join("\\n") + "\\n";
</script>
`;
}

/** Line 17's connect, by node as root in a user namespace (an ES module, `--input-type=module -e`):
 * it prints how the connect to `host`:`port` went. */
export function nodeConnectScript(host, port, ms) {
  return `import net from "node:net";const s=net.connect({host:${JSON.stringify(host)},port:${port}});
const t=setTimeout(()=>{console.log("timeout");process.exit(0)},${ms});
s.on("connect",()=>{console.log("reached connected");process.exit(0)});
s.on("error",(e)=>{console.log((${JSON.stringify([...REFUSALS])}.includes(e.code)?"refused ":"reached ")+e.code);process.exit(0)});`;
}
