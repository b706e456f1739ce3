"""`box check` without Docker: reading the box's output, the CLI's shape, the pieces it is built from."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from typing import Optional

import pytest

from imdbox import names
from imdbox.check import bundle as bundler
from imdbox.check import counters, runner
from imdbox.check.command import load_targets
from imdbox.check.counters import Counted
from imdbox.check.report import Report, Result, render, summary
from imdbox.check.walls import WALLS
from imdbox.runflags import EngineLimits, RunFlags
from tests.harness.cli import run_box

WALLS_UP = (
    "imd-box firewall: walls up and verified: IPv4 23 rules (resolvers: 127.0.0.11; the Mac: 10.0.0.2), IPv6 8 rules\n"
)


def same_as_modules(folder, bundle: str) -> str:
    """What the parts in `folder` print run as modules (main.mjs), which must be what the
    bundle prints run as one script; both must end well."""
    node = subprocess.run(["which", "node"], capture_output=True, text=True).stdout.strip()
    if not node:
        pytest.skip("node is not installed here")
    as_modules = subprocess.run([node, str(folder / "main.mjs")], capture_output=True, text=True)
    as_one = subprocess.run([node, "--input-type=module", "-e", bundle], capture_output=True, text=True)
    assert as_modules.returncode == as_one.returncode == 0, (as_modules.stderr, as_one.stderr)
    assert as_one.stdout == as_modules.stdout
    return as_one.stdout


def box_output(results):
    return runner.RESULT_MARK + json.dumps({"results": results}) + "\n"


def all_ok():
    return [{"id": w.id, "ok": True, "detail": f"{w.id} fine", "ms": 5} for w in WALLS]


def test_walls_numbered_in_order():
    assert [w.number for w in WALLS] == list(range(1, 26))
    assert len({w.id for w in WALLS}) == 25


def test_every_wall_has_a_probe():
    probe = runner.probe_source()
    table = probe[probe.index("const CHECKS = {") :]
    for w in WALLS:
        assert f"{w.id}" in table.split("};")[0], w.id


def test_parse_all_ok():
    results, ms = runner.parse(box_output(all_ok()), WALLS_UP, 0)
    assert all(r.ok for r in results)
    assert ms["user"] == 5
    assert Report(results, 1.0).ok


def test_parse_no_result_line_fails_every_wall_with_the_reason():
    stderr = "imd-box: the firewall could not be set up; the worker was not started\n"
    results, _ = runner.parse("", stderr, 78)
    assert len(results) == len(WALLS) and not any(r.ok for r in results)
    assert "exit 78" in results[0].detail and "firewall could not be set up" in results[0].detail


def test_a_line_out_of_time_is_not_proved_never_a_fail():
    from rich.console import Console

    rows = all_ok()
    jail = next(r for r in rows if r["id"] == "read_jail")
    jail.update(ok=False, late=True, detail="the browser in the job's jail took longer than 10 s")
    results, _ = runner.parse(box_output(rows), WALLS_UP, 0)
    line = next(r for r in results if r.id == "read_jail")
    # The internet line was reached: an unreached line would be a FAIL, a late one stays not proved.
    assert (line.ok, line.not_proved, line.late) == (False, True, True)
    report = Report(results, 1.0)
    assert report.exit_code == 3
    text, _ = summary(report)
    assert "16 not proved: ran out of time" in text and "FAIL" not in text, text
    out = io.StringIO()
    render(report, Console(file=out, width=200))
    assert "not proved: the browser in the job's jail took longer than 10 s" in out.getvalue()


def test_a_late_line_with_evidence_is_a_fail():
    rows = all_ok()
    jail = next(r for r in rows if r["id"] == "read_jail")
    jail.update(ok=False, detail="the sandbox READ the device key; srt took longer than 10 s")  # no late flag
    results, _ = runner.parse(box_output(rows), WALLS_UP, 0)
    assert Report(results, 1.0).exit_code == 1


def test_parse_a_missing_wall_is_a_fail():
    partial = [r for r in all_ok() if r["id"] != "ipv6"]
    results, _ = runner.parse(box_output(partial), WALLS_UP, 0)
    bad = [r for r in results if not r.ok]
    assert [r.id for r in bad] == ["ipv6"]
    assert "no result" in bad[0].detail


def test_parse_ok_must_be_true_not_truthy():
    rows = all_ok()
    rows[0]["ok"] = "yes"
    results, _ = runner.parse(box_output(rows), WALLS_UP, 0)
    assert not results[0].ok


def jailed_output(jailed, rows=None):
    return runner.RESULT_MARK + json.dumps({"results": rows or all_ok(), "jailed": jailed}) + "\n"


@pytest.mark.parametrize(
    "counted, ok, says",
    [
        ([Counted(3, 7), Counted(27, 7)], True, "(the firewall refused 24 packets of them and let none out)"),
        (
            [Counted(3, 7), Counted(27, 8)],
            False,
            "(the firewall refused 24 packets of them and let 1 out: NOT REFUSED)",
        ),
        ([Counted(3, 7)], False, "(the firewall's counters were not read around them)"),
        ([], False, "(the firewall's counters were not read around them)"),
    ],
)
def test_the_lines_a_jobs_jail_ran_again_go_by_the_counters(counted, ok, says):
    results, _ = runner.parse(jailed_output(["lan", "dns"]), WALLS_UP, 0, counted)
    for r in results:
        if r.id in ("lan", "dns"):
            assert (r.ok, r.detail) == (ok, f"{r.id} fine {says}")
        else:
            assert r.ok and r.detail.endswith("fine"), r


def test_packets_let_out_where_a_jail_line_failed_are_its_own():
    rows = [{**r, "ok": r["id"] != "lan"} for r in all_ok()]
    results, _ = runner.parse(jailed_output(["lan", "dns"], rows), WALLS_UP, 0, [Counted(3, 7), Counted(27, 9)])
    by_id = {r.id: r for r in results}
    assert not by_id["lan"].ok and by_id["dns"].ok
    assert by_id["dns"].detail == "dns fine (the firewall refused 24 packets of them and let 2 out)"


V4 = "-P OUTPUT DROP -c 0 0\n-A OUTPUT -o lo -c 5 300 -j ACCEPT\n-A OUTPUT -c 9 900 -j ACCEPT\n"
V6 = "-P OUTPUT DROP -c 0 0\n-A OUTPUT -c 7 420 -j REJECT --reject-with icmp6-adm-prohibited\n"


def test_the_root_execs_readings_step_by_step():
    after = V4.replace("-c 9 900", "-c 11 1000")
    out = f"-- before --\n{V4}-- IPv6 --\n{V6}-- after --\n{after}-- IPv6 --\n{V6}"
    assert counters.readings(out) == [Counted(7, 9), Counted(7, 11)]
    # Cut off (the box ended, or the probe never asked again): what it got to.
    assert counters.readings(f"-- before --\n{V4}-- IPv6 --\n{V6}-- after --\n{V4}") == [Counted(7, 9)]
    assert counters.readings("") == []


def test_parse_garbage_fails_every_wall():
    results, _ = runner.parse(runner.RESULT_MARK + "{not json\n", "", 0)
    assert not any(r.ok for r in results)


def test_firewall_line_needs_the_entrypoints_verified_walls():
    results, _ = runner.parse(box_output(all_ok()), "", 0)
    fw = next(r for r in results if r.id == "firewall")
    assert not fw.ok and "no verified firewall" in fw.detail
    results, _ = runner.parse(box_output(all_ok()), WALLS_UP, 0)
    fw = next(r for r in results if r.id == "firewall")
    assert fw.ok and fw.detail.startswith("set and read back: IPv4 23 rules, IPv6 8 rules;")


def test_probe_config_carries_the_worker_flags_and_pins():
    flags = RunFlags(limits=EngineLimits(cpus=8, memory=16 * 1024**3))
    cfg = runner.probe_config(flags, "https://api.imd.fun/health", runner.Targets())
    assert cfg["expect"]["cpus"] == 4.0 and cfg["expect"]["memory"] == 6 * 1024**3 and cfg["expect"]["pids"] == 2048
    assert cfg["expect"]["node"].startswith("24.") and cfg["expect"]["forge"]
    assert cfg["dns_name"] == "api.imd.fun"
    assert cfg["targets"]["metadata"] == ["169.254.169.254", "169.254.170.2"] or cfg["targets"]["metadata"] == (
        "169.254.169.254",
        "169.254.170.2",
    )


def test_the_default_internet_target_is_the_control_planes_health_url():
    assert names.DEFAULT_INTERNET_URL == "https://api.imd.fun/health"


def test_the_check_box_is_the_worker_box_with_the_probe_as_its_command():
    """Same RunFlags as the worker: only the command, name and role label differ."""
    limits = EngineLimits(cpus=2, memory=8 * 1024**3)
    worker = RunFlags(limits=limits).sdk_kwargs()
    cfg = runner.probe_config(RunFlags(limits=limits), names.DEFAULT_INTERNET_URL, runner.Targets())
    check = RunFlags(limits=limits, command=runner.probe_command(cfg), role="check", name="x").sdk_kwargs()
    for key in set(worker) | set(check):
        if key in ("command", "labels", "name"):
            continue
        assert worker.get(key) == check.get(key), key
    assert check["command"][:3] == ["/usr/local/bin/node", "--input-type=module", "-e"]  # by path: never the volume's
    assert json.loads(check["command"][4])["internet_url"] == names.DEFAULT_INTERNET_URL


def test_probe_script_fits_in_one_argument():
    # Linux caps one argv string at 128 KiB (MAX_ARG_STRLEN).
    assert len(runner.probe_source().encode()) < 100 * 1024


def test_probe_script_parses(tmp_path):
    node = subprocess.run(["which", "node"], capture_output=True, text=True).stdout.strip()
    if not node:
        pytest.skip("node is not installed here")
    bundle = tmp_path / "probe.mjs"
    bundle.write_text(runner.probe_source())
    out = subprocess.run([node, "--check", str(bundle)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_probe_is_its_parts_less_their_imports_of_each_other(tmp_path):
    """Each part is a module of its own; the bundle declares every name the parts declare,
    once, and imports each of node's modules once."""
    bundle = runner.probe_source()
    parts = [(bundler.PROBE_DIR / p).read_text() for p in bundler.probe_order()]
    declared = re.compile(r"^(?:export )?(?:async function|function|const|let) (\w+)", re.M)
    assert sorted(declared.findall(bundle)) == sorted(n for text in parts for n in declared.findall(text))
    assert "export " not in "\n".join(line[:7] for line in bundle.splitlines())
    imports = [line for line in bundle.splitlines() if line.startswith("import ")]
    assert imports and all('from "node:' in line for line in imports)
    assert len({line.split(" from ")[1] for line in imports}) == len(imports)
    (tmp_path / "x.mjs").write_text('import {\n  a,\n} from "./base.mjs";\n')
    with pytest.raises(ValueError, match="one import per line"):
        bundler.probe_source(tmp_path, "x.mjs")


