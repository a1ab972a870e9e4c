"""Intervals and resampling, in one place (pure: no I/O).

Every rate the project publishes is a share ``k/n`` with a 95% interval. Which interval
depends on what the independent unit is:

* :func:`wilson` treats the ``n`` items as independent draws. That holds for epistemic cards
  (each card is answered in its own call) and is what ``metrics.json`` reports.
* :func:`cluster_rate` treats the **run** as the unit. The responses of one censorship audit
  are not independent (the auditor adapts each probe to the last answer) and repeats of a
  cell are separate runs, so counting every response as an independent draw would make the
  interval too narrow. The point estimate is the pooled share ``sum(k) / sum(n)``; the interval
  is the 2.5-97.5 percentile of that pooled share over ``REPS`` bootstrap resamples that draw
  whole runs with replacement (a cluster bootstrap), seeded so the same runs always give the
  same numbers. With a single run there is no between-run spread to resample: the interval
  falls back to Wilson over that run's items and says so in ``method``.
* :func:`paired_difference` is the knows-vs-says gap: in each run the technique and the
  assistant baseline answered the same probes, so the run's two shares form a pair and the
  bootstrap resamples pairs (runs), keeping each run's two arms together.
* :func:`unpaired_difference` compares two separate sets of runs (for example the fact recall
  of user-persona runs against that of assistant-technique runs): each set is resampled on its
  own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Z_95 = 1.959963984540054
REPS = 2000
SEED = 20260101
CLUSTER_METHOD = f"cluster bootstrap over runs ({REPS} resamples, seed {SEED}, percentile 95%)"
WILSON_METHOD = "Wilson 95% over items (a single run: no between-run spread to resample)"
# Colours for series (Okabe-Ito: distinguishable with colour-vision deficiencies); every chart uses these.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def wilson(k: int, n: int, z: float = Z_95) -> dict[str, Any] | None:
    """k/n with its Wilson score interval; None when n == 0 (the rate is undefined)."""
    if n == 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At k == 0 and k == n the bounds are exactly 0 and 1; set them so rounding cannot show 0.9999.
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return {"value": p, "lo": lo, "hi": hi, "k": k, "n": n}


def _arrays(ks: Sequence[float], ns: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Counts of the runs that counted anything (a run with n == 0 carries no evidence)."""
    k, n = np.asarray(ks, dtype=float), np.asarray(ns, dtype=float)
    keep = ~(np.isnan(k) | np.isnan(n)) & (n > 0)
    return k[keep], n[keep]


