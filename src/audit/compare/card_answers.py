"""The epistemic matrix's rates from the answers themselves, card by card (pure: no I/O).

A run's ``metrics.json`` holds only its totals, and totals cannot tell a card answered three
times from three cards. With repeats (``samples=k``, or several runs over one card set) the
matrix rebuilds each rate from the per-answer table (:func:`audit.runs.tables.answer_rows`):
every answer's 0/1 part in each rate's numerator and denominator
(:func:`audit.epistemic.metrics.rate_counts` on that one answer), then the card-clustered
interval of :mod:`audit.stats.cards`. It does so only where those answers add up to exactly
what each run's ``metrics.json`` says (the same draws, counted once); elsewhere the cell keeps
the interval over per-card averaged totals (:func:`audit.stats.card_rate`).

A card is what it asks, not its id: ids are positions in a card set, so two card sets (another
``cards.seed`` or ``cards.num_per_type``) reuse them for other claims, and draw some of the same
claims under other ids (two seeds of geography/has_capital at the default size share 589 of 1,602;
docs/numbers.md). An answer's card is its suite, label and claim (:func:`card_identity`), so a claim
asked by two runs is one card answered twice, never two cards.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from typing import Any

import pandas as pd

from audit.stats.cards import clustered_card_rate
from audit.epistemic.metrics import PREDS, rate_counts
from audit.epistemic.rates import RATE_NAMES
from audit.record.answers import LABEL_OF_GOLD
from audit.stats.intervals import card_rate

KEYS = ("run", "system", "condition")
"""One row of the epistemic table: a run's answers of one system under one condition."""


@cache
def _indicators(gold: str, pred: str, mapping: str) -> tuple[tuple[int, int], ...]:
    """Each rate's (numerator, denominator) part for one answer; all 0 for a failed answer (it
    leaves every denominator) or a gold outside YES/NO/UNKNOWN."""
    table = {p: {x: 0 for x in ("E", "C", "U")} for p in PREDS}
    if pred in PREDS and gold in LABEL_OF_GOLD:
        table[pred][LABEL_OF_GOLD[gold]] = 1
    return tuple(rate_counts(table, mapping).values())


def answer_parts(answers: pd.DataFrame, epistemic: pd.DataFrame) -> dict[tuple[Any, ...], pd.DataFrame]:
    """Per row of ``epistemic`` (the compare table, which gives each row's mapping and card set; a
    :data:`KEYS` tuple), its answers: ``card`` (:func:`card_identity`) and ``<rate>_y`` / ``<rate>_x``
    for every rate."""
    mappings = {tuple(r[k] for k in KEYS): (r["mapping"] or "licensing", r["card_set"])
                for r in epistemic.to_dict("records")}
    rows = []
    for r in answers.to_dict("records"):
        found = mappings.get(tuple(r[k] for k in KEYS))
        if found is None:
            continue
        mapping, card_set = found
        parts = _indicators(str(r["gold"]), str(r["pred"]), str(mapping))
        row: dict[str, Any] = {**{k: r[k] for k in KEYS}, "card": card_identity(r, card_set)}
        for name, (y, x) in zip(RATE_NAMES, parts):
            row[f"{name}_y"], row[f"{name}_x"] = y, x
        rows.append(row)
    columns = [*KEYS, "card", *(f"{n}_{s}" for n in RATE_NAMES for s in ("y", "x"))]
    frame = pd.DataFrame(rows, columns=columns)
    return {tuple(key): group for key, group in frame.groupby(list(KEYS), sort=False)}


def card_identity(answer: Mapping[str, Any], card_set: str) -> tuple[str, ...]:
    """Which card an answer (an answers-table row) answered: its suite, label and claim, the same in
    every card set that drew that claim for that suite. A card whose claim is unknown (its cards file
    is missing) is its card set and id, which cannot match another set's cards."""
    claim = answer.get("claim")
    if isinstance(claim, str) and claim:
        return "claim", str(answer.get("suite")), str(answer.get("label")), claim
    return "id", card_set, str(answer["card"])


def _recounts(row: Mapping[str, Any], answers: pd.DataFrame, metrics: tuple[str, ...]) -> bool:
    """True when a run's answers add up to its metrics.json counts, every rate."""
    for m in metrics:
        # an undefined rate (null in metrics.json, NaN here) has nothing in its denominator
        expected = (0, 0) if math.isnan(row[f"{m}_n"]) else (row[f"{m}_k"], row[f"{m}_n"])
        if (answers[f"{m}_y"].sum(), answers[f"{m}_x"].sum()) != expected:
            return False
    return True


def cell_answers(cell: pd.DataFrame, parts: Mapping[tuple[Any, ...], pd.DataFrame] | None,
                 metrics: tuple[str, ...]) -> pd.DataFrame | None:
    """The answers of a matrix cell's counted runs (``parts``: :func:`answer_parts`) when some card
    was answered more than once and every run's answers recount its metrics.json; None otherwise
    (the per-run totals are used)."""
    if not parts or cell.empty:
        return None
    mine = []
    for row in cell.to_dict("records"):
        answers = parts.get(tuple(row[k] for k in KEYS))
        if answers is None or not _recounts(row, answers, metrics):
            return None
        mine.append(answers)
    every = pd.concat(mine, ignore_index=True)
    return every if every["card"].duplicated().any() else None


def cell_rate(cell: pd.DataFrame, answers: pd.DataFrame | None, metric: str) -> Mapping[str, Any] | None:
    """One metric of a matrix cell: card-clustered from ``answers`` (:func:`cell_answers`) when
    there are repeats, else over the runs' per-card averaged totals; ``cards`` is the number of
    distinct cards in the rate's denominator, ``answers`` the answers there (every repeat) and
    ``repeats`` the most answers of one card."""
    if answers is not None:
        return clustered_card_rate(list(answers[f"{metric}_y"]), list(answers[f"{metric}_x"]), list(answers["card"]))
    rate = card_rate(list(cell[f"{metric}_k"]), list(cell[f"{metric}_n"]), list(cell["card_set"]))
    if rate is None:
        return None
    sets = cell["card_set"].value_counts()
    return {**rate, "cards": rate["n"], "answers": float(cell[f"{metric}_n"].sum()), "repeats": int(sets.max()),
            "unit": "cards"}
