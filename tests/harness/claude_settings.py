"""Claude Code's managed settings (image/claude-code/managed-settings.json): as the image
ships them, a twin's copy with its sandbox block changed, and the sandbox block as the settings
of srt (the sandbox runtime Claude Code runs a command in)."""

from __future__ import annotations

import json

from imdbox import names
from imdbox.check.runner import CLAUDE_SETTINGS

MANAGED = json.loads((names.REPO_ROOT / "image" / "claude-code" / "managed-settings.json").read_text())


def managed_with(**sandbox) -> dict:
    settings = json.loads(json.dumps(MANAGED))
    settings["sandbox"].update(sandbox)
    return {CLAUDE_SETTINGS: (json.dumps(settings).encode(), 0o644)}


# The managed file's `sandbox` block as srt settings (the same mapping as probe/jail.mjs):
# no network, the workspace writable, the file's filesystem rules, bwrap/socat/rg paths
# and the weaker nested mode. argv: the output file, then filesystem entries to leave out
# (the breaking twins' "copy without the rule").
DERIVE = r"""
const fs = require("fs");
const [out, ...drop] = process.argv.slice(1);
const sb = JSON.parse(fs.readFileSync(process.env.MANAGED, "utf8")).sandbox;
const denyRead = sb.filesystem.denyRead.filter((p) => !drop.includes(p));
const allowRead = sb.filesystem.allowRead.filter((p) => !drop.includes(p));
// Claude Code lets a command write in its working directory, and where the file's allowWrite
// says, which srt then binds readable too.
const allowWrite = [".", ...(sb.filesystem.allowWrite || [])].filter((p) => !drop.includes(p));
const jail = {
  ...sb,
  network: { allowedDomains: [], deniedDomains: [] },
  filesystem: { denyWrite: [], ...sb.filesystem, allowWrite, denyRead, allowRead },
};
fs.writeFileSync(out, JSON.stringify(jail));
"""
