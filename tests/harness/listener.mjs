// A test target: answers on HTTP port 80 and HTTPS port 443 (IPv4 and IPv6), on port
// 53 (UDP and TCP) and on UDP port 9999 (any datagram, broadcasts too) with its own
// name, so a probe knows exactly whom it reached.
// Runs in a container of the tests' own, on an --internal network.
// Its HTTPS certificate is made at start, self-signed, for its own address
// (LISTENER_IP), and printed on a line `tls-cert <base64 PEM>`: a test that fetches
// over HTTPS (Claude Code's WebFetch takes no http:// URL) trusts exactly that one.
import { execFileSync } from "node:child_process";
import dgram from "node:dgram";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";

const name = process.env.LISTENER_NAME || "listener";
const reply = `imd-test-listener:${name}\n`;

const page = (req, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end(`<html><head><title>${name}</title></head><body><p>${reply}</p></body></html>`);
};
http.createServer(page).listen({ port: 80, host: "::", ipv6Only: false });

const dir = fs.mkdtempSync("/tmp/listener-");
execFileSync("/usr/bin/openssl", [
  "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
  "-subj", `/CN=${name}`, "-addext", `subjectAltName=IP:${process.env.LISTENER_IP}`,
  "-addext", "basicConstraints=critical,CA:TRUE", "-keyout", `${dir}/key.pem`, "-out", `${dir}/cert.pem`,
], { stdio: "ignore" });
const cert = fs.readFileSync(`${dir}/cert.pem`);
https.createServer({ key: fs.readFileSync(`${dir}/key.pem`), cert }, page).listen({ port: 443, host: "::", ipv6Only: false });
console.log(`tls-cert ${cert.toString("base64")}`);

net
  .createServer((sock) => {
    sock.on("error", () => {}); // a client that resets must not take the listener down
    sock.end(reply);
  })
  .listen({ port: 53, host: "::", ipv6Only: false });

for (const [type, port] of [["udp4", 53], ["udp6", 53], ["udp4", 9999]]) {
  const sock = dgram.createSocket({ type, reuseAddr: true });
  sock.on("message", (_msg, rinfo) => {
    // On 9999 the test reads who sent what from the log (a reply to a broadcast is no
    // answer the sender's conntrack knows, so the log is the proof it arrived).
    if (port === 9999) console.log(`udp ${port} from ${rinfo.address}`);
    sock.send(reply, rinfo.port, rinfo.address);
  });
  sock.on("error", () => sock.close()); // no IPv6 on this network: IPv4 still answers
  sock.bind(port);
}
// PID 1 in its container: node has no default action for SIGTERM there, and an engine that
// shuts down (the engine-restart test) would wait out its 10 s stop timeout for each listener.
process.on("SIGTERM", () => process.exit(0));
console.log(`listening: ${name}`);
