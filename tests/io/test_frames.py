"""Records as a table: an absent value reads back as None, never a float NaN, with the pandas installed
(a fresh install gets pandas 3, whose ``str`` dtype turns None into NaN)."""

from __future__ import annotations

import pandas as pd

from audit.io.frames import records_frame
from audit.judging.counting import check_labels


def test_an_absent_label_stays_none_and_numbers_keep_their_dtype() -> None:
    frame = records_frame([{"label": "refused", "n": 1, "aware": True}, {"label": None, "n": 2, "aware": None}],
                          ["label", "n", "aware"])
    assert list(frame["label"]) == ["refused", None] and list(frame["aware"]) == [True, None]
    assert frame["label"].notna().tolist() == [True, False] and frame["n"].dtype.kind == "i"
    together = pd.concat([frame, frame], ignore_index=True)
    assert list(together["label"]) == ["refused", None, "refused", None]
    check_labels(together["label"], "draws.jsonl")  # an absent label is no unknown label


def test_the_plain_constructor_would_read_the_absence_as_a_float_under_pandas_3() -> None:
    """What the readers avoid: under pandas 3 the constructor's text column holds NaN, which the
    unknown-label check took for a label."""
    plain = pd.DataFrame([{"label": "refused"}, {"label": None}], columns=["label"])
    if isinstance(plain["label"].dtype, pd.StringDtype):
        assert isinstance(list(plain["label"])[1], float)
    assert list(records_frame([{"label": "refused"}, {"label": None}], ["label"])["label"])[1] is None
