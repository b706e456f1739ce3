#!/usr/bin/env node
// A stand-in agent CLI (claude, codex or grok) for the box's tests.
"use strict";
const pkg = require("../package.json");
if (process.argv.includes("--version")) {
  console.log(`${pkg.version} (${pkg.name}, fake)`);
} else if (process.argv.includes("-p")) {
  console.log("OK"); // the worker's one-line smoke run (imd doctor)
} else {
  console.log(`${pkg.name} (fake): nothing to do here`);
}
