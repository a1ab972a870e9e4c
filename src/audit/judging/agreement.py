"""Agreement between judgings of the same items (pure: no I/O).

A *judging* is one label per item (a response, or one fact verdict) from one judge, one panel
member, a rescore, or a researcher's own labels; ``None`` is a missing vote (a failed call, an
item that judge did not see).

* :func:`confusion`: the table of two judgings' labels, rows the first, columns the second.
* :func:`cohen_kappa`: Cohen's kappa of two judgings, over the items both labelled; kappa
  corrects the share of items on which they agree for the agreement their label frequencies
  would give by chance. :func:`per_label_kappa` is the same for one label against the rest.
* :func:`krippendorff_alpha`: Krippendorff's alpha (nominal) for a panel of any size, which
  uses every item with at least two votes, so missing votes need no special case.

Intervals (:func:`kappa_interval`, :func:`alpha_interval`): a 95% bootstrap interval. The
responses of one audit are not independent (the auditor adapts each probe to the last answer),
so when the items come from several runs the bootstrap resamples **runs**, keeping each run's
responses together; with a single run it resamples responses within it and says so (the
interval is then about that run's responses, not about another run). Both statistics are
functions of a table summed over items (the joint table for kappa, the coincidence matrix for
alpha), so a resample is a weighted sum of per-item tables: every resample is one matrix
product. The interval is the value ± Student's t (clusters − 1 df) times the bootstrap standard
error, inflated by ``sqrt(G / (G - 1))`` for ``G`` resampled clusters: the percentile interval
covered 0.74 at 3 runs and 0.83 at 5 (a few runs give a handful of distinct resamples) and
0.92-0.94 on one run's items; this one covers as ``COVERAGE_NOTE`` says. The coverage of the kappa
interval, and of the alpha interval for a panel, is measured by a seeded simulation in
``tests/judges/test_agreement.py``; ``COVERAGE_NOTE`` states the figures.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any
from collections.abc import Callable

import numpy as np

from audit.stats.intervals import t_975

Label = str | None
RESAMPLES = 2000
LOWEST = -1.0
"""Kappa and alpha are at least -1 (kappa can reach -1, alpha below it only in small samples: clip there)."""
OVER_RUNS = "runs"
OVER_RESPONSES = "responses"
METHODS = {
    OVER_RUNS: ("95% bootstrap interval over runs ({runs} runs, {n} items; a run's items resampled together): "
                "value ± t(runs − 1) × bootstrap standard error"),
    OVER_RESPONSES: ("95% bootstrap interval over the items of a single run ({n} items): "
                     "value ± t(items − 1) × bootstrap standard error"),
}
COVERAGE_NOTE = ("measured coverage of the 95% kappa interval (seeded simulation, tests/judges/test_agreement.py, "
                 "800 data sets each): 0.92-0.96 over 30-150 items of one run (0.92 when kappa is 0.9), "
                 "0.91 at 3 runs and 0.96 at 10 runs that differ in how well the judges agree; of the alpha "
                 "interval for a panel of three (400 data sets each): 0.92-0.97 over 30-150 items of one run "
                 "(alpha 0.25-0.90), 0.92 at 3 and 5 runs and 0.93 at 10 runs that differ in agreement")


def categories_of(*judgings: Sequence[Label], categories: Sequence[str] | None = None) -> list[str]:
    """The label set: ``categories`` (in its order) plus any other label seen, sorted; a label
    outside a given ``categories`` is kept rather than dropped, so nothing vanishes from a table."""
    seen = {v for judging in judgings for v in judging if v is not None}
    given = list(categories or [])
    return given + sorted(seen - set(given))


def _pairs(a: Sequence[Label], b: Sequence[Label]) -> list[int]:
    if len(a) != len(b):
        raise ValueError(f"two judgings of the same items must have the same length; got {len(a)} and {len(b)}")
    return [i for i, (x, y) in enumerate(zip(a, b)) if x is not None and y is not None]


def confusion(a: Sequence[Label], b: Sequence[Label], categories: Sequence[str] | None = None) -> dict[str, Any]:
    """``matrix[i][j]``: items the first judging labelled ``categories[i]`` and the second
    ``categories[j]``; ``n`` items labelled by both, ``missing`` items one of them did not label."""
    cats = categories_of(a, b, categories=categories)
    index = {c: k for k, c in enumerate(cats)}
    both = _pairs(a, b)
    matrix = np.zeros((len(cats), len(cats)), dtype=int)
    for i in both:
        matrix[index[a[i]], index[b[i]]] += 1
    return {"categories": cats, "matrix": matrix.tolist(), "n": len(both), "missing": len(a) - len(both)}


def kappa_from_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of joint tables ``(..., K, K)``; NaN where chance agreement is 1 (both
    judgings gave one and the same label to every item: kappa is undefined, not 1)."""
    n = tables.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(tables, axis1=-2, axis2=-1) / n
        chance = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / (n * n)
        return np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)


