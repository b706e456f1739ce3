// Run inside the box as imd by tests/world/test_browser.py: node --input-type=module -e <this> LAUNCHER CHECK ARGS...
// Runs inside the box (as imd): navigate to each URL through the MCP server in
// HTTP mode, snapshot each, print one JSON list.
const [, CHECK, ...ARGS] = process.argv.slice(1);
const { startMcp, McpSession } = await import(CHECK);
const urls = JSON.parse(ARGS[0]);
const mcp = startMcp({ timeoutMs: 20000 });
const out = [];
try {
  const s = new McpSession(await mcp.ready);
  await s.initialize();
  for (const url of urls) {
    const nav = await s.callTool("browser_navigate", { url });
    const snap = await s.callTool("browser_snapshot");
    out.push({ url, navError: nav.isError, nav: nav.text, snap: snap.text });
  }
} catch (err) {
  out.push({ error: err.message });
} finally {
  await mcp.stop();
}
console.log(JSON.stringify(out));
