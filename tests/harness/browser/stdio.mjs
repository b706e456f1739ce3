// Run inside the box as imd by tests/world/test_browser.py: node --input-type=module -e <this> LAUNCHER CHECK ARGS...
// The worker's way in: the launcher on stdio, newline-delimited JSON-RPC.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
const [LAUNCHER, CHECK] = process.argv.slice(1);
const { startPage } = await import(CHECK);
const page = await startPage("<p>imd-test-listener:stdio-page</p>");
const child = spawn(LAUNCHER, [], { stdio: ["pipe", "pipe", "inherit"] });
const waiting = new Map();
createInterface({ input: child.stdout }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (waiting.has(msg.id)) { waiting.get(msg.id)(msg); waiting.delete(msg.id); }
});
let id = 0;
const send = (method, params, notify = false) => {
  const msg = { jsonrpc: "2.0", method, params };
  if (notify) { child.stdin.write(JSON.stringify(msg) + "\n"); return null; }
  msg.id = ++id;
  child.stdin.write(JSON.stringify(msg) + "\n");
  return new Promise((resolve) => waiting.set(msg.id, resolve));
};
const init = await send("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } });
send("notifications/initialized", {}, true);
const tools = await send("tools/list", {});
await send("tools/call", { name: "browser_navigate", arguments: { url: page.url } });
const snap = await send("tools/call", { name: "browser_snapshot", arguments: {} });
child.stdin.end();
await new Promise((r) => child.once("exit", r));
page.close();
console.log(JSON.stringify({
  server: init.result.serverInfo,
  tools: tools.result.tools.map((t) => t.name),
  snapshot: snap.result.content.map((c) => c.text).join("\n"),
}));
