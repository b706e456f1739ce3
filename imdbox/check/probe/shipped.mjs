// box check's probe, the programs it hands to other processes, as their text: node in a job's jail
// (line 16's preview server, its client, and the driver of a job's work) and in a user namespace
// (line 17's connect, and its look there), a shell's reads in a job's jail, and the browser's page. Each runs in a
// process of its own, never in this one: the probe is one script (`node -e`), so what another
// node, a shell or the browser runs is shipped as text, and kept here, not in a wall's function.
// Each is a file of its own beside the parts, which the linters check, and takes what it needs of
// the probe as its arguments (or, the page, as a file beside it): none is put together from values.
// One script with the other parts when it runs (imdbox/check/bundle.py).
import { shipped } from "./base.mjs";

// A job's preview server and its client, for line 16: run by the image's node in the job's jail
// (`node -e`, CommonJS). `node -e NET_CLIENT MS PREVIEW-URL [INTERNET-URL]`
export const PREVIEW_SERVER = shipped("preview-server.cjs");
export const NET_CLIENT = shipped("net-client.cjs");

// A job's work, as one run of a job's jail holds it: driver.cjs.
export const DRIVER = shipped("driver.cjs");

// A shell's reads of files: each one's digest, or "denied"; then the command that follows them,
// if any (the next command of a job's work: NET_CLIENT). `sh -c READS jail SHA256SUM COUNT FILE...`
export const READS = shipped("reads.sh");

// The browser's page, which reads each file and the preview that page.json beside it names.
export const PAGE_HTML = shipped("page.html");
export const PAGE_SCRIPT = shipped("page.js");

// Line 17's connect, by node as root in a user namespace. `node -e CONNECT HOST PORT MS REFUSALS`
export const CONNECT = shipped("connect.cjs");
// Line 17's look from inside each user namespace: `sh -c WHO`.
export const WHO = shipped("who.sh");