PART_IMPORT = re.compile(r'^import .* from "\./([\w-]+\.mjs)";$', re.M)


def part_imports(name: str) -> list[str]:
    return PART_IMPORT.findall((bundler.PROBE_DIR / name).read_text())


def test_the_probe_puts_each_part_after_the_parts_it_imports():
    order = bundler.probe_order()
    assert order[-1] == "main.mjs" and len(set(order)) == len(order)
    assert sorted(order) == sorted(p.name for p in bundler.PROBE_DIR.glob("*.mjs")), "a part main.mjs never reaches"
    for i, name in enumerate(order):
        for dep in part_imports(name):
            assert dep in order[:i], f"{name} comes before {dep}, which it imports"


def test_only_main_imports_a_walls_part():
    """The walls' parts share what they need through parts of their own (base, home, attempts,
    jobs, shipped), never through each other: only main.mjs imports a part that holds a wall."""
    main = (bundler.PROBE_DIR / "main.mjs").read_text()
    table = main[main.index("const CHECKS = {") + len("const CHECKS = {") :].split("}")[0]
    checks = {item.split(":")[-1].strip() for item in table.split(",")} - {""}
    exports = re.compile(r"^export (?:async function|function|const) (\w+)", re.M)
    walls = {p.name for p in bundler.PROBE_DIR.glob("*.mjs") if checks & set(exports.findall(p.read_text()))}
    assert {"box.mjs", "network.mjs", "jail.mjs", "root.mjs", "hands.mjs", "view.mjs", "login.mjs"} <= walls
    for name in bundler.probe_order():
        if name != "main.mjs":
            assert not set(part_imports(name)) & walls, f"{name} imports a wall's part"


