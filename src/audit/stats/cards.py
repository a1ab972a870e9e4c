"""Card-clustered intervals for epistemic rates answered several times (pure: no I/O).

An epistemic cell asked more than once (``samples=k`` repeats, or several runs over one card set)
answers every card several times. The card is the unit: cards are what was sampled, and the
repeats of one card are nested in it (they share the card's difficulty, so they are not
independent draws). :func:`audit.stats.card_rate` averages each card's repeats and gives Wilson
over the cards, which is valid but ignores what the repeats tell: averaging a card's answers
removes part of its answer-to-answer noise, so the rate varies less than one run's would, and
that interval stays at the single-run width (issue 26 measured it 41-55% wider than needed).

Here each rate ``k/n`` is a ratio of per-card means: for card ``c`` answered ``r_c`` times,
``ȳ_c`` is the share of its answers in the numerator and ``x̄_c`` in the denominator (for LA
the denominator is fixed by the card's label; for AP or accuracy_at_coverage it depends on the
answer, which is why this is a ratio estimator and not a mean). The estimate is
``R = Σ ȳ_c / Σ x̄_c``; its variance is the linearised (delta-method) ratio variance over cards,
``m/(m−1) · Σ (ȳ_c − R x̄_c)² / (Σ x̄_c)²``. The interval is Wilson on the effective size
``R(1−R) / variance`` with Student's t on cards − 1 degrees of freedom (Korn & Graubard's
effective-size interval, with cards as the clusters), the effective size kept between two
bounds that hold whatever the cards are like:

* at least ``Σ x̄_c`` (the cards in the denominator): a card's mean answer varies at most as
  much as one 0/1 answer, so the rate never varies more than one run's. The interval shown is
  never wider than Wilson over those cards (the old interval, valid without estimating any
  spread), which is what identical repeats get;
* at most ``Σ_c Σ_r x_cr`` (every answer in the denominator): repeats of a card never vary
  less than independent answers would, so repeats never count for more than fresh cards.

Where the rarer side has fewer than :data:`RARE_CARD_EVENTS` (per-card averaged) events,
the estimated spread rests on a handful of cards and is not trusted: the cell keeps the old
interval over cards and says so. The coverage of both is measured in :mod:`audit.stats.coverage`
(``bench/bench_coverage.py``, ``tests/test_coverage_grid.py``): exactly where every card has one 0/1
outcome (repeats that are copies, or one answer per card), by seeded simulation elsewhere.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from audit.stats.intervals import Z_95, wilson_bounds, t_975

RARE_CARD_EVENTS = 8
"""Below this many (per-card averaged) events on the rarer side, the spread between cards is not
estimated (the coverage grid of :func:`audit.stats.coverage.card_grid` was measured with it)."""
CLUSTERED_METHOD = ("95% interval over cards, repeats nested in their card: Wilson on the effective number of "
                    "cards (delta-method ratio variance over per-card means, between the cards and the answers "
                    "in the denominator) with Student's t on cards − 1 degrees of freedom")
CARD_FALLBACK_METHOD = ("Wilson 95% over cards, each card's repeats averaged (fewer than {m} events on the rarer "
                        "side, where the spread between cards is not estimated, or repeats that agree too much to "
                        "narrow it)")


def card_cluster_bounds(y_mean: np.ndarray, x_mean: np.ndarray, x_total: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rate and card-clustered bounds for arrays of shape (..., cards): each card's mean
    numerator and denominator indicator over its repeats and its count of answers in the
    denominator. Every card counted must have been answered at least once; the last array is
    True where the interval over cards was kept (a rare side, or repeats that did not narrow it:
    identical repeats give exactly the single-run interval). Vectorised so the coverage
    simulation measures this very code."""
    cards_in = (x_mean > 0).sum(axis=-1)
    k, n = y_mean.sum(axis=-1), x_mean.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, k / np.where(n > 0, n, 1), np.nan)
        residual = y_mean - np.nan_to_num(rate)[..., None] * x_mean
        cards = y_mean.shape[-1]
        variance = cards / max(cards - 1, 1) * (residual ** 2).sum(axis=-1) / np.where(n > 0, n, 1) ** 2
        binomial = rate * (1 - rate)
        effective = np.where(variance > 0, binomial / np.where(variance > 0, variance, 1), np.inf)
    effective = np.clip(effective, n, x_total.sum(axis=-1))
    rare = (np.minimum(k, n - k) < RARE_CARD_EVENTS) | (cards_in < 2)
    t = np.vectorize(lambda d: t_975(d) if d >= 1 else Z_95)(np.maximum(cards_in - 1, 0))
    p, size = np.nan_to_num(rate), np.where(n > 0, n, 1)
    old_lo, old_hi = wilson_bounds(p, size, Z_95)
    new_lo, new_hi = wilson_bounds(p, np.where(rare, size, effective), t)
    # never wider than the interval over cards, which holds without estimating the spread (see above)
    keep = rare | (new_hi - new_lo >= old_hi - old_lo)
    lo, hi = np.where(keep, old_lo, new_lo), np.where(keep, old_hi, new_hi)
    return rate, np.where(n > 0, lo, np.nan), np.where(n > 0, hi, np.nan), keep


def clustered_card_rate(ys: Sequence[float], xs: Sequence[float], cards: Sequence[Hashable]) -> dict[str, Any] | None:
    """A rate over cards answered one or more times, with the card-clustered interval.

    Position i is one answer: ``xs[i]`` 1 when it is in the rate's denominator, ``ys[i]`` 1 when
    in its numerator (0 and 0 for an answer outside the rate, an error included: it stays one of
    the card's answers), ``cards[i]`` which card it answered. Returns ``value``, ``lo``, ``hi``,
    ``k`` and ``n`` (per-card averaged, as :func:`audit.stats.card_rate`), ``cards`` (in the
    denominator), ``answers`` (in the denominator, over every repeat), ``repeats`` (most answers
    of one card), ``unit`` and ``method``; None when no answer is in the denominator."""
    if not (len(ys) == len(xs) == len(cards)):
        raise ValueError("clustered_card_rate: ys, xs and cards must have one entry per answer")
    sums: dict[Hashable, list[float]] = {}
    for y, x, card in zip(ys, xs, cards):
        entry = sums.setdefault(card, [0.0, 0.0, 0.0])
        entry[0] += float(y)
        entry[1] += float(x)
        entry[2] += 1
    table = np.asarray(list(sums.values()), dtype=float).reshape(-1, 3)
    if not len(table) or table[:, 1].sum() <= 0:
        return None
    y_mean, x_mean = table[:, 0] / table[:, 2], table[:, 1] / table[:, 2]
    rate, lo, hi, rare = card_cluster_bounds(y_mean, x_mean, table[:, 1])
    return {"value": float(rate), "lo": float(lo), "hi": float(hi), "k": float(y_mean.sum()),
            "n": float(x_mean.sum()), "cards": int((x_mean > 0).sum()), "answers": int(table[:, 1].sum()),
            "repeats": int(table[:, 2].max()), "unit": "cards",
            "method": CARD_FALLBACK_METHOD.format(m=RARE_CARD_EVENTS) if bool(rare) else CLUSTERED_METHOD}
