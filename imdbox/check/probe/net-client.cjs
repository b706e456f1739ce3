// box check's probe (line 16), the client of a job's preview server, run by the image's node in a
// job's jail, in a sandbox or by the worker (`node -e`, CommonJS). Its arguments: each fetch's
// limit (ms), the preview server's URL, the internet URL (none: no answer). It prints what each
// gave: the preview's text, the internet's HTTP status, or why there was none. Shipped as text
// (imdbox/check/bundle.py).
const ms = Number(process.argv[1]);
const get = async (what, url) => {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(ms), redirect: "manual" });
    const text = await r.text();
    return "IMD-NET " + what + " " + (what === "preview" ? text.trim() : r.status);
  } catch (e) {
    return "IMD-NET " + what + " " + ((e.cause && (e.cause.code || e.cause.message)) || e.name);
  }
};
Promise.all([get("preview", process.argv[2]), get("internet", process.argv[3])]).then((l) => console.log(l.join("\n")));
