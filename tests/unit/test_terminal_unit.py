"""imdbox.terminal: what box prints of the box's text is never a control sequence."""

from __future__ import annotations

import pytest

from imdbox.terminal import safe, safe_stream
from tests.harness.hostile_text import CONTROL, HOSTILE


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_no_control_character_survives_and_each_is_shown(text):
    shown = safe(text)
    assert not CONTROL.search(shown), repr(shown)
    assert len(shown) > len(text)  # every one is there, as an escape
    # The breaking twin: the text itself is what a terminal would act on.
    assert CONTROL.search(text)


def test_escapes_are_readable():
    assert safe("\x1b[2J") == "\\x1b[2J"
    assert safe("\x9b") == "\\x9b"
    assert safe("a\u202eb") == "a\\u202eb"


def test_newlines_tabs_and_the_worlds_letters_stay():
    text = "line one\n\tindented: café, 日本語, emoji 🚀\n"
    assert safe(text) == text


def test_a_stream_keeps_characters_split_across_chunks_and_shows_bad_bytes():
    data = "é🚀\x1b[2J\n".encode()
    chunks = [data[i : i + 1] for i in range(len(data))] + [b"\xff\xfe end\n"]
    assert b"".join(safe_stream(chunks)).decode() == "é🚀\\x1b[2J\n\\xff\\xfe end\n"
