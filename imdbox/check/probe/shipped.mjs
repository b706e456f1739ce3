// box check's probe, the programs it hands to other processes, as their text: node in a job's jail
// (line 16's preview server, its client, and the driver of a job's work) and in a user namespace
// (line 17's connect), a shell's reads in a job's jail, and the browser's page. Each runs in a
// process of its own, never in this one: the probe is one script (`node -e`), so what another
// node, a shell or the browser runs is shipped as text, and kept here, not in a wall's function;
// those that are files of their own (*.cjs, *.sh beside the parts) go in as strings (bundle.py).
// One script with the other parts when it runs (imdbox/check/bundle.py).
import { tool, shipped, CONNECT_MS, REFUSALS } from "./base.mjs";

// A job's preview server and its client, for line 16: run by the image's node in the job's jail
// (`node -e`, CommonJS). The server is preview-server.cjs; the client prints what the server (its
// first argument) and the internet URL (its second) gave it.
export const PREVIEW_SERVER = shipped("preview-server.cjs");
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

// A job's work, as one run of a job's jail holds it: driver.cjs.
export const DRIVER = shipped("driver.cjs");

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
