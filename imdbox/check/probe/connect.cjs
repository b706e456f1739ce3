// box check's probe (line 17), a connect by node as root in a user namespace (`node -e`,
// CommonJS): it prints how the connect went, "refused CODE" only for an error the box's firewall
// gives. Its arguments: the host, the port, the limit (ms), and the refusals' codes (a JSON
// list). Shipped as text (imdbox/check/bundle.py).
const net = require("node:net");
const [host, port, ms, refusals] = process.argv.slice(1);
const s = net.connect({ host, port: Number(port) });
setTimeout(() => {
  console.log("timeout");
  process.exit(0);
}, Number(ms));
s.on("connect", () => {
  console.log("reached connected");
  process.exit(0);
});
s.on("error", (e) => {
  console.log((JSON.parse(refusals).includes(e.code) ? "refused " : "reached ") + e.code);
  process.exit(0);
});