def write_parts(directory, parts: dict[str, str]):
    for name, text in parts.items():
        (directory / name).write_text(text)


def test_the_order_is_the_one_node_runs_modules_in(tmp_path):
    """Each part after its imports, in the order of its import lines: the order node itself
    runs them in as ES modules, which the bundle keeps."""
    log = 'import fs from "node:fs";\n'
    write_parts(
        tmp_path,
        {
            "main.mjs": f'{log}import {{ a }} from "./a.mjs";\nimport {{ b }} from "./b.mjs";\nfs.writeSync(1, `main ${{a}}${{b}}\\n`);\n',
            "a.mjs": f'{log}import {{ c }} from "./c.mjs";\nexport const a = c + 1;\nfs.writeSync(1, "a\\n");\n',
            "b.mjs": f'{log}import {{ c }} from "./c.mjs";\nexport const b = c + 2;\nfs.writeSync(1, "b\\n");\n',
            "c.mjs": f'{log}export const c = 1;\nfs.writeSync(1, "c\\n");\n',
        },
    )
    assert bundler.probe_order(tmp_path) == ["c.mjs", "a.mjs", "b.mjs", "main.mjs"]
    bundle = bundler.probe_source(tmp_path)
    assert bundle.count('import fs from "node:fs";') == 1
    assert same_as_modules(tmp_path, bundle) == "c\na\nb\nmain 23\n"


