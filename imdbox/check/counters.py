"""The firewall's counters around a job's jail's attempts at the network walls (box check
lines 7–13 and 22, run again in the jail: probe/network.mjs fromJobsJail).

The probe asks for a reading by making ASKED<step> in the box's /tmp: a file of imd's, not a
folder, which root without CAP_DAC_OVERRIDE could not look into. A root exec of box's, started
with the check's box, waits for each step's file, reads both listings, and answers by making
ANSWERED<step> in root's /run/imd-box, which imd reads and cannot write. It only looks whether
the probe's file is there, and ends after the last step, after LIMIT_S, or with the box. One
exec for both readings and no watch of the logs: over an ssh:// engine each exec is a login,
and a watch asks the engine again and again."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Sequence
from typing import NamedTuple

from ..layout import IP6TABLES, IPTABLES
from .report import Result

STEPS = ("before", "after")
ASKED = "/tmp/.imd-box-check-counters-"
ANSWERED = "/run/imd-box/counted-"
LIMIT_S = 30
# sh in the box, as root: $0 and $1 the tools, $2 ASKED, $3 ANSWERED.
_AROUND = f"""
for step in {" ".join(STEPS)}; do
  n=0
  until [ -e "$2$step" ]; do
    n=$((n + 1))
    [ "$n" -le {LIMIT_S * 20} ] || exit 3
    sleep 0.05
  done
  echo "-- $step --"
  {{ {{LIST}}; }} || exit 4
  : >"$3$step"
done
"""


class Counted(NamedTuple):
    """The firewall's counters at one of the probe's asks: packets its walls refused, and packets
    its ACCEPT rules let out of the box (imdbox/refused.py)."""

    refused: int
    let_out: int


def with_jail_counted(results: list[Result], jailed: Sequence[str], counted: Sequence[Counted]) -> list[Result]:
    """The lines a job's jail ran again, with what the firewall counted while it did (nothing
    else ran then). In the jail a refusal looks like a far side's reset, so the probe there
    fails only on what reached it (a connection, an answer, the probe's listener on the box
    itself); what its attempts got out of the box besides, the firewall's ACCEPT rules counted.
    Packets let out while no such line failed are every such line's FAIL: nothing tells which
    attempt they were. Once one failed, its open wall is where they went."""
    if not jailed:
        return results
    if len(counted) < 2:
        return [
            _then(r, False, "the firewall's counters were not read around them", failed=True) if r.id in jailed else r
            for r in results
        ]
    before, after = counted[0], counted[-1]
    out = after.let_out - before.let_out
    said = f"the firewall refused {after.refused - before.refused} packets of them"
    if out == 0:
        return [_then(r, r.ok, f"{said} and let none out") if r.id in jailed else r for r in results]
    # A line that failed only on the internet URL (not_proved) explains no packet.
    explained = any(not r.ok and not r.not_proved for r in results if r.id in jailed)
    let = f"{said} and let {out} out"
    return [
        _then(r, r.ok and explained, let if explained else f"{let}: NOT REFUSED", failed=not explained)
        if r.id in jailed
        else r
        for r in results
    ]


def _then(result: Result, ok: bool, more: str, failed: bool = False) -> Result:
    """`failed`: the counters make the line a FAIL of their own, which no unreached URL explains."""
    not_proved = result.not_proved and not failed
    return dataclasses.replace(result, ok=ok, detail=f"{result.detail} ({more})", not_proved=not_proved)


class Counter(threading.Thread):
    """The root exec that reads the counters when the probe asks (the module's docstring), in a
    thread of its own while the box runs; `counted` holds the readings it gave."""

    def __init__(self, container):
        super().__init__(daemon=True)
        self.container = container
        self.counted: list[Counted] = []

    def run(self) -> None:
        import docker.errors
        import requests.exceptions

        from .. import engine, refused

        script = _AROUND.replace("{LIST}", refused.LIST)
        try:
            _, out = engine.exec_as_root(
                self.container, ["/bin/sh", "-c", script, IPTABLES, IP6TABLES, ASKED, ANSWERED]
            )
        except (docker.errors.APIError, requests.exceptions.RequestException):
            return
        self.counted = readings(out)


def readings(out: str) -> list[Counted]:
    """What the root exec printed, a reading for each step it got to."""
    from .. import refused

    got = re.split(rf"^-- ({'|'.join(STEPS)}) --\n", out, flags=re.M)[1:]
    counted = []
    for step, text in zip(got[::2], got[1::2]):
        both = refused.split(text)
        if step != STEPS[len(counted)] or both is None:
            break
        counted.append(Counted(*refused.tally(*both)))
    return counted
