#!/usr/local/bin/node
// An installed tool that needs a key (`imd tools add keyed --command ... --env IMDT_TOOL_KEY`):
// a stdio MCP server (newline-delimited JSON-RPC 2.0, the protocol's stdio transport) with
// one method, `key`, which says whether the key reached it, by its SHA-256 only.
import { createHash } from "node:crypto";
import readline from "node:readline";

const name = "IMDT_TOOL_KEY";
const answer = (id, result) => process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id, result })}\n`);
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return; // a notification
  if (msg.method === "initialize") {
    answer(msg.id, { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "keyed", version: "1" } });
  } else if (msg.method === "tools/list") {
    answer(msg.id, { tools: [{ name: "key", description: "whether the tool has its key", inputSchema: { type: "object", properties: {} } }] });
  } else if (msg.method === "tools/call") {
    const value = process.env[name];
    const text = value ? `key sha256:${createHash("sha256").update(value).digest("hex")}` : "key missing";
    answer(msg.id, { content: [{ type: "text", text }] });
  } else {
    answer(msg.id, {});
  }
});
