// Run inside the box as imd by tests/world/test_browser.py: node --input-type=module -e <this> LAUNCHER CHECK ARGS...
// Keeps a browser with a loaded page alive for `seconds`, so a test can look at
// its processes; prints "loaded" once the page is in.
const [, CHECK, ...ARGS] = process.argv.slice(1);
const { startPage, startMcp, McpSession } = await import(CHECK);
const page = await startPage("<p>imd-box sandbox probe</p>");
const mcp = startMcp({ timeoutMs: 20000 });
const s = new McpSession(await mcp.ready);
await s.initialize();
await s.callTool("browser_navigate", { url: page.url });
console.log("loaded");
await new Promise((r) => setTimeout(r, Number(ARGS[0]) * 1000));
await mcp.stop();
page.close();