def cohen_kappa(a: Sequence[Label], b: Sequence[Label], categories: Sequence[str] | None = None) -> float:
    """Cohen's (unweighted) kappa over the items both judgings labelled; NaN when undefined."""
    table = np.asarray(confusion(a, b, categories)["matrix"], dtype=float)
    return float(kappa_from_tables(table)) if table.sum() else float("nan")


def _vote_counts(units: Sequence[Sequence[Label]], cats: list[str]) -> np.ndarray:
    """``(items, K)``: how many votes each item got for each label."""
    index = {c: k for k, c in enumerate(cats)}
    counts = np.zeros((len(units), len(cats)))
    for u, votes in enumerate(units):
        for vote in votes:
            if vote is not None:
                counts[u, index[vote]] += 1
    return counts


def coincidences(counts: np.ndarray) -> np.ndarray:
    """Each item's contribution to Krippendorff's coincidence matrix, ``(items, K, K)``: every
    ordered pair of its ``m`` votes, weighted ``1/(m - 1)``; an item with fewer than two votes is
    not pairable and contributes nothing."""
    m = counts.sum(axis=1)
    outer = counts[:, :, None] * counts[:, None, :] - np.einsum("uk,kl->ukl", counts, np.eye(counts.shape[1]))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((m >= 2)[:, None, None], outer / np.maximum(m - 1, 1)[:, None, None], 0.0)


def alpha_from_coincidences(matrices: np.ndarray) -> np.ndarray:
    """Krippendorff's nominal alpha ``1 - (n - 1) * disagreeing pairs / expected disagreeing pairs``
    from coincidence matrices ``(..., K, K)``; NaN when every pairable vote is one label."""
    n = matrices.sum(axis=(-2, -1))
    marginals = matrices.sum(axis=-1)
    observed_off = n - np.trace(matrices, axis1=-2, axis2=-1)
    expected_off = n * n - (marginals * marginals).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected_off > 0, 1 - (n - 1) * observed_off / expected_off, np.nan)


def krippendorff_alpha(units: Sequence[Sequence[Label]], categories: Sequence[str] | None = None) -> float:
    """Krippendorff's alpha (nominal) for ``units``: one sequence of votes per item (one per
    judge; ``None`` where a judge has no vote). NaN when undefined."""
    cats = categories_of(*units, categories=categories)
    matrix = coincidences(_vote_counts(units, cats)).sum(axis=0)
    return float(alpha_from_coincidences(matrix)) if matrix.sum() else float("nan")


PERFECT_NOTE = ("the judgings agree on all {n} {unit}: the bootstrap has no spread to measure, so the interval is "
                "one-sided: at least {lo:.2f} (the exact 95% upper bound on the share of disagreeing {unit}, "
                "1 − 0.05^(1/{n}), turned into {statistic} with the observed label shares), at most 1")


def _perfect(chance_disagreement: float, statistic: str) -> Callable[[int, str], dict[str, Any]]:
    """The one-sided bound of a statistic that is 1 in every resample (every item agrees): with
    ``n`` units and none disagreeing, the exact (Clopper-Pearson) 95% upper bound on the share of
    disagreeing units is ``1 − 0.05^(1/n)``; at that share of disagreement, and the observed chance
    disagreement, the statistic is ``1 − bound / chance_disagreement`` (kappa: 1 − (1 − po) / (1 − pe))."""
    def bound(n: int, unit: str) -> dict[str, Any]:
        upper = 1 - 0.05 ** (1 / n)
        lo = max(LOWEST, 1 - upper / chance_disagreement) if chance_disagreement > 0 else LOWEST
        units = "runs" if unit == OVER_RUNS else "items"
        return {"lo": float(lo), "hi": 1.0, "one_sided": True,
                "note": PERFECT_NOTE.format(n=n, unit=units, lo=lo, statistic=statistic)}
    return bound


def _no_bound(n: int, unit: str) -> dict[str, Any]:
    return {"note": f"the judgings agree on all {n} {'runs' if unit == OVER_RUNS else 'items'}: "
                    "the bootstrap has no spread to measure (perfect agreement)"}


