"""Records read back as a pandas table in which an absent value stays ``None``.

A failed judgment is stored as ``null`` (no label, no verdict, no fact status). pandas 3 infers a
column of strings as its ``str`` dtype, whose missing value is the float NaN: a null label then reads
back as a float, passes every ``is None`` test, and a reader that treats it as text (the unknown-label
check's ``difflib``) crashes; pandas 2 kept ``None`` in an object column. Every reader that turns run
records into a table builds it here, so a reader sees the same values under both: text columns are
object columns whose absence is ``None`` (``isna``/``notna`` still find it), numbers keep their dtype.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd


def records_frame(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """``rows`` as a frame with ``columns``; a text column keeps ``None`` where a value is absent."""
    frame = pd.DataFrame(list(rows), columns=list(columns))
    for name in frame.columns:
        column = frame[name]
        if isinstance(column.dtype, pd.StringDtype):
            frame[name] = pd.Series(column.astype(object).where(column.notna(), None), index=frame.index,
                                    dtype=object)
    return frame
