"""What box prints on the Mac's terminal: text that came from the box made safe to show.

Everything a box prints (its log, the worker's doctor, errors, install output, a seat's
columns) is the attacker's text: a job or the volume's owner can put terminal control
sequences in it. A terminal acts on those: OSC 52 writes the clipboard, OSC 8 hides a
link, OSC 0 retitles the window, CSI 2J clears the screen, and bidirectional overrides
reorder what a line seems to say. `safe()` shows each such character as an escape
(`\\x1b`, `\\u202e`), so the rest of its sequence is plain text; newlines and tabs stay.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator

# C0 but tab and newline, DEL, C1 (ESC's 8-bit forms: CSI, OSC, DCS, SOS, PM, APC among
# them), and the characters that change a line's direction (ALM, LRM, RLM, the embeddings,
# overrides and isolates) or break it (the line and paragraph separators).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}"


def safe(text: str) -> str:
    """`text` with every character a terminal would act on shown as an escape."""
    return _UNSAFE.sub(_escape, text)


def safe_stream(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """A byte stream (a box's log) as safe UTF-8: a character split across chunks is kept
    whole, and a byte that is not UTF-8 is shown as `\\xNN`, never dropped."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace")
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield safe(text).encode()
    rest = decoder.decode(b"", final=True)
    if rest:
        yield safe(rest).encode()
