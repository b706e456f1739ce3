// The fake release feed: serves /srv read-only over HTTP :80 (runs in a test container).
// Any path under /hold/ is held open, never answered; under /unavailable/, answered 503 (a
// mirror that is down: curl tries again).
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

const root = "/srv";
http
  .createServer((req, res) => {
    const rel = path.normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
    // /hold/...: a download that never answers (a test interrupts box while it waits).
    if (rel.startsWith("/hold/")) return;
    if (rel.startsWith("/unavailable/")) {
      res.writeHead(503).end("unavailable\n");
      return;
    }
    const file = path.join(root, rel);
    if (!file.startsWith(root + "/") || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end("not found\n");
      return;
    }
    res.writeHead(200, { "content-type": "application/octet-stream" });
    fs.createReadStream(file).pipe(res);
  })
  .listen(80, () => console.log("listening: feed"));
// PID 1 in its container: without this, an engine shutting down waits out the stop timeout.
process.on("SIGTERM", () => process.exit(0));
