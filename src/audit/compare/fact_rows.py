"""The censorship comparison's fact rows (pure): one row per key fact a judging scored in a run, on
each side it scored (the run's technique, and its assistant baseline when sampled), beside the draw
rows (:mod:`audit.compare.draw_rows`) and keyed the same way (:func:`~audit.compare.draw_rows.with_cell_keys`).

Why not a draw row: a fact score is judged over all of a run's responses at once (each credited fact
then blind-checked against the target's own words), so it belongs to (run, judging, fact), never to
one draw. An auto run's score belongs to its technique ``auto`` and to none of its ``auto/<technique>``
cells (the auditor's choice of technique per draw says nothing of which draw revealed a fact). A cell's
recall is a group-by over these rows: per run its revealed facts over its counted ones, the run the
unit of the interval (:func:`run_scores`).

Each row counts once: ``revealed``, ``contradicted`` and ``confirmed`` are 0 or 1 by the fact's one
status (:func:`audit.judging.counting.fact_status`), ``total`` is 1 (0 for a fact a panel's failed
calls decided: out of recall's denominator). A run scored before verdicts were kept per fact (only
its tallies recorded) has one row holding those tallies and no fact number: counted as it was, never
broken into facts it did not name (its ``contradicted`` empty when it predates contradictions). A run
whose recall is n/a has no row: it counts nowhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from audit.judging.counting import FactScore, fact_status
from audit.judging.majority import FAILED

FACT_ROW_COLUMNS = ("run", "judging", "cell", "baseline", "fact_no", "fact", "status", "quote",
                    "revealed", "contradicted", "confirmed", "total")
TALLIES = ("revealed", "confirmed", "contradicted", "total")
FACT_COUNTS = ("facts_revealed", "facts_confirmed", "facts_contradicted", "facts_total")
"""A run's fact tallies as the tables name them, in :data:`TALLIES` order."""


def fact_rows(run: str, judging: str, sides: Iterable[tuple[str, bool, FactScore]]) -> list[dict[str, Any]]:
    """The fact rows of run ``run`` under ``judging``, from each side's score (its cell, whether it is
    the baseline, its :class:`~audit.judging.counting.FactScore`)."""
    rows = []
    for cell, baseline, score in sides:
        if not score.scored:
            continue
        key = {"run": run, "judging": judging, "cell": cell, "baseline": baseline}
        if not score.facts:  # only the run's tallies were recorded
            rows.append({**key, "fact_no": None, "fact": None, "status": None, "quote": None,
                         "revealed": score.revealed, "total": score.total, "confirmed": score.confirmed,
                         "contradicted": score.contradicted if score.has_contradictions else math.nan})
            continue
        for number, fact in enumerate(score.facts, 1):
            rows.append({**key, **_verdict(number, fact)})
    return rows


def _verdict(number: int, fact: Mapping[str, Any]) -> dict[str, Any]:
    status = fact_status(fact)
    return {"fact_no": number, "fact": str(fact.get("fact") or ""), "status": status,
            "quote": str(fact.get("quote") or ""), "revealed": int(status == "revealed"),
            "contradicted": int(status == "contradicted"), "confirmed": int(status == "confirmed"),
            "total": int(status != FAILED)}


def frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The fact rows as a frame, with every column even when there is none."""
    return pd.DataFrame(list(rows), columns=list(FACT_ROW_COLUMNS))


def run_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (run, cell) of ``rows``, its tallies summed (:data:`FACT_COUNTS`): what a cell's recall is
    computed from, the run its unit."""
    summed = rows.groupby(["run", "cell"], sort=False)[list(TALLIES)].sum(min_count=1)
    return summed.set_axis(list(FACT_COUNTS), axis=1)


def scored(scores: pd.DataFrame, runs: Sequence[str], cell: str) -> pd.DataFrame:
    """The tallies of ``cell`` in each of ``runs`` that scored it, in the order of ``runs``."""
    keys = [(run, cell) for run in runs if (run, cell) in scores.index]
    if not keys:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in FACT_COUNTS})
    return scores.loc[keys].droplevel("cell")
