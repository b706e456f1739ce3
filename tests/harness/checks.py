"""`box check` as the tests run it: aimed only at the harness's own listeners, and its report
shown a line each when a test's assertion fails."""

from __future__ import annotations

from imdbox.check.report import Report
from tests.harness import topology

# The harness's listeners (tests/harness/topology.py); nothing else is ever aimed at.
TEST_TARGETS = topology.check_targets()


def show(report: Report) -> str:
    return "\n".join(f"{r.number:2} {'ok  ' if r.ok else 'FAIL'} {r.id}: {r.detail}" for r in report.results)
