"""The login broker: a request through it against the same request straight to Anthropic."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import GOALS, Bench, added_row, log, tail
from bench.report import Row
from tests.harness import boxes
from tests.harness import machine as test_machine


def requests_timed(box, count: int, brokered: bool) -> list[float]:
    """`count` requests for the account's profile on one connection (curl's own timing of each):
    through the login broker with a sentinel minted for this shell, as a Claude job reaches it
    (Anthropic's name at the broker's port for that run, which its network has as 443), or straight to
    Anthropic with the owner's token."""
    from imdbox import layout
    from tests.harness import login

    url = "https://api.anthropic.com/api/oauth/profile"
    each = " ".join(f"-o /dev/null {url}" for _ in range(count))
    if brokered:
        ask = (
            f"r=$({layout.BROKER_ASK} runs --data pid=$$) && "
            f"r=${{r#run }} && "
            f'a=$(sed -E \'s/.*"accessToken":"([^"]*)".*/\\1/\' {layout.BROKER_DIR}/runs/${{r%% *}}.json) && '
            f"curl -sS --fail --connect-to api.anthropic.com:443:127.0.0.1:${{r#* }} "
            f"--cacert {layout.BROKER_DIR}/trust.pem"
        )
    else:
        ask = f"a={login.ACCESS} && curl -sS --fail"
    script = f"{ask} -H \"Authorization: Bearer $a\" -w '%{{time_total}}\\n' {each}"
    code, out = boxes.as_imd(box, script, timeout=120)
    times = [float(line) for line in out.split() if line.replace(".", "", 1).isdigit()]
    if code != 0 or len(times) != count:
        raise RuntimeError(f"the requests failed: {tail(out)}")
    return times


def broker(bench: Bench) -> None:
    """A request through the login broker (worker/broker) against the same request straight to
    Anthropic, with the owner's token: the test world's Anthropic (tests/harness/login.py), the
    account's profile, each batch on one connection (Claude Code keeps its own), alternating."""
    from tests.harness import jobs, login

    ca, tls = login.certificates()
    through = Row("a request through the login broker", note="GET /api/oauth/profile with a run's sentinel")
    straight = Row("the same request straight to Anthropic", note="the owner's token, no broker")
    log("waiting for the machine lock (a test run may hold it)")
    with (
        test_machine.held(),
        tempfile.TemporaryDirectory() as folder,
        boxes.volume(bench.client, "broker") as home,
        login.walled(
            bench.client, bench.image, None, volume=home, folder=Path(folder), ca=ca, alone_on=bench.args.network
        ) as box,
    ):
        jobs.seed(box, {login.LOGIN: login.owner_login()})
        boxes.as_imd(box, boxes.in_view("true"))  # the worker's start, which starts the broker
        with jobs.model(bench.client, bench.image, box, [], login=login.anthropic(tls)):
            for i in range(max(bench.args.runs, 3)):
                for row, brokered in ((through, True), (straight, False)):
                    log(f"{row.metric} {i + 1}")
                    row.samples += requests_timed(box, 20, brokered)
    cost = added_row("the login broker's cost (through it − straight)", through, straight, GOALS["broker"])
    bench.rows += [through, straight, cost]
