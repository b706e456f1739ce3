// The model, scripted, for Codex: a stand-in for the OpenAI Responses API (POST /v1/responses,
// "stream": true) that plays one job's commands, so the real Codex runs them as it would for a
// real model. Codex finds it as a model provider on the box's loopback (its `-c` settings).
//
// The contract followed (codex-cli 0.171.0, as measured): a request's tools come in an input
// item of type `additional_tools`, whose namespace `functions` holds the custom tool `exec`
// (JavaScript in a V8 isolate that calls nested tools: `await tools.exec_command({cmd})`). A
// turn is the SSE events response.created, response.output_item.done (the item: a
// custom_tool_call of `exec`, or a final `message` with output_text) and response.completed
// (with usage). A tool's result comes back in the next request as a custom_tool_call_output.
//
// MODEL_SCRIPT (JSON): {"steps": [cmd, ...]}, one shell command per turn, each run through
// exec_command (a step may also be exec_command's arguments: {"cmd", "yield_time_ms"}, for a
// process that runs on in a session of its own); after the last, a message ends the job. Which turn a request gets is read
// from the request itself (how many tool calls its input holds), so a retry gets the same.
//
// What the test reads, on stdout, one line each:
//   listening: model <port>
//   prompt <json>   the job's prompt (the last user message of the first request)
//   login <json>    the login Codex signed its first request with (its Authorization header)
//   result <json>   a command's result: {"step", "cmd", "output"}
import http from "node:http";

const script = JSON.parse(process.env.MODEL_SCRIPT || '{"steps": []}');
const port = Number(process.env.MODEL_PORT || 0);
const callId = (step) => `call_imdt_${step}`;
const reported = new Set();
let promptSeen = false;
let loginSeen = false;

const textOf = (content) =>
  (typeof content === "string" ? [{ text: content }] : content || []).map((p) => p.text || "").join("\n");

function turnFor(body) {
  const input = Array.isArray(body.input) ? body.input : [];
  if (!promptSeen) {
    const users = input.filter((i) => i.type === "message" && i.role === "user");
    if (users.length) {
      promptSeen = true;
      console.log(`prompt ${JSON.stringify(textOf(users.at(-1).content))}`);
    }
  }
  for (const item of input) {
    if (item.type !== "custom_tool_call_output" || reported.has(item.call_id)) continue;
    reported.add(item.call_id);
    const step = Number(String(item.call_id).split("_").at(-1));
    console.log(`result ${JSON.stringify({ step, cmd: script.steps[step], output: textOf(item.output) })}`);
  }
  const step = input.filter((i) => i.type === "custom_tool_call").length;
  if (step >= script.steps.length) {
    return { type: "message", role: "assistant", id: `msg_imdt_${step}`, status: "completed", content: [{ type: "output_text", text: "done", annotations: [] }] };
  }
  const args = typeof script.steps[step] === "string" ? { cmd: script.steps[step] } : script.steps[step];
  const js = `const r = await tools.exec_command(${JSON.stringify(args)}); text(typeof r === "string" ? r : JSON.stringify(r));`;
  return { type: "custom_tool_call", id: `ctc_imdt_${step}`, call_id: callId(step), name: "exec", input: js, status: "completed" };
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    if (req.method !== "POST" || req.url.split("?")[0] !== "/v1/responses") {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no ${req.url} here`, type: "not_found" } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (!loginSeen) {
      loginSeen = true;
      console.log(`login ${JSON.stringify(req.headers.authorization || "")}`);
    }
    const item = turnFor(body);
    const id = `resp_imdt_${Date.now()}`;
    const response = { id, object: "response", created_at: Math.floor(Date.now() / 1000), model: body.model, status: "in_progress", output: [] };
    const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    send("response.created", { response });
    send("response.output_item.done", { output_index: 0, item });
    const usage = { input_tokens: 1, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 2 };
    send("response.completed", { response: { ...response, status: "completed", output: [item], usage } });
    res.end();
  });
});
server.listen(port, "127.0.0.1", () => console.log(`listening: model ${server.address().port}`));
process.on("SIGTERM", () => process.exit(0));
