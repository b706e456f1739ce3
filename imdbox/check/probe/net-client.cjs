// box check's probe (line 16), the client of a job's preview server, run by the image's node in a
// job's jail, in a sandbox or by the worker (`node -e`, CommonJS). Its arguments: each fetch's
// limit (ms), the preview server's URL, the internet URL (none: no answer). It prints what each
// gave: the preview's text, the internet's HTTP status, or why there was none. Shipped as text
// (imdbox/check/bundle.py). node's http, not fetch: fetch's first call loads undici, some 35 ms
// of CPU in each of the line's runs of it, on cores the check's other lines need.
const ms = Number(process.argv[1]);
const get = (what, url) =>
  new Promise((resolve) => {
    let timer;
    const say = (how) => {
      clearTimeout(timer);
      resolve("IMD-NET " + what + " " + how);
    };
    let req;
    try {
      const client = require(new URL(url).protocol === "https:" ? "node:https" : "node:http");
      req = client.get(url, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => say(what === "preview" ? text.trim() : res.statusCode));
        res.on("error", (e) => say(e.code || e.name));
      });
    } catch (e) {
      return say(e.code || e.name); // no URL, or not one
    }
    timer = setTimeout(() => req.destroy(Object.assign(new Error("timed out"), { code: "TimeoutError" })), ms);
    req.on("error", (e) => say(e.code || e.name));
  });
Promise.all([get("preview", process.argv[2]), get("internet", process.argv[3])]).then((l) => console.log(l.join("\n")));
