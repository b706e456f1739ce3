// Run inside the box as imd by tests/world/test_browser.py: node --input-type=module -e <this> LAUNCHER CHECK ARGS...
// The check itself with a page that does not hold the text it looks for.
const [, CHECK, ...ARGS] = process.argv.slice(1);
const { check } = await import(CHECK);
const result = await check({ html: "<p>a page without the expected words</p>", expect: "imd-box browser check", deadlineMs: Number(ARGS[0]) });
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
