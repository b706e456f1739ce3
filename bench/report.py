"""The bench's results: rows with samples and goals, the markdown table, the machine line."""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

GB = 1000**3
MB = 1000**2


# --------------------------------------------------------------------------- results
@dataclass
class Row:
    metric: str
    samples: list[float] = field(default_factory=list)
    goal: Optional[float] = None  # seconds
    note: str = ""
    skipped: Optional[str] = None
    value_text: Optional[str] = None  # for non-timing rows (size)
    met: Optional[bool] = None
    parts_ms: dict[str, list[int]] = field(default_factory=dict)  # a whole's parts, each its runs (the check's lines)

    def cells(self) -> list[str]:
        if self.skipped:
            return [self.metric, "-", f"skipped: {self.skipped}", "-", self._goal(), "-", self.note]
        if self.value_text is not None:
            return [self.metric, "1", self.value_text, "-", self._goal(), self._met(), self.note]
        med = statistics.median(self.samples)
        if self.met is None and self.goal is not None:
            self.met = med <= self.goal
        spread = f"{fmt_s(min(self.samples))} – {fmt_s(max(self.samples))}" if len(self.samples) > 1 else "-"
        return [self.metric, str(len(self.samples)), fmt_s(med), spread, self._goal(), self._met(), self.note]

    def _goal(self) -> str:
        if self.goal is None:
            return "-"
        return f"≤ {self.goal / GB:.1f} GB" if self.value_text is not None else f"≤ {fmt_s(self.goal)}"

    def _met(self) -> str:
        return "-" if self.met is None else ("yes" if self.met else "NO")

    def as_json(self) -> dict:
        return {
            "metric": self.metric,
            "samples_s": self.samples,
            "median_s": statistics.median(self.samples) if self.samples else None,
            "goal": self.goal,
            "met": self.met,
            "skipped": self.skipped,
            "value": self.value_text,
            "note": self.note,
            **({"parts_ms": self.parts_ms} if self.parts_ms else {}),
        }


def fmt_s(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 100:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def table(headers: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def layer_step(entry: dict) -> str:
    """A history entry's Dockerfile step, short: `RUN apt-get …`, `COPY … /opt/`, or the base image."""
    text = " ".join((entry.get("CreatedBy") or "").split())
    if not text:
        return "(base image)"
    if "#(nop) " in text:
        step = text.split("#(nop) ", 1)[1]
        step = re.sub(r"^(COPY|ADD) (dir|file|multi):[0-9a-f]+ in ", r"\1 → ", step)
    else:
        text = re.sub(r"^\|\d+ (\S+=\S* )*", "", text)  # the build args the step saw
        step = "RUN " + re.sub(r"^/bin/(ba)?sh (-o pipefail )?-c ", "", text)
    return step if len(step) <= 100 else step[:99] + "…"


# --------------------------------------------------------------------------- the machine
def machine(client) -> str:
    info = client.info()
    cpu = platform.processor() or platform.machine()
    try:
        if sys.platform == "darwin":
            cpu = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            ).stdout.strip()
        else:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except (OSError, subprocess.SubprocessError):
        pass
    return (
        f"{platform.system()} {platform.release()} ({platform.machine()}), {cpu}, {os.cpu_count()} host cores; "
        f"Docker {info.get('ServerVersion')} on {info.get('OperatingSystem')} "
        f"({info.get('NCPU')} CPUs, {info.get('MemTotal', 0) / 1024**3:.1f} GiB for Docker, "
        f"storage {info.get('Driver')}); Python {platform.python_version()}"
    )