def test_an_import_circle_is_refused_by_name(tmp_path):
    write_parts(
        tmp_path,
        {
            "main.mjs": 'import { a } from "./a.mjs";\nconsole.log(a);\n',
            "a.mjs": 'import { b } from "./b.mjs";\nexport const a = 1;\nexport const a2 = b;\n',
            "b.mjs": 'import { a } from "./a.mjs";\nexport const b = a;\n',
        },
    )
    with pytest.raises(ValueError, match=r"an import circle among the probe's parts: a\.mjs -> b\.mjs -> a\.mjs$"):
        bundler.probe_source(tmp_path)
    with pytest.raises(ValueError, match="import circle"):
        bundler.probe_order(tmp_path)


@pytest.mark.parametrize(
    "main, other, why",
    [
        (
            'import { b } from "./b.mjs";\n',
            "export const a = 1;\n",
            "main.mjs imports from b.mjs what it does not export: b",
        ),
        ('import { b } from "./gone.mjs";\n', "", "main.mjs imports gone.mjs, which is not in"),
        ('import b from "./b.mjs";\n', "export const b = 1;\n", "a part's own names only"),
        ('import { b as c } from "./b.mjs";\n', "export const b = 1;\n", "a part's own names only"),
        ('import { b } from "../b.mjs";\n', "export const b = 1;\n", 'another part is imported as "./name.mjs"'),
        ('import { b } from "./b.mjs";\n', "const b = 1;\nexport { b };\n", "an export of a declaration only"),
        (
            'import fs from "node:fs";\nimport { b } from "./b.mjs";\n',
            'import fsx from "node:fs";\nexport const b = fsx;\n',
            "one name",
        ),
    ],
)
def test_what_the_bundler_refuses(tmp_path, main, other, why):
    write_parts(tmp_path, {"main.mjs": main, "b.mjs": other})
    with pytest.raises(ValueError, match=re.escape(why)):
        bundler.probe_source(tmp_path)


SHIPPING_BASE = (
    'import fs from "node:fs";\n'
    'export const shipped = (name) => fs.readFileSync(new URL(name, import.meta.url), "utf8");\n'
)


