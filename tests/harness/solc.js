#!/usr/local/bin/node
// solc's own command line over solc-js (npm `solc`), for the tests' contract jobs: forge
// finds it where it keeps the compilers it downloads (~/.svm/<v>/solc-<v>), and runs it
// with --version, then --standard-json with the input on stdin.
const solc = require("solc");
const args = process.argv.slice(2);
if (args.includes("--version")) {
  console.log(`solc, the solidity compiler commandline interface\nVersion: ${solc.version()}`);
} else if (args.includes("--standard-json")) {
  let input = "";
  process.stdin.on("data", (d) => (input += d));
  process.stdin.on("end", () => process.stdout.write(solc.compile(input)));
} else {
  console.error(`solc (solc-js): only --version and --standard-json, not: ${args.join(" ")}`);
  process.exit(2);
}
