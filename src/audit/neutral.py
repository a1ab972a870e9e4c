"""Text from servers and models made harmless where it lands: spreadsheet cells, terminals and pages.

Model and server text is untrusted. A CSV cell that starts with ``=``, ``+``, ``-`` or ``@``
(or a tab or carriage return, which some spreadsheets skip before reading the formula) is
evaluated as a formula when the file is opened (``=HYPERLINK(...)``, data exfiltration); an
escape sequence printed to a terminal can retitle the window, clear the screen or move the
cursor. One function for each, used by every CSV writer and every line printed.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

# ANSI escape sequences: CSI (colours, cursor moves), OSC (window titles, hyperlinks; ended
# by BEL or ST) and the two-byte forms.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def csv_cell(value: Any) -> Any:
    """``value``, with a text that a spreadsheet would read as a formula prefixed by ``'``
    (shown as text, the formula never runs). Numbers stay numbers: a negative number is data."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_frame(frame: Any) -> Any:
    """A copy of a pandas frame with every text cell passed through :func:`csv_cell`."""
    return frame.apply(lambda column: column.map(csv_cell))  # Series.map: DataFrame.map needs pandas 2.1


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
