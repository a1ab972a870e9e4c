"""The one CSV writer: every table the tool writes (a run's ``responses.csv``/``facts.csv``, the
comparison's and the judge check's tables, ``rescore``'s agreement) goes through :func:`csv_text`.

Model and server text fills these cells, and a CSV is opened in a spreadsheet. A cell that starts
with ``=``, ``+``, ``-`` or ``@`` (or a tab or carriage return, which some spreadsheets skip before
reading the formula) is evaluated as a formula: ``=HYPERLINK("http://...")`` sends the reader to the
writer's site, ``=WEBSERVICE(...)`` sends data there. A spreadsheet also skips leading spaces, and a
zero-width space or a fullwidth ``＝`` hides the start from a plain check, so the check looks at
:func:`audit.neutral.visible` with leading white space removed. Such a cell is written with a leading
``'`` (shown as text, never evaluated); a plain number (``-0.25``, also as text) is data and stays as
it is. Control characters other than tab and line breaks (ESC, which starts a terminal escape when the
file is ``cat``-ed; BEL; C1 controls) and bidi controls (which reorder what a cell shows) are written as
a visible ``[U+001B]``, as pages show bidi controls; a carriage return that ends no line (``\r`` without
``\n``) becomes a line feed: the CSV module leaves a cell holding only a bare one unquoted, and a
spreadsheet starts a new row there (the rest of the cell read as a cell of its own, formula check
passed). Parquet files keep the text as it was written.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audit.io.atomic import write_text
from audit.neutral import invisible, visible

if TYPE_CHECKING:
    import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 controls but tab, line feed and carriage return (quoted, they are a cell's own lines), DEL, C1
controls, and the bidi controls."""
_BARE_CR = re.compile(r"\r(?!\n)")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell may hold it: controls shown as ``[U+XXXX]``, and a text a spreadsheet would
    read as a formula prefixed by ``'``. Numbers (and text that is a plain number) stay as they are."""
    if not isinstance(value, str):
        return value
    text = _BARE_CR.sub("\n", _CONTROL.sub(lambda m: f"[U+{ord(m.group()):04X}]", value))
    return "'" + text if _formula(text) and not _NUMBER.fullmatch(text) else text


def _formula(text: str) -> bool:
    """Whether a spreadsheet reads ``text`` as a formula: its first character that is neither white space
    nor invisible, as :func:`audit.neutral.visible` reads it, starts one (or a tab or carriage return
    stands before it)."""
    hidden = invisible()
    for ch in text:
        if ch in "\t\r":
            return True
        if not ch.isspace() and ord(ch) not in hidden:
            return visible(ch).startswith(FORMULA_STARTS)
    return False


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` (no index) as CSV text, every cell passed through :func:`csv_cell`."""
    return frame.apply(lambda column: column.map(csv_cell)).to_csv(index=False)  # Series.map: DataFrame.map needs pandas 2.1


def write_csv(path: str | os.PathLike[str], frame: pd.DataFrame) -> Path:
    """Write ``frame`` to ``path`` as :func:`csv_text`, atomically (:func:`audit.io.atomic.write_text`)."""
    return write_text(path, csv_text(frame))
