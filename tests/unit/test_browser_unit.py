"""The browser's pieces without an engine: pins, the launcher's fixed flags, the check's output."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from imdbox import browser, names
from tests.harness.browser_check import parse_check_output

ROOT = names.REPO_ROOT
LAUNCHER = ROOT / "browser" / "playwright-mcp"
CONFIG = json.loads((ROOT / "browser" / "config.json").read_text())


def test_the_worker_is_offered_the_launcher_and_the_methods_website_work_uses():
    assert browser.LAUNCHER == "/usr/local/lib/imd-box/browser/playwright-mcp"
    assert browser.check_command() == ["/usr/local/bin/node", "/usr/local/lib/imd-box/browser/check.mjs", "30000"]
    env = browser.offer_env()
    assert env["IMD_BOX_BROWSER_MCP"] == browser.LAUNCHER
    assert env["IMD_BOX_BROWSER_TOOLS"].split() == list(browser.TOOLS)
    assert len(set(browser.TOOLS)) == len(browser.TOOLS) == 15
    # The worker's rule for a method name (its tools.json schema).
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", t) for t in browser.TOOLS)


def test_the_dockerfile_puts_browser_where_the_paths_say():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY browser/ /usr/local/lib/imd-box/browser/" in dockerfile
    assert "chromium-headless-shell" in dockerfile
    # The scripts stay the last layers: editing them refetches nothing.
    assert dockerfile.index("chromium-headless-shell") < dockerfile.index("COPY browser/")


def test_mcp_is_pinned_and_hash_checked():
    pins = json.loads((ROOT / "image" / "package.json").read_text())
    assert pins["dependencies"]["@playwright/mcp"] == browser.MCP_VERSION
    lock = json.loads((ROOT / "image" / "package-lock.json").read_text())["packages"]
    for pkg in ("@playwright/mcp", "playwright", "playwright-core"):
        entry = lock[f"node_modules/{pkg}"]
        assert entry["integrity"].startswith("sha512-"), pkg
    assert lock["node_modules/@playwright/mcp"]["version"] == browser.MCP_VERSION


def test_launcher_flags_are_fixed():
    text = LAUNCHER.read_text()
    for flag in ("--executable-path", "--headless", "--isolated", "--sandbox", "--host localhost"):
        assert flag in text, flag
    assert "--no-sandbox" not in text.replace("no --no-sandbox anywhere", "")
    assert '"$@"' not in text, "the launcher must not pass the caller's options on"
    assert LAUNCHER.stat().st_mode & 0o111, "the launcher must be executable"


def test_config_keeps_the_sandbox_and_background_networking_off():
    launch = CONFIG["browser"]["launchOptions"]
    assert CONFIG["browser"]["browserName"] == "chromium"
    assert CONFIG["browser"]["isolated"] is True
    assert launch["chromiumSandbox"] is True
    assert launch["headless"] is True
    assert launch["executablePath"] == browser.HEADLESS_SHELL
    assert CONFIG["server"]["host"] == "localhost"
    args = launch["args"]
    for arg in ("--disable-background-networking", "--disable-component-update", "--disable-sync"):
        assert arg in args
    assert not [a for a in args if "sandbox" in a or a.startswith(("--remote-debugging", "--disable-features"))], args


@pytest.mark.parametrize(
    "args",
    [
        ["--no-sandbox"],
        ["--http"],
        ["--http", "x"],
        ["--http", "99999"],
        ["--http", "0", "--no-sandbox"],
        ["--port", "0"],
        ["--version", "--no-sandbox"],
        ["-v"],
    ],
)
def test_launcher_refuses_other_options(args):
    # Usage is checked first, so this runs on any machine.
    r = subprocess.run([str(LAUNCHER), *args], capture_output=True, text=True, timeout=10)
    assert r.returncode == 64 and "usage" in r.stderr, (args, r)


def test_launcher_names_what_is_missing_outside_the_image():
    if Path("/opt/playwright-mcp").exists():
        pytest.skip("this machine has the image's files")
    for args in ([], ["--version"]):  # the worker's probe fails too: the browser cannot start
        r = subprocess.run([str(LAUNCHER), *args], capture_output=True, text=True, timeout=10)
        assert r.returncode == 69 and "missing from this box" in r.stderr, args


def test_check_script_takes_its_budget_from_box():
    text = (ROOT / "browser" / "check.mjs").read_text()
    assert "DEADLINE_MS" not in text and not re.search(r"(deadlineMs|timeoutMs) = \d", text), "a budget of its own"
    for step in ("initialize", "tools/list", "browser_navigate", "browser_snapshot"):
        assert step in text
    r = subprocess.run(["node", str(ROOT / "browser" / "check.mjs")], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and json.loads(r.stdout) == {"ok": False, "detail": "usage: check.mjs <budget ms>"}


# An MCP server that listens and answers until `stall`, then never again: the check's own
# code (check.mjs's check()) is given it as the launcher.
STALLING_MCP = r"""#!/usr/bin/env node
const http = require("node:http");
const stall = process.env.STALL;
const tools = [{ name: "browser_navigate" }, { name: "browser_snapshot" }];
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const msg = JSON.parse(body);
    const step = msg.method === "tools/call" ? msg.params.name : msg.method;
    if (step === stall) return;
    if (msg.id === undefined) return res.writeHead(202).end();
    const result = msg.method === "tools/list" ? { tools } : { content: [{ type: "text", text: "page" }] };
    res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }));
  });
});
server.listen(0, "127.0.0.1", () => console.error(`Listening on http://localhost:${server.address().port}`));
"""


def check_against_stalling_mcp(tmp_path: Path, stall: str, deadline_ms: int) -> dict:
    launcher = tmp_path / "mcp"
    launcher.write_text(STALLING_MCP)
    launcher.chmod(0o755)
    check = json.dumps(str(ROOT / "browser" / "check.mjs"))
    args = json.dumps({"launcher": str(launcher), "deadlineMs": deadline_ms, "expect": "page"})
    script = f"import {{ check }} from {check}; console.log(JSON.stringify(await check({args})));"
    env = {"PATH": os.environ["PATH"], "STALL": stall}
    r = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=30, env=env
    )
    return json.loads(r.stdout)


@pytest.mark.parametrize("stall", ["initialize", "tools/list", "browser_navigate", "browser_snapshot"])
def test_a_check_out_of_time_names_the_step_it_waited_on(tmp_path, stall):
    result = check_against_stalling_mcp(tmp_path, stall, 1500)
    assert result["ok"] is False and result["detail"].startswith(f"no answer within 1.5 s, waiting for {stall}"), result


def test_the_stalling_mcp_passes_the_check_where_it_does_not_stall(tmp_path):
    assert check_against_stalling_mcp(tmp_path, "nothing", 5000)["ok"] is True


@pytest.mark.parametrize(
    ("output", "code", "ok", "detail"),
    [
        ('{"ok": true, "detail": "loaded"}\n', 0, True, "loaded"),
        ('imd-box firewall: walls up\n{"ok": true, "detail": "loaded"}\n', 0, True, "loaded"),
        ('{"ok": false, "detail": "no text"}\n', 1, False, "no text"),
        ('{"ok": true, "detail": "loaded"}\n', 1, False, "loaded (but the check exited 1)"),
        ("Segmentation fault\n", 139, False, "the browser check gave no result (exit 139): Segmentation fault"),
        ("", 1, False, "the browser check gave no result (exit 1): no output"),
        ('{"ok": "yes"}\n', 0, False, ""),
    ],
)
def test_parse_check_output(output, code, ok, detail):
    result = parse_check_output(output, code)
    assert result.ok is ok
    assert result.detail == detail
