// Build-time helper for the Dockerfile's fetch stage: prints the lock path of one
// installed package and of everything it needs, one per line, so each tool in
// /opt gets its own node_modules holding exactly what it runs with (and nothing
// another tool brought in).
//
//   node closure.mjs node_modules/<package>   (run where `npm ci` installed)
//
// Dependencies are resolved the way Node resolves them: the package's own
// node_modules first, then each enclosing node_modules up to the top. A needed
// package that is not installed stops the build; an optional one that npm left
// out for this platform (os/cpu fields) is skipped.
import fs from "node:fs";

const [root] = process.argv.slice(2);
const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8")).packages;
const installed = (at) => Boolean(lock[at]) && fs.existsSync(at);

function resolve(from, name) {
  for (let dir = from; ; ) {
    const candidate = `${dir}/node_modules/${name}`;
    if (installed(candidate)) return candidate;
    const up = dir.lastIndexOf("/node_modules/");
    if (up < 0) break;
    dir = dir.slice(0, up);
  }
  return installed(`node_modules/${name}`) ? `node_modules/${name}` : null;
}

const seen = new Set();
const todo = [root];
while (todo.length) {
  const at = todo.pop();
  if (seen.has(at)) continue;
  if (!installed(at)) throw new Error(`${at} is not installed`);
  seen.add(at);
  const meta = lock[at];
  const optionalPeers = Object.keys(meta.peerDependenciesMeta || {}).filter((n) => meta.peerDependenciesMeta[n].optional);
  const needed = [...Object.keys(meta.dependencies || {}), ...Object.keys(meta.peerDependencies || {})];
  const optional = [...Object.keys(meta.optionalDependencies || {}), ...optionalPeers];
  for (const name of new Set([...needed, ...optional])) {
    const found = resolve(at, name);
    if (found) todo.push(found);
    else if (!optional.includes(name)) throw new Error(`${at} needs ${name}, which is not installed`);
  }
}
process.stdout.write([...seen].sort().join("\n") + "\n");
