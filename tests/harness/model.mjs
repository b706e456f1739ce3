// The model, scripted: a stand-in for the Anthropic Messages API (POST /v1/messages)
// that plays one job's tool calls, so the real Claude Code runs them as it would for a
// real model. It runs on the box's loopback (the test's container shares the box's
// network namespace) and Claude Code finds it through ANTHROPIC_BASE_URL.
//
// The contract followed is the API's published one: a streamed answer is the SSE events
// message_start, then per content block content_block_start / content_block_delta
// (text_delta, or input_json_delta for a tool_use's input) / content_block_stop, then
// message_delta (stop_reason, usage) and message_stop; a request with "stream": false
// gets the same message as one JSON body.
//
// MODEL_SCRIPT (JSON): {"steps": [[block, ...], ...]}, one list per assistant turn, each
// block {"text": "..."} or {"tool": "Bash", "input": {...}}. Which turn a request gets is
// read from the request itself (how many assistant turns its messages hold), so a retry
// gets the same answer. After the last step the answer is text with stop_reason end_turn.
// MODEL_WATCH (JSON, optional): texts to look for in every request, the system prompt
// included; each one found is reported once.
// A request without tools is one of Claude Code's side calls (WebFetch's reading of a
// page, a title): its answer is the text it was given, so a page fetched reaches the test.
//
// What the test reads, on stdout, one line each:
//   listening: model <port>
//   prompt <json>   the text of the first user message Claude Code sent (the job's prompt)
//   result <json>   a tool's result: {"step", "tool", "input", "is_error", "text", "images"}
//   seen <json>     a text of MODEL_WATCH that a request held
//
// MODEL_LOGIN (JSON, optional): Anthropic at its real names instead (api.anthropic.com and
// platform.claude.com, which the test box's hosts file gives this loopback), with TLS from a
// test CA and a subscription login, as Claude Code's login uses them:
//   {"tls": {"key", "cert"}, "access": "<the valid access token>", "refresh": "<its refresh token>",
//    "faults": {"expired": n, "invalid_grant": true, "token_down": n}}
// - POST /v1/messages wants `Authorization: Bearer <access>`: else 401 (authentication_error).
//   "expired": n: the first n requests get 401 even so, as a token that expired early would.
// - POST /v1/oauth/token (grant_type refresh_token) rotates: a new access and refresh token
//   each time, and a refresh token used once is refused (400 invalid_grant) ever after;
//   "invalid_grant": true refuses every refresh; "token_down": n answers the first n 503.
// - GET /api/oauth/profile answers the account with the access token, as /v1/messages would.
// - A body over 32 MB (the Messages API's limit) is read, not kept, and answered 413
//   (request_too_large), as Anthropic answers it.
// Each request is reported: request <json> {"host", "method", "path", "headers" (raw, in order),
// "body", "size"}, and each refresh: refresh <json> {"given", "ok"}.
import http from "node:http";
import https from "node:https";

const script = JSON.parse(process.env.MODEL_SCRIPT || '{"steps": []}');
const port = Number(process.env.MODEL_PORT || 0);
const watched = new Set(JSON.parse(process.env.MODEL_WATCH || "[]"));
const toolId = (step, i) => `toolu_imdt_${step}_${i}`;
const played = new Map(); // tool_use id -> {step, tool, input}
script.steps.forEach((blocks, step) =>
  blocks.forEach((b, i) => b.tool && played.set(toolId(step, i), { step, tool: b.tool, input: b.input })),
);

function turnFor(body) {
  if (!Array.isArray(body.tools) || body.tools.length === 0) return [{ text: lastText(body.messages) || "ok" }];
  const step = body.messages.filter((m) => m.role === "assistant").length;
  if (step === 0 && !promptSeen) {
    promptSeen = true;
    console.log(`prompt ${JSON.stringify(firstText(body.messages))}`);
  }
  report(body.messages);
  return step < script.steps.length
    ? script.steps[step].map((b, i) => (b.tool ? { ...b, id: toolId(step, i) } : b))
    : [{ text: "done" }];
}

let promptSeen = false;
// A message's or a tool result's content: a string, or a list of blocks.
const partsOf = (content) => (typeof content === "string" ? [{ type: "text", text: content }] : content || []);
const textOf = (content) =>
  partsOf(content)
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("\n");
const firstText = (messages) => textOf((messages.find((m) => m.role === "user") || {}).content);
const lastText = (messages) => textOf((messages.at(-1) || {}).content).slice(0, 20000);

const reported = new Set();
function report(messages) {
  for (const m of messages) {
    if (m.role !== "user" || !Array.isArray(m.content)) continue;
    for (const block of m.content) {
      if (block.type !== "tool_result" || reported.has(block.tool_use_id)) continue;
      reported.add(block.tool_use_id);
      const text = textOf(block.content);
      const images = partsOf(block.content).filter((p) => p.type === "image").length;
      const call = played.get(block.tool_use_id) || { step: -1, tool: "?", input: null };
      console.log(`result ${JSON.stringify({ ...call, is_error: block.is_error === true, text, images })}`);
    }
  }
}

