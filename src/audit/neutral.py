"""Text from servers and models made harmless where it lands: other models' prompts, terminals and pages.

Model and server text is untrusted. An escape sequence printed to a terminal can retitle the window,
clear the screen or move the cursor; a bidi control makes a page show text in another order than it
was written. And a text can hide what it spells: a zero-width space, a variation selector or a bidi
mark between two characters is invisible, and a fullwidth ``＜`` reads as ``<``, so a marker, a key or
a formula written with them is the same thing to a reader yet escapes a plain string search.
:func:`visible` is the one view such searches look in (the fence's markers, the redactor's keys, the
CSV writer's formula check). One function for each landing place.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Any

# ANSI escape sequences: CSI (colours, cursor moves), OSC (window titles, hyperlinks; ended
# by BEL or ST) and the two-byte forms.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def terminal_text(text: str) -> str:
    """``text`` without escape sequences and control/format characters (C0, C1, DEL, bidi
    overrides); whitespace is kept for the caller to flatten."""
    text = _ANSI.sub("", text)
    return "".join(ch for ch in text if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf"))


_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Bidirectional controls: an override (U+202E) makes a page show text in another order than it
was written (a reply that reads as a refusal, a file name whose extension is reversed)."""


def page_value(value: Any) -> Any:
    """A value as a page shows it (jinja's ``finalize``, before autoescaping): bidi controls become a
    visible ``[U+202E]``, so the text reads in the order it was written and the control is still seen.
    Safe markup (the page's own, e.g. inline SVG) stays markup."""
    if not isinstance(value, str) or not _BIDI.search(value):
        return value
    shown = _BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", value)
    return type(value)(shown) if hasattr(value, "__html__") else shown


_DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                      (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                      (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                      (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
"""Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt): characters a renderer shows
as nothing. Besides the format characters (category Cf: zero-width space and joiners, word joiner, soft
hyphen, BOM, bidi marks, embeddings and isolates) they hold the variation selectors (VS16 is a
combining mark, not Cf), the combining grapheme joiner and the Hangul fillers."""


@cache
def invisible() -> dict[int, None]:
    """Every invisible character (format characters and :data:`_DEFAULT_IGNORABLE`), as a
    ``str.translate`` table that deletes them."""
    planes = [*range(0x20000), *range(0xE0000, 0xF0000)]  # Cf characters live in planes 0, 1 and 14
    codes = {code for code in planes if unicodedata.category(chr(code)) == "Cf"}
    codes.update(code for first, last in _DEFAULT_IGNORABLE for code in range(first, last + 1))
    return dict.fromkeys(codes)


def visible(text: str) -> str:
    """``text`` as a reader takes it: compatibility forms folded (NFKC: fullwidth ``＜`` is ``<``, ``ｓｋ`` is
    ``sk``) and every invisible character removed. Searches for something a hostile text must not
    spell (a fence marker, a key, a formula) look here, not in the raw text."""
    return unicodedata.normalize("NFKC", text).translate(invisible())


def visible_with_origins(text: str) -> tuple[str, list[tuple[int, int]]]:
    """:func:`visible` with, for each of its characters, the span of ``text`` it came from, so what a
    search finds there can be changed in the original (only there: the rest stays as written)."""
    dropped = invisible()
    chars: list[str] = []
    origins: list[tuple[int, int]] = []
    for at, original in enumerate(text):
        for ch in unicodedata.normalize("NFKC", original):
            if ord(ch) not in dropped:
                chars.append(ch)
                origins.append((at, at + 1))
    return "".join(chars), origins