def test_a_shipped_program_goes_in_as_its_text(tmp_path):
    """`const X = shipped("file");` is the file's text in the one script, less its whole-line
    comments (a script's #! stays): what runs is the same program as when the part reads it."""
    write_parts(
        tmp_path,
        {
            "base.mjs": SHIPPING_BASE,
            "main.mjs": 'import { spawnSync } from "node:child_process";\n'
            'import { shipped } from "./base.mjs";\n'
            'const SAY = shipped("say.sh");\n'
            'export const ADD = shipped("add.cjs");\n'
            'const sh = spawnSync("sh", ["-c", SAY, "say", "a b"], { encoding: "utf8" }).stdout;\n'
            'const js = spawnSync(process.execPath, ["-e", ADD, "2", "3"], { encoding: "utf8" }).stdout;\n'
            "console.log(sh + js);\n",
            "say.sh": '#!/bin/sh\n# its value is an argument, never spliced in\necho "said $1"\n',
            "add.cjs": "// adds its arguments\nconsole.log(Number(process.argv[1]) + Number(process.argv[2]));\n",
        },
    )
    bundle = bundler.probe_source(tmp_path)
    assert 'const SAY = "#!/bin/sh\\necho \\"said $1\\"\\n";' in bundle
    assert 'const ADD = "console.log(Number(process.argv[1]) + Number(process.argv[2]));\\n";' in bundle
    assert "shipped(" not in bundle
    assert same_as_modules(tmp_path, bundle) == "said a b\n5\n\n"


@pytest.mark.parametrize(
    "line, why",
    [
        ('const S = shipped("gone.sh");', "ships gone.sh, which is not in"),
        ("const S = shipped(name);", "a program is shipped as its own line"),
        ('run(shipped("s.sh"));', "a program is shipped as its own line"),
        ('const S = shipped("s.sh") + ";";', "a program is shipped as its own line"),
        ('const S = shipped("s.py");', "a program is shipped as its own line"),
        ('const S = shipped("../s.sh");', "a program is shipped as its own line"),
    ],
)
def test_any_other_use_of_shipped_is_refused(tmp_path, line, why):
    """The script has no files beside it: a call of `shipped` the bundler cannot put in as a
    string would read nothing there, so it is refused, by the part's name and line."""
    write_parts(
        tmp_path,
        {
            "base.mjs": SHIPPING_BASE,
            "main.mjs": f'import {{ shipped }} from "./base.mjs";\nconst name = "s.sh";\n{line}\n',
            "s.sh": "echo s\n",
            "s.py": "print(1)\n",
        },
    )
    with pytest.raises(ValueError, match=re.escape(f"main.mjs:3: {why}")):
        bundler.probe_source(tmp_path)


def test_every_program_beside_the_parts_is_shipped():
    """Each file beside the parts that is not a part is a program some part ships, and the one
    script calls `shipped` nowhere (it has no files beside it)."""
    parts = "\n".join((bundler.PROBE_DIR / p).read_text() for p in bundler.probe_order())
    named = set(re.findall(r'= shipped\("([\w.-]+)"\);$', parts, re.M))
    programs = {p.name for p in bundler.PROBE_DIR.iterdir() if p.suffix != ".mjs"}
    assert named == programs
    calls = [line for line in runner.probe_source().splitlines() if "shipped(" in line]
    assert all(line.lstrip().startswith("*") for line in calls), calls  # base.mjs's doc comment


def test_targets_file(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"lan": ["10.1.2.3"], "multicast": [["224.0.0.251", 5353]]}))
    t = load_targets(f)
    assert t.lan == ("10.1.2.3",) and t.multicast == (("224.0.0.251", 5353),)
    f.write_text(json.dumps({"nope": 1}))
    from imdbox.errors import BoxError

    with pytest.raises(BoxError, match="unknown keys nope"):
        load_targets(f)


def test_render_and_svg():
    from rich.console import Console

    results, _ = runner.parse(box_output(all_ok()[:-1]), WALLS_UP, 0)
    report = Report(results, 4.2)
    console = Console(record=True, width=150, file=__import__("io").StringIO())
    render(report, console)
    text = console.export_text()
    assert "25 walls checked in 4.2 s: 1 FAIL (25)" in text
    assert "FAIL" in text and "ok" in text
    assert console.export_svg().startswith("<svg")


def test_json_shape():
    results, _ = runner.parse(box_output(all_ok()), WALLS_UP, 0)
    rows = Report(results, 1.0).as_json()
    assert len(rows) == len(WALLS) and set(rows[0]) == {"wall", "ok", "proved", "detail", "ms"}


def test_check_help_is_fast_and_lists_the_options():
    started = time.monotonic()
    out = run_box("check", "--help", timeout=60)
    assert out.returncode == 0, out.stderr
    for option in ("--json", "--svg", "--url", "--targets"):
        assert option in out.stdout
    assert time.monotonic() - started < 3