function message(body, blocks) {
  const content = blocks.map((b) =>
    b.tool ? { type: "tool_use", id: b.id, name: b.tool, input: b.input } : { type: "text", text: b.text },
  );
  return {
    id: `msg_imdt_${Date.now()}`,
    type: "message",
    role: "assistant",
    model: body.model,
    content,
    stop_reason: blocks.some((b) => b.tool) ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  };
}

function stream(res, msg) {
  const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  send("message_start", { message: { ...msg, content: [], stop_reason: null } });
  msg.content.forEach((block, index) => {
    if (block.type === "text") {
      send("content_block_start", { index, content_block: { type: "text", text: "" } });
      send("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
    } else {
      send("content_block_start", { index, content_block: { ...block, input: {} } });
      // The input in two pieces: a client must join partial_json before parsing it.
      const json = JSON.stringify(block.input);
      const cut = Math.floor(json.length / 2);
      for (const partial_json of [json.slice(0, cut), json.slice(cut)]) {
        send("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } });
      }
    }
    send("content_block_stop", { index });
  });
  send("message_delta", { delta: { stop_reason: msg.stop_reason, stop_sequence: null }, usage: { output_tokens: 1 } });
  send("message_stop", {});
  res.end();
}

const login = process.env.MODEL_LOGIN ? JSON.parse(process.env.MODEL_LOGIN) : null;
const faults = { expired: 0, invalid_grant: false, token_down: 0, ...(login?.faults ?? {}) };
const usedUp = new Set();
let issued = 0;

function answer(res, status, data) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(data));
}

// The login's side of a request; true when it was answered here.
function loggedIn(req, res, path, raw, size) {
  if (!login) return false;
  console.log(`request ${JSON.stringify({
    host: req.headers.host, method: req.method, path: req.url, headers: req.rawHeaders, body: raw.slice(0, 4096), size,
  })}`);
  if (size > LIMIT) return answer(res, 413, { type: "error", error: { type: "request_too_large", message: "too large" } }), true;
  if (req.method === "POST" && path === "/v1/oauth/token") {
    let asked = {};
    try {
      asked = JSON.parse(raw);
    } catch {}
    if (faults.token_down > 0) {
      faults.token_down -= 1;
      console.log(`refresh ${JSON.stringify({ given: asked.refresh_token ?? null, ok: false, down: true })}`);
      return answer(res, 503, { error: "temporarily_unavailable" }), true;
    }
    const ok = !faults.invalid_grant && asked.grant_type === "refresh_token" && asked.refresh_token === login.refresh
      && !usedUp.has(asked.refresh_token);
    console.log(`refresh ${JSON.stringify({ given: asked.refresh_token ?? null, ok })}`);
    if (!ok) return answer(res, 400, { error: "invalid_grant", error_description: "Invalid refresh token" }), true;
    usedUp.add(login.refresh);
    issued += 1;
    login.access = `sk-ant-oat01-imdt-access-${issued}`;
    login.refresh = `sk-ant-ort01-imdt-refresh-${issued}`;
    answer(res, 200, {
      token_type: "Bearer", access_token: login.access, refresh_token: login.refresh, expires_in: 28800,
      scope: asked.scope ?? "user:inference",
    });
    return true;
  }
  const refused = (status, type) => answer(res, status, { type: "error", error: { type, message: type } });
  if (req.headers.authorization !== `Bearer ${login.access}`) return refused(401, "authentication_error"), true;
  if (path === "/v1/messages" && faults.expired > 0) return (faults.expired -= 1), refused(401, "authentication_error"), true;
  if (req.method === "GET" && path === "/api/oauth/profile") {
    return answer(res, 200, { account: { uuid: "imdt-account", email_address: "owner@imdt.invalid" } }), true;
  }
  return false;
}

const LIMIT = 32 * 1000 * 1000;

const serve = (req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size <= LIMIT) chunks.push(c);
  });
  req.on("end", () => {
    const path = req.url.split("?")[0];
    if (loggedIn(req, res, path, Buffer.concat(chunks).toString("utf8"), size)) return;
    if (req.method !== "POST" || path !== "/v1/messages") {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: `no ${path} here` } }));
      return;
    }
    const raw = Buffer.concat(chunks).toString("utf8");
    const body = JSON.parse(raw);
    for (const text of watched) {
      if (!raw.includes(text)) continue;
      watched.delete(text);
      console.log(`seen ${JSON.stringify(text)}`);
    }
    const msg = message(body, turnFor(body));
    if (body.stream) stream(res, msg);
    else {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(msg));
    }
  });
};
const server = login ? https.createServer(login.tls, serve) : http.createServer(serve);
// MODEL_ADDRESS: where it listens (a test network's container of its own: 0.0.0.0).
server.listen(login ? 443 : port, process.env.MODEL_ADDRESS || "127.0.0.1", () => console.log(`listening: model ${server.address().port}`));
process.on("SIGTERM", () => process.exit(0));
