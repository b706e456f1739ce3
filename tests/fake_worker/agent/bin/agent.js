#!/usr/bin/env node
// A stand-in agent CLI (claude, codex or grok) for the box's tests.
"use strict";
const fs = require("node:fs");
const pkg = require("../package.json");
// The stand-in worker's sandbox check (imd doctor): read each file after this line, and say so.
const SANDBOX_CHECK = "imd sandbox check: read each file below";
if (process.argv.includes("--version")) {
  // A test's slow machine: seconds in slow-version beside package.json, slept before answering.
  let slow = 0;
  try {
    slow = Number(fs.readFileSync(require.resolve("../slow-version"), "utf8")) || 0;
  } catch {
    slow = 0;
  }
  if (slow > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, slow * 1000);
  console.log(`${pkg.version} (${pkg.name}, fake)`);
} else if (process.argv.includes("-p") || process.argv[2] === "exec") {
  // The prompt follows -p (claude) or comes last (codex exec), or is on stdin ("-", or nothing
  // after -p), where the box's launcher moves it.
  let prompt = process.argv[2] === "exec" ? process.argv[process.argv.length - 1] : process.argv[process.argv.indexOf("-p") + 1];
  if (prompt === undefined || prompt.startsWith("-")) {
    try {
      prompt = fs.readFileSync(0, "utf8");
    } catch {
      prompt = "";
    }
  }
  if (prompt.startsWith(SANDBOX_CHECK)) {
    for (const file of prompt.trim().split("\n").slice(1)) {
      try {
        fs.readFileSync(file);
        console.log(`read ${file}`);
      } catch (e) {
        console.log(`${e.code} ${file}`);
      }
    }
  } else {
    console.log("OK"); // the worker's one-line smoke run (imd doctor)
  }
} else {
  console.log(`${pkg.name} (fake): nothing to do here`);
}