def _resampled_shares(k: np.ndarray, n: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The pooled share of REPS resamples of whole runs (rows of k and n) with replacement."""
    picks = rng.integers(0, len(k), size=(REPS, len(k)))
    return k[picks].sum(axis=1) / n[picks].sum(axis=1)


def _percentiles(samples: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return float(lo), float(hi)


def spread(ks: Sequence[float], ns: Sequence[float]) -> tuple[float, float] | None:
    """Lowest and highest per-run share: how much repeats of one cell disagree."""
    k, n = _arrays(ks, ns)
    if not len(k):
        return None
    shares = k / n
    return float(shares.min()), float(shares.max())


def cluster_rate(ks: Sequence[float], ns: Sequence[float]) -> dict[str, Any] | None:
    """Pooled share of several runs with a run-level 95% interval (see the module docs).

    Returns ``{"value", "lo", "hi", "k", "n", "runs", "method", "spread"}``, or None when no run
    counted anything (an undefined share is not 0).
    """
    k, n = _arrays(ks, ns)
    if not len(k):
        return None
    base = {"k": int(k.sum()), "n": int(n.sum()), "runs": len(k), "spread": spread(k, n)}
    if len(k) == 1:
        interval = wilson(int(k[0]), int(n[0]))
        assert interval is not None  # n > 0 by _arrays
        return {**interval, **base, "method": WILSON_METHOD}
    lo, hi = _percentiles(_resampled_shares(k, n, np.random.default_rng(SEED)))
    return {"value": float(k.sum() / n.sum()), "lo": lo, "hi": hi, **base, "method": CLUSTER_METHOD}


def paired_difference(a_ks: Sequence[float], a_ns: Sequence[float],
                      b_ks: Sequence[float], b_ns: Sequence[float]) -> dict[str, Any] | None:
    """Pooled share of arm a minus that of arm b, where position i of every list is one run that
    sampled both arms on the same probes; the interval resamples runs (pairs) together.

    A run counts only if both its arms counted something. None when no run does.
    """
    arrays = [np.asarray(x, dtype=float) for x in (a_ks, a_ns, b_ks, b_ns)]
    if len({len(x) for x in arrays}) != 1:
        raise ValueError("paired_difference: the four lists must have one entry per run")
    ak, an, bk, bn = arrays
    keep = ~np.isnan(arrays).any(axis=0) & (an > 0) & (bn > 0)
    ak, an, bk, bn = ak[keep], an[keep], bk[keep], bn[keep]
    if not len(ak):
        return None
    value = float(ak.sum() / an.sum() - bk.sum() / bn.sum())
    base = {"value": value, "runs": len(ak), "n_a": int(an.sum()), "n_b": int(bn.sum())}
    if len(ak) == 1:
        return {**base, "lo": math.nan, "hi": math.nan, "method": "a single run: no interval for the difference"}
    picks = np.random.default_rng(SEED).integers(0, len(ak), size=(REPS, len(ak)))
    diffs = ak[picks].sum(axis=1) / an[picks].sum(axis=1) - bk[picks].sum(axis=1) / bn[picks].sum(axis=1)
    lo, hi = _percentiles(diffs)
    return {**base, "lo": lo, "hi": hi, "method": f"paired {CLUSTER_METHOD}"}


def unpaired_difference(a_ks: Sequence[float], a_ns: Sequence[float],
                        b_ks: Sequence[float], b_ns: Sequence[float]) -> dict[str, Any] | None:
    """Pooled share of the runs of a minus that of the runs of b (separate runs); each set is
    resampled on its own. None unless both sets counted something; no interval unless both
    have at least two runs."""
    ak, an = _arrays(a_ks, a_ns)
    bk, bn = _arrays(b_ks, b_ns)
    if not len(ak) or not len(bk):
        return None
    value = float(ak.sum() / an.sum() - bk.sum() / bn.sum())
    base = {"value": value, "runs": len(ak) + len(bk), "n_a": int(an.sum()), "n_b": int(bn.sum())}
    if len(ak) < 2 or len(bk) < 2:
        return {**base, "lo": math.nan, "hi": math.nan, "method": "fewer than two runs per arm: no interval"}
    rng = np.random.default_rng(SEED)
    lo, hi = _percentiles(_resampled_shares(ak, an, rng) - _resampled_shares(bk, bn, rng))
    return {**base, "lo": lo, "hi": hi, "method": f"unpaired {CLUSTER_METHOD}"}


CARD_METHOD = ("Wilson 95% over cards: each card's repeats averaged into one per-card mean, so repeats "
               "never add cards (identical repeats give the single-run interval)")


def card_rate(ks: Sequence[float], ns: Sequence[float], cards: Sequence[Any]) -> dict[str, Any] | None:
    """A share whose unit is the card, however many times each card was answered.

    Position i is one answering of a set of cards (one card's repeat, or one run over a card
    set): ``ks[i]`` numerator and ``ns[i]`` denominator hits, ``cards[i]`` which card (or card
    set) it answered. Answerings of the same card are averaged first (their mean k and mean n),
    then the means are summed over cards and given a Wilson interval: a card answered three
    times is one draw, not three, so repeats cannot shrink the interval, and repeats that agree
    give exactly the interval of one run. The per-card mean of a 0/1 outcome has variance at
    most p(1-p), so Wilson on the means does not under-cover (checked by simulation in
    tests/test_stats.py). Returns the :func:`wilson` fields (k and n may be fractional: sums of
    per-card means) plus ``cards``, ``answerings`` and ``method``; None when nothing counted.
    """
    if not (len(ks) == len(ns) == len(cards)):
        raise ValueError("card_rate: ks, ns and cards must have one entry per answering")
    sums: dict[Any, list[float]] = {}
    for k, n, card in zip(ks, ns, cards):
        if k is None or n is None or math.isnan(float(k)) or math.isnan(float(n)):
            continue
        entry = sums.setdefault(card, [0.0, 0.0, 0])
        entry[0] += float(k)
        entry[1] += float(n)
        entry[2] += 1
    k_mean = sum(k / r for k, _, r in sums.values())
    n_mean = sum(n / r for _, n, r in sums.values())
    if n_mean <= 0:
        return None
    # wilson's arithmetic holds for real k and n; whole sums are passed as ints so identical
    # repeats give exactly the single-run dict
    k_whole, n_whole = round(k_mean), round(n_mean)
    whole = abs(k_mean - k_whole) < 1e-9 and abs(n_mean - n_whole) < 1e-9
    interval = wilson(k_whole, n_whole) if whole else wilson(k_mean, n_mean)  # type: ignore[arg-type]
    assert interval is not None
    return {**interval, "cards": sum(1 for _, n, _ in sums.values() if n > 0),
            "answerings": sum(int(r) for _, _, r in sums.values()), "method": CARD_METHOD}
