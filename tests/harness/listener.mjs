// A test target: answers on HTTP port 80 (IPv4 and IPv6) and on port 53
// (UDP and TCP) with its own name, so a probe knows exactly whom it reached.
// Runs in a container of the tests' own, on an --internal network.
import dgram from "node:dgram";
import http from "node:http";
import net from "node:net";

const name = process.env.LISTENER_NAME || "listener";
const reply = `imd-test-listener:${name}\n`;

http
  .createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<html><head><title>${name}</title></head><body><p>${reply}</p></body></html>`);
  })
  .listen({ port: 80, host: "::", ipv6Only: false });

net
  .createServer((sock) => {
    sock.on("error", () => {}); // a client that resets must not take the listener down
    sock.end(reply);
  })
  .listen({ port: 53, host: "::", ipv6Only: false });

for (const type of ["udp4", "udp6"]) {
  const sock = dgram.createSocket({ type, reuseAddr: true });
  sock.on("message", (_msg, rinfo) => sock.send(reply, rinfo.port, rinfo.address));
  sock.on("error", () => sock.close()); // no IPv6 on this network: IPv4 still answers
  sock.bind(53);
}
console.log(`listening: ${name}`);
