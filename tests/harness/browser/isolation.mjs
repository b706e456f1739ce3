// Run inside the box as imd by tests/world/test_browser.py: node --input-type=module -e <this> LAUNCHER CHECK ARGS...
// Two runs of the launcher, one after the other, on the same origin: the second
// must not see what the first stored (an isolated, in-memory profile per run).
const [, CHECK] = process.argv.slice(1);
const { startPage, startMcp, McpSession } = await import(CHECK);
const page = await startPage("<p>isolation</p>");
const results = [];
for (const fn of ["() => { localStorage.setItem('imd', 'first run'); document.cookie = 'imd=1; max-age=3600'; return 'stored'; }",
                  "() => JSON.stringify([localStorage.getItem('imd'), document.cookie])"]) {
  const mcp = startMcp({ timeoutMs: 20000 });
  const s = new McpSession(await mcp.ready);
  await s.initialize();
  await s.callTool("browser_navigate", { url: page.url });
  results.push((await s.callTool("browser_evaluate", { function: fn })).text);
  await mcp.stop();
}
page.close();
console.log(JSON.stringify(results));