def bootstrap(per_item: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], runs: Sequence[Hashable] | None,
              *, resamples: int = RESAMPLES, seed: int = 0,
              perfect: Callable[[int, str], dict[str, Any]] = _no_bound) -> dict[str, Any]:
    """Point value and 95% bootstrap-standard-error t interval of ``statistic(sum of per-item tables)``.

    ``per_item`` is ``(items, ...)``; ``runs`` names each item's run (None: one run). Several
    runs: the runs are resampled with replacement and each keeps all its items; one run: the
    items are. Resamples where the statistic is undefined are left out and counted. When every
    item agrees, every resample does too: ``perfect(units, unit)`` says what to report instead
    (kappa: a one-sided bound, :func:`_perfect`).
    """
    n = per_item.shape[0]
    run_ids = list(runs) if runs is not None else [0] * n
    if len(run_ids) != n:
        raise ValueError(f"one run name per item: {len(run_ids)} names for {n} items")
    groups = {r: k for k, r in enumerate(dict.fromkeys(run_ids))}
    unit = OVER_RUNS if len(groups) > 1 else OVER_RESPONSES
    cluster = np.array([groups[r] for r in run_ids]) if unit == OVER_RUNS else np.arange(n)
    size = int(cluster.max()) + 1 if n else 0
    value = float(statistic(per_item.sum(axis=0))) if n else float("nan")
    result = {"value": value, "lo": None, "hi": None, "n": n, "runs": len(groups) if n else 0, "unit": unit,
              "method": METHODS[unit].format(runs=len(groups), n=n), "resamples": resamples, "undefined_resamples": 0}
    if n < 2 or np.isnan(value):
        return result
    rng = np.random.default_rng(seed)
    draws = rng.integers(size, size=(resamples, size)) + size * np.arange(resamples)[:, None]
    weights = np.bincount(draws.ravel(), minlength=resamples * size).reshape(resamples, size)[:, cluster].astype(float)
    flat = per_item.reshape(n, -1)
    stats = statistic(np.einsum("bn,nk->bk", weights, flat).reshape((resamples, *per_item.shape[1:])))
    finite = stats[np.isfinite(stats)]
    if finite.size < 2:
        return {**result, "undefined_resamples": int(resamples - finite.size)}
    spread = float(np.std(finite, ddof=1))
    if spread == 0 and value == 1.0:  # perfect agreement: no resample can disagree, the bootstrap has nothing
        return {**result, "undefined_resamples": int(resamples - finite.size), **perfect(size, unit)}
    if spread == 0:  # e.g. one judging gave every item one label: kappa is 0 in every resample
        return {**result, "undefined_resamples": int(resamples - finite.size),
                "note": "every resample gives the same value (one judging uses a single label)"}
    half = t_975(size - 1) * spread * np.sqrt(size / (size - 1))
    lo, hi = max(value - half, LOWEST), min(value + half, 1.0)
    return {**result, "lo": float(lo), "hi": float(hi), "undefined_resamples": int(resamples - finite.size)}


def _pair_tables(a: Sequence[Label], b: Sequence[Label], cats: list[str]) -> tuple[np.ndarray, list[int]]:
    both = _pairs(a, b)
    index = {c: k for k, c in enumerate(cats)}
    tables = np.zeros((len(both), len(cats), len(cats)))
    for row, i in enumerate(both):
        tables[row, index[a[i]], index[b[i]]] = 1
    return tables, both


def kappa_interval(a: Sequence[Label], b: Sequence[Label], runs: Sequence[Hashable] | None = None, *,
                   categories: Sequence[str] | None = None, resamples: int = RESAMPLES,
                   seed: int = 0) -> dict[str, Any]:
    """Cohen's kappa of two judgings with its bootstrap interval (see :func:`bootstrap`), over the
    items both labelled; ``missing`` counts the items left out because one judging has no label."""
    cats = categories_of(a, b, categories=categories)
    tables, both = _pair_tables(a, b, cats)
    kept_runs = [runs[i] for i in both] if runs is not None else None
    total = tables.sum(axis=0)
    shares = total / total.sum() if total.sum() else total
    chance = 1 - float(shares.sum(axis=1) @ shares.sum(axis=0))  # 1 − pe
    result = bootstrap(tables, kappa_from_tables, kept_runs, resamples=resamples, seed=seed,
                       perfect=_perfect(chance, "kappa"))
    return {"statistic": "cohen_kappa", **result, "missing": len(a) - len(both)}


def per_label_kappa(a: Sequence[Label], b: Sequence[Label], runs: Sequence[Hashable] | None = None, *,
                    categories: Sequence[str] | None = None, resamples: int = RESAMPLES,
                    seed: int = 0) -> dict[str, dict[str, Any]]:
    """For each label, kappa of "this label or not" between the two judgings, with its interval:
    which labels the judgings agree on and which they confuse."""
    out = {}
    for label in categories_of(a, b, categories=categories):
        binary = [[None if v is None else str(v == label) for v in judging] for judging in (a, b)]
        out[label] = kappa_interval(*binary, runs, categories=["True", "False"], resamples=resamples, seed=seed)
    return out


def alpha_interval(units: Sequence[Sequence[Label]], runs: Sequence[Hashable] | None = None, *,
                   categories: Sequence[str] | None = None, resamples: int = RESAMPLES,
                   seed: int = 0) -> dict[str, Any]:
    """Krippendorff's nominal alpha of a panel with its bootstrap interval; ``n`` counts the
    pairable items (two votes or more), ``missing`` the items with fewer."""
    cats = categories_of(*units, categories=categories)
    counts = _vote_counts(units, cats)
    pairable = np.flatnonzero(counts.sum(axis=1) >= 2)
    kept_runs = [runs[i] for i in pairable] if runs is not None else None
    result = bootstrap(coincidences(counts[pairable]), alpha_from_coincidences, kept_runs,
                       resamples=resamples, seed=seed)
    return {"statistic": "krippendorff_alpha_nominal", **result, "missing": len(units) - len(pairable)}
