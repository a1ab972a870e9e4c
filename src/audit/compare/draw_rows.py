"""The censorship comparison's draw rows (pure): one row per saved target draw, with its comparison
cell (:attr:`audit.record.draws.Draw.cell`) and, per judging it was judged under, its label. Every
count a censorship table shows is a group-by over these rows (cell, then run: the run is the
unit of every interval), as the benchmark's cells are over its draw rows, so a rescore's labels
sit beside the original ones in the same rows and a reader picks a judging by its name.

A draw a judging did not judge (no text to judge, or a judging that skipped it) has no label under
it and is not counted there; a judgment that failed counts as ``unclassified`` (it stays among the
responses and leaves every share's denominator: :mod:`audit.judging.counting`).

A draw a judge panel labelled also carries, under that judging, each member's own label
(``label:<judging>:<member>``, the majority of its samples) and whether the panel's votes were
unanimous (``panel:<judging>``: ``unanimous`` or ``split``, :func:`audit.judging.panel_summary.unanimous`),
so a cell's panel split is a group-by over the same rows as its labels (:func:`panel_counts`), never
read from a run's ``judge_panel`` record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from audit.judging.judge import UNCLASSIFIED
from audit.judging.panel_summary import member_label, unanimous
from audit.record.draws import Draw

DRAW_COLUMNS = ("run", "draw", "cell", "baseline", "auto", "outcome")
"""``outcome``: the draw's saved outcome (``answer``, or no answer to judge: ``empty``,
``reasoning_only``; '' for a draw saved before outcomes were), so a cell can count draws that are no
answer beside its labels."""
NOT_JUDGED = ""
"""The label column's value for a draw a judging did not judge (a failed judgment is ``unclassified``)."""


UNANIMOUS, SPLIT = "unanimous", "split"
"""The panel column's values: every vote on the draw came back and agreed, or not."""


def label_column(judging: str) -> str:
    """The draw rows' column holding judging ``judging``'s labels."""
    return f"label:{judging}"


def panel_column(judging: str) -> str:
    """The draw rows' column saying whether judging ``judging``'s panel was unanimous on the draw."""
    return f"panel:{judging}"


def member_column(judging: str, member: str) -> str:
    """The draw rows' column holding one panel member's own labels under judging ``judging``."""
    return f"{label_column(judging)}:{member}"


def draw_rows(run: str, draws: Iterable[Draw], judgings: Sequence[str]) -> list[dict[str, Any]]:
    """One row per draw of run ``run``, with a label column per judging name in ``judgings`` (and, for
    a draw a panel labelled, the panel's columns: see the module docstring)."""
    return [{"run": run, "draw": d.key, "cell": d.cell, "baseline": d.is_baseline, "auto": d.auto,
             "outcome": str((d.model_extra or {}).get("outcome") or ""),
             **{k: v for name in judgings for k, v in _judged(d, name).items()}} for d in draws]


def _judged(draw: Draw, judging: str) -> dict[str, str]:
    """One draw's columns under one judging: its label, and a panel's agreement and members' labels."""
    judgment = draw.judgings.get(judging)
    if judgment is None:
        return {label_column(judging): NOT_JUDGED}
    out = {label_column(judging): judgment.label or UNCLASSIFIED}
    if judgment.panel:
        members = judgment.members or {}
        out[panel_column(judging)] = UNANIMOUS if unanimous([v for votes in members.values() for v in votes]) \
            else SPLIT
        out.update({member_column(judging, m): member_label(votes) or NOT_JUDGED for m, votes in members.items()})
    return out


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


def panel_counts(rows: pd.DataFrame, judging: str) -> tuple[int, int]:
    """``(draws a panel labelled under judging, those whose votes were split)`` of ``rows``: (0, 0)
    for a single judge."""
    column = panel_column(judging)
    if rows.empty or column not in rows.columns:
        return 0, 0
    agreed = rows[column]
    return int((agreed != NOT_JUDGED).sum()), int((agreed == SPLIT).sum())


def cell_panels(rows: pd.DataFrame, judging: str) -> dict[str, tuple[int, int]]:
    """Per cell of ``rows`` (sorted), its :func:`panel_counts` under ``judging``."""
    if rows.empty:
        return {}
    return {str(cell): panel_counts(group, judging) for cell, group in rows.groupby("cell", sort=True)}


CELL_KEYS = ("audited", "topic", "auditor", "settings")
"""What a draw's run adds to its cell (the run's row of the audits table; a baseline draw's settings
are its run's ``baseline_settings``)."""


def with_cell_keys(rows: pd.DataFrame, audits: pd.DataFrame) -> pd.DataFrame:
    """The rows (draw rows, or fact rows: :mod:`audit.compare.fact_rows`) of the runs in ``audits``
    with each row's whole cell key beside its ``cell`` (its run's audited model, topic, auditor and the
    target settings its requests carried): the one place a censorship row gets its cell key."""
    runs = audits.set_index("run")
    rows = rows[rows["run"].isin(runs.index)]
    keys = runs.loc[rows["run"]]
    baseline = rows["baseline"].astype(bool).to_numpy()
    added = {k: keys[k].to_numpy() for k in CELL_KEYS[:-1]}
    added["settings"] = [b if is_base else s for s, b, is_base in
                         zip(keys["settings"], keys["baseline_settings"], baseline)]
    order = ["run", "audited", "topic", "cell", "auditor", "settings"]
    return rows.assign(**added)[[*order, *(c for c in rows.columns if c not in order)]]


def frame(rows: Sequence[Mapping[str, Any]], judgings: Sequence[str]) -> pd.DataFrame:
    """The draw rows as a frame, with every column even when there is no row: per judging its label,
    then, when a panel labelled some draw, its agreement and its members' labels in order of
    appearance ('' on the rows of a draw that panel did not label)."""
    found = dict.fromkeys(k for row in rows for k in row)
    panels = {n: [c for c in (panel_column(n), *(k for k in found if k.startswith(label_column(n) + ":")))
                  if c in found] for n in judgings}
    columns = [*DRAW_COLUMNS, *(c for n in judgings for c in (label_column(n), *panels[n]))]
    return pd.DataFrame(list(rows), columns=columns).fillna({c: NOT_JUDGED for n in judgings for c in panels[n]})
