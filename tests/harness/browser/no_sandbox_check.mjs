// Run inside the box as imd by tests/world/test_browser.py: node --input-type=module -e <this> LAUNCHER CHECK ARGS...
const [, CHECK] = process.argv.slice(1);
const { check } = await import(CHECK);
const result = await check({ launcher: "/tmp/no-sandbox-launcher", deadlineMs: 20000 });
console.log(JSON.stringify(result));