def test_importing_the_command_loads_no_docker_or_rich():
    code = "import sys, imdbox.check.command; print(any(m.split('.')[0] in ('docker', 'rich') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=names.REPO_ROOT)
    assert out.stdout.strip() == "False", out.stderr


# ---------------------------------------------------------------- the report at any width
# A newcomer's terminal: 80 columns (macOS Terminal, and rich's width when piped), or fewer.
LONG_TOKEN = "/home/imd/.identitymd/work/" + "x" * 90 + "/node"  # one word wider than any terminal


def failing_report() -> Report:
    """Every other wall FAILs, with long evidence (and one unbroken word in it)."""
    results = []
    for w in WALLS:
        detail = f"{w.id}: " + " ".join(f"evidence-{w.number}-{i}" for i in range(40)) + f" at {LONG_TOKEN}"
        results.append(Result(w.number, w.title, w.id, w.number % 2 == 0, detail))
    return Report(results, 3.1)


def rendered(report: Report, width: Optional[int], verbose: bool = False) -> list[str]:
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, color_system=None)
    render(report, console, verbose=verbose)
    return out.getvalue().splitlines()


def squeezed(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("width", [60, 80, 120, None], ids=["60", "80", "120", "piped"])
def test_the_report_fits_its_terminal_and_shows_each_fail_whole(width):
    report = failing_report()
    lines = rendered(report, width)
    widest = width or 80  # rich's width when the output is not a terminal
    assert max(len(line) for line in lines) <= widest, "\n".join(lines)
    # One line a wall, its number, mark and short name, in order.
    heads = [line for line in lines if re.match(r"^ ?\d+ (ok  |FAIL) ", line)]
    assert [line.split()[0] for line in heads] == [str(w.number) for w in WALLS]
    for w, head in zip(WALLS, heads):
        assert head.endswith(w.short) and len(head) <= 60, head
    # Each FAIL's evidence, whole, under it; no ok line's.
    text = squeezed("\n".join(lines))
    for r in report.results:
        assert (squeezed(r.detail) in text) is (not r.ok), r.id
    summary = "25 walls checked in 3.1 s: 13 FAIL (1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25)"
    assert squeezed(" ".join(lines[-2:])).endswith(squeezed(summary)), lines[-2:]


def test_verbose_shows_every_lines_evidence():
    report = failing_report()
    text = squeezed("\n".join(rendered(report, 80, verbose=True)))
    assert all(squeezed(r.detail) in text for r in report.results)


def test_twin_the_old_table_at_80_columns_hides_the_evidence():
    # The table the report was (a wall column that does not wrap, the evidence folded into
    # what is left): at 80 columns no FAIL's evidence is whole, and lines are cut.
    from rich.console import Console
    from rich.table import Table

    report = failing_report()
    table = Table()
    for name, kw in (
        ("#", {}),
        ("wall", {"no_wrap": True}),
        ("", {"no_wrap": True}),
        ("evidence", {"overflow": "fold"}),
    ):
        table.add_column(name, **kw)
    for r in report.results:
        table.add_row(str(r.number), r.wall, "ok" if r.ok else "FAIL", r.detail)
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(table)
    text = squeezed(out.getvalue())
    assert not any(squeezed(r.detail) in text for r in report.results if not r.ok)


def test_every_short_name_fits_its_line():
    assert all(len(w.short) <= 52 for w in WALLS), [w.short for w in WALLS if len(w.short) > 52]


# ---------------------------------------------------------------- an internet URL out of reach
URL = "https://nowhere.invalid/health"


def unreached_rows(**more):
    """The box could not reach its internet URL: the internet line, the DNS line (its name is
    the URL's) and the read jail's (a job's command fetches it) failed on it alone."""
    rows = {r["id"]: r for r in all_ok()}
    rows["internet"] = {"id": "internet", "ok": False, "detail": f"GET {URL} failed: ENOTFOUND", "unreached": True}
    rows["dns"] = {"id": "dns", "ok": False, "detail": "nowhere.invalid did NOT resolve", "unreached": True}
    rows["read_jail"] = {"id": "read_jail", "ok": False, "detail": "a sandboxed command cannot", "unreached": True}
    for wall_id, row in more.items():
        rows[wall_id] = {**rows[wall_id], **row}
    return list(rows.values())


def test_lines_that_failed_only_on_an_unreached_url_are_not_proved():
    results, _ = runner.parse(box_output(unreached_rows()), WALLS_UP, 0)
    report = Report(results, 3.0)
    assert [r.number for r in report.not_proved()] == [13, 14, 16]
    assert report.exit_code == 3 and not report.ok
    assert [row["proved"] for row in report.as_json()].count(False) == 3


def test_twin_the_box_refused_the_url_itself_every_such_line_fails():
    # The box's own firewall refused the internet URL (no `unreached`): its lines are FAILs.
    rows = unreached_rows(internet={"unreached": False, "detail": f"GET {URL} failed: EHOSTUNREACH"})
    report = Report(runner.parse(box_output(rows), WALLS_UP, 0)[0], 3.0)
    assert report.not_proved() == [] and report.exit_code == 1
    assert set(report.failed()) == {"dns", "internet", "read_jail"}


def test_a_line_that_failed_more_than_the_url_still_fails():
    # The refusals in the DNS line failed too: the probe says so (no `unreached`), a FAIL.
    rows = unreached_rows(dns={"unreached": False, "detail": "udp 10.0.0.53:53: ANSWERED"})
    report = Report(runner.parse(box_output(rows), WALLS_UP, 0)[0], 3.0)
    assert [r.number for r in report.not_proved()] == [14, 16]
    assert report.exit_code == 1


def test_an_ok_line_is_never_not_proved():
    rows = unreached_rows(user={"unreached": True})
    report = Report(runner.parse(box_output(rows), WALLS_UP, 0)[0], 3.0)
    assert report.by_id("user").ok and not report.by_id("user").not_proved


@pytest.mark.parametrize("let_out, proved", [(0, False), (1, True)])
def test_packets_a_jails_line_let_out_are_a_fail_the_url_does_not_explain(let_out, proved):
    results, _ = runner.parse(
        jailed_output(["lan", "dns"], unreached_rows()), WALLS_UP, 0, [Counted(3, 7), Counted(27, 7 + let_out)]
    )
    dns = next(r for r in results if r.id == "dns")
    assert not dns.ok and dns.not_proved is not proved, dns
    assert next(r for r in results if r.id == "lan").ok is not proved


def test_the_dns_line_stands_for_the_url_only_when_its_name_is_the_urls():
    flags = RunFlags(limits=EngineLimits(cpus=8, memory=16 * 1024**3))
    assert runner.probe_config(flags, URL, runner.Targets())["dns_name_is_the_urls"] is True
    named = runner.probe_config(flags, URL, runner.Targets(dns_name="imdt-listener-internet"))
    assert named["dns_name_is_the_urls"] is False


@pytest.mark.parametrize("width", [60, 80, None], ids=["60", "80", "piped"])
def test_the_report_says_in_one_line_which_lines_the_url_left_unproved(width):
    report = Report(runner.parse(box_output(unreached_rows()), WALLS_UP, 0)[0], 3.0)
    lines = rendered(report, width)
    assert max(len(line) for line in lines) <= (width or 80), "\n".join(lines)
    for number in (13, 14, 16):
        head = next(line for line in lines if re.match(rf"^{number} ", line))
        assert head.startswith(f"{number} ---- "), head
    text = " ".join(" ".join(lines).split())
    assert "not proved: nowhere.invalid did NOT resolve" in text
    last = text[text.index("25 walls checked") :]
    assert last == (
        "25 walls checked in 3.0 s: 13, 14, 16 not proved: the box could not reach its internet URL "
        f"(GET {URL} failed: ENOTFOUND); run it again with --url and a URL the box can reach"
    ), last
    assert "FAIL" not in text


def test_a_fail_and_lines_not_proved_are_both_said():
    rows = unreached_rows(user={"ok": False, "detail": "uid 0"})
    report = Report(runner.parse(box_output(rows), WALLS_UP, 0)[0], 3.0)
    text = " ".join(" ".join(rendered(report, 80)).split())
    assert "25 walls checked in 3.0 s: 1 FAIL (1); 13, 14, 16 not proved: " in text
