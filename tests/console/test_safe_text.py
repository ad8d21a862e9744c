"""The one sanitiser: nothing that drives a terminal or reorders text survives it, the rest does."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from console.model.safe_text import PLACEHOLDERS, literal, sanitise, sanitise_lines

BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029}


def must_go(char: str) -> bool:
    """What a terminal or a reader could be fooled by: controls but tab, bidi, surrogates."""
    code = ord(char)
    category = unicodedata.category(char)
    return (category == "Cc" and char != "\t") or category == "Cs" or code in BIDI


def test_escape_sequences_show_as_symbols_not_as_commands() -> None:
    assert sanitise("\x1b]0;owned\x07") == "␛]0;owned␇"
    assert sanitise("\x1b[2J\x1b[31mred") == "␛[2J␛[31mred"
    assert sanitise("a\rb\nc\x00d\x7f") == "a␍b␊c␀d␡"
    assert sanitise("\x9b6n \x85") == "<U+009B>6n <U+0085>"


def test_tab_and_ordinary_text_of_any_script_stay_as_they_are() -> None:
    text = "B1_sharegpt\tgen 7.4K tok/s · 数据集 · ÿ · emoji 👩‍💻 · [bold red]x[/]"
    assert sanitise(text) == text


def test_bidi_overrides_and_undecodable_bytes_are_made_visible() -> None:
    assert sanitise("abc\u202edcba") == "abc<U+202E>dcba"
    assert sanitise("file\u2066.txt\u2069") == "file<U+2066>.txt<U+2069>"
    undecodable = b"name-\xff\xfe".decode(errors="surrogateescape")
    assert sanitise(undecodable) == "name-\ufffd\ufffd"
    assert sanitise(undecodable).encode() == "name-��".encode()  # encodable now


def test_lines_keep_their_breaks_and_lose_their_escapes() -> None:
    assert sanitise_lines("one\x1b[1m\ntwo\r\n") == "one␛[1m\ntwo␍\n"


def test_literal_text_is_never_markup() -> None:
    text = literal("[bold red]x[/] [link=https://evil]y[/link]\x1b[5m", style="red")
    assert text.plain == "[bold red]x[/] [link=https://evil]y[/link]␛[5m"
    assert not text.spans
    assert str(text.style) == "red"


@given(st.text(alphabet=st.characters(exclude_categories=(), max_codepoint=0x2FFFF)))
def test_nothing_unsafe_survives_and_a_second_pass_changes_nothing(text: str) -> None:
    shown = sanitise(text)
    assert not any(must_go(char) for char in shown)
    assert sanitise(shown) == shown
    shown.encode()  # no lone surrogate left: every terminal encoding can take it


@given(st.text())
def test_every_safe_character_is_kept_in_place(text: str) -> None:
    shown = sanitise(text)
    expected = "".join(PLACEHOLDERS.get(ord(char), char) for char in text)
    assert shown == expected
    assert all(PLACEHOLDERS[ord(char)] for char in text if must_go(char))
