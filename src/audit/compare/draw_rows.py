"""The censorship comparison's draw rows (pure): one row per saved target draw, with its comparison
cell (:attr:`audit.record.draws.Draw.cell`) and, per judging it was judged under, its label. Every
count a censorship table shows is a group-by over these rows (cell, then run: the run is the
unit of every interval), as the benchmark's cells are over its draw rows, so a rescore's labels
sit beside the original ones in the same rows and a reader picks a judging by its name.

A draw a judging did not judge (no text to judge, or a judging that skipped it) has no label under
it and is not counted there; a judgment that failed counts as ``unclassified`` (it stays among the
responses and leaves every share's denominator: :mod:`audit.judging.counting`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from audit.judging.judge import UNCLASSIFIED
from audit.record.draws import Draw

DRAW_COLUMNS = ("run", "draw", "cell", "baseline", "auto", "outcome")
"""``outcome``: the draw's saved outcome (``answer``, or no answer to judge: ``empty``,
``reasoning_only``; '' for a draw saved before outcomes were), so a cell can count draws that are no
answer beside its labels."""
NOT_JUDGED = ""
"""The label column's value for a draw a judging did not judge (a failed judgment is ``unclassified``)."""


def label_column(judging: str) -> str:
    """The draw rows' column holding judging ``judging``'s labels."""
    return f"label:{judging}"


def draw_rows(run: str, draws: Iterable[Draw], judgings: Sequence[str]) -> list[dict[str, Any]]:
    """One row per draw of run ``run``, with a label column per judging name in ``judgings``."""
    return [{"run": run, "draw": d.key, "cell": d.cell, "baseline": d.is_baseline, "auto": d.auto,
             "outcome": str((d.model_extra or {}).get("outcome") or ""),
             **{label_column(name): _label(d, name) for name in judgings}} for d in draws]


def _label(draw: Draw, judging: str) -> str:
    judgment = draw.judgings.get(judging)
    if judgment is None:
        return NOT_JUDGED
    return judgment.label or UNCLASSIFIED


def judged(draws: Iterable[Draw], judging: str) -> bool:
    """Whether any of ``draws`` carries a judgment under ``judging``."""
    return any(judging in d.judgings for d in draws)


def label_counts(rows: pd.DataFrame, judging: str) -> dict[str, int]:
    """Draws per label under ``judging`` (those it did not judge left out), sorted by label: the
    shape of a summary's ``classifications``, for :func:`audit.judging.counting.response_counts`."""
    if rows.empty:
        return {}
    labels = rows[label_column(judging)]
    return dict(sorted(Counter(str(v) for v in labels if v != NOT_JUDGED).items()))


def cell_counts(rows: pd.DataFrame, judging: str) -> dict[str, dict[str, int]]:
    """Per cell of ``rows`` (sorted), its draws per label under ``judging``."""
    if rows.empty:
        return {}
    return {str(cell): label_counts(group, judging) for cell, group in rows.groupby("cell", sort=True)}


CELL_KEYS = ("audited", "topic", "auditor", "settings")
"""What a draw's run adds to its cell (the run's row of the audits table; a baseline draw's settings
are its run's ``baseline_settings``)."""


def with_cell_keys(rows: pd.DataFrame, audits: pd.DataFrame) -> pd.DataFrame:
    """The draw rows of the runs in ``audits`` with each draw's whole cell key beside its ``cell``
    (its run's audited model, topic, auditor and the target settings its request carried)."""
    runs = audits.set_index("run")
    rows = rows[rows["run"].isin(runs.index)]
    keys = runs.loc[rows["run"]]
    baseline = rows["baseline"].astype(bool).to_numpy()
    added = {k: keys[k].to_numpy() for k in CELL_KEYS[:-1]}
    added["settings"] = [b if is_base else s for s, b, is_base in
                         zip(keys["settings"], keys["baseline_settings"], baseline)]
    labels = [c for c in rows.columns if c not in DRAW_COLUMNS]
    order = ["run", "audited", "topic", "cell", "auditor", "settings", "draw", "baseline", "auto", "outcome", *labels]
    return rows.assign(**added)[order]


def frame(rows: Sequence[Mapping[str, Any]], judgings: Sequence[str]) -> pd.DataFrame:
    """The draw rows as a frame, with every column even when there is no row."""
    return pd.DataFrame(list(rows), columns=[*DRAW_COLUMNS, *(label_column(n) for n in judgings)])
