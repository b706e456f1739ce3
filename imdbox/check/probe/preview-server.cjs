// box check's probe (line 16), a job's preview server, run by the image's node in the job's jail
// (`node -e`, CommonJS). It answers every request with a token (its first argument), to any
// origin (the browser's page is a file), and ends after its second (ms). Shipped as text
// (bundle.py).
const http = require("node:http");
const s = http.createServer((q, r) => {
  r.writeHead(200, { "content-type": "text/plain", "access-control-allow-origin": "*" });
  r.end(process.argv[1]);
});
s.listen(0, "127.0.0.1", () => console.log("IMD-PREVIEW " + s.address().port));
setTimeout(() => process.exit(0), Number(process.argv[2]));
