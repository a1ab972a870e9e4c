"""Intervals, in one place (pure: no I/O).

Every rate the project publishes is a share ``k/n`` with a 95% interval. Which interval
depends on what the independent unit is:

* :func:`wilson` treats the ``n`` items as independent draws. That holds for epistemic cards
  (each card is answered in its own call) and is what ``metrics.json`` reports.
* :func:`cluster_rate` treats the **run** as the unit. The responses of one censorship audit
  are not independent (the auditor adapts each probe to the last answer) and repeats of a
  cell are separate runs. The point estimate is the pooled share ``K/N = sum(k) / sum(n)``.
  The interval is a Wilson interval on the pooled responses with two corrections for having
  few runs (Korn & Graubard 1998's effective-sample-size Wilson interval for clustered data):

  - the bounds are continuity-corrected (Newcombe's method 4): with few effective responses the
    plain Wilson bound of a skewed rate fell short of the truth (coverage 0.915 at p 0.15, icc 0.3,
    20 runs of 2-40 responses);
  - the sample size is the *effective* one, ``N / deff``, where the design effect ``deff`` is
    the between-run variance of ``K/N`` (the ratio-estimator variance over runs,
    ``R/(R-1) * sum((k_i - p n_i)^2) / N^2``) over the binomial one ``p(1-p)/N``, floored at 1:
    runs that agree more than coin flips would never make the interval narrower than
    treating every response as independent, so identical runs never give a zero-width
    interval;
  - the critical value is Student's t with ``R - 1`` degrees of freedom, not 1.96: the
    between-run variance is estimated from only ``R`` runs. ``R`` is the effective number of
    runs, ``N^2 / sum(n_i^2)`` (Kish), which is ``R`` for runs of equal size and less when one run
    holds most responses (issue 26's grid under-covered with very unequal runs otherwise).
  - where the rarer side of the cell has fewer than ``RARE_EVENTS`` events, the interval is
    distribution-free instead (Hoeffding over the runs' shares, :func:`free_bounds`) and its
    ``method`` says so: a rare event in runs that differ hides in a few runs, and a cell that drew
    none of them looks homogeneous (the run-level interval covered 0.77-0.79 there).

  Why not the run-level bootstrap this replaced: at 2-5 runs a percentile bootstrap sees at
  most a handful of distinct resamples; in the simulation below it covered 49-52% at 2 runs
  per cell and 84-85% at 5, and had zero width whenever the runs agreed. The coverage of this method is measured by a
  seeded simulation in ``tests/test_stats.py`` (and printed by ``bench/bench_coverage.py``):
  ``COVERAGE_NOTE`` states the figures. With a single run there is no between-run spread to
  measure: the interval falls back to Wilson over that run's responses and says so in ``method``.
* :func:`question_rate` is the same interval with the **question** as the unit, for the fixed-question
  benchmark (``python -m audit.benchmark``): a question's rollouts (and its facts) are not
  independent (one question draws the same refusal again and again), so position i is one
  question, its counts summed over its rollouts. One change for that use: the degrees of freedom
  are at most the number of questions with an event on the rarer side, less one. Questions that
  differ concentrate a rare outcome in a few of them, and the spread between questions is then
  measured from those few (the question grid of :mod:`audit.stats.coverage`: QUESTION_COVERAGE_NOTE).
  Differences by question: paired (:func:`paired_difference`, ``cluster="question"``) as for runs,
  unpaired (censored minus control questions) by MOVER of the two sides' question-level intervals.
* :func:`paired_difference` is the knows-vs-says gap: in each run the technique and the
  assistant baseline answered the same probes, so the run's two shares form a pair. The
  difference of pooled shares gets a t interval from the per-run contributions to the difference
  (the linearised ratio variance), floored by the binomial variance of the two arms with one
  success and one failure added to each (Agresti-Caffo), so agreeing runs never give a zero-width
  interval. Two guards for a technique whose effect is rare or all-or-nothing per run (issue 37:
  effect in 22% of 3 runs, baseline 0.02, covered 0.53 without them), one rule with the cell's:

  - where not every run shows the difference (some run's own difference is 0 or of the other sign),
    the interval reaches as far as an effect in the runs that show none could move it
    (:func:`hidden_effect`): a technique that works completely in a share ``1 − 0.05^(1/R)`` of ``R``
    runs is missed by all of them 5% of the time, so the bounds reach at least ``d + h (1 − p_a)``
    and ``d − h p_a``. A difference every run shows keeps its t interval;
  - where either arm has fewer than ``RARE_EVENTS`` events on its rarer side, the interval is at
    least as wide as the unpaired one of the same runs (:func:`unpaired_bounds`: each arm's cell
    interval, distribution-free for the rare arm, combined by MOVER), and ``method`` says so: an
    effect that no drawn run shows leaves two rare arms that look alike, and only the arms' own
    rare-event intervals reach the effect that may hide in the runs not drawn.

  Chosen by the grid of :mod:`audit.stats.coverage` (:func:`audit.stats.coverage.effects`: baselines 0.02-0.5,
  a technique that acts in 10-100% of runs, by +0.2 or all-or-nothing, at 2-5 runs), where the t
  interval alone covered as little as 0.455, the rare-arm guard alone 0.764 (5 runs of 2-40,
  baseline 0.15, all-or-nothing in 22% of runs), the hidden-effect guard alone 0.856 (3 runs,
  baseline 0.15, 50%), and both together at least 0.934 (4,000 cells per case);
  ``COVERAGE_NOTE`` states the figures. A t interval whose degrees of freedom were
  capped at the runs showing the difference missed the benchmark's 5 questions (0.843) and was wider.
* :func:`unpaired_difference` compares two separate sets of runs (for example the fact recall
  of user-persona runs against that of assistant-technique runs): each arm gets the interval a
  cell of its runs would show, and the two are combined by MOVER (:func:`mover_bounds`), which
  keeps each arm's skew (a Welch t interval on the two variances covered 0.900 on issue 26's grid).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Z_95 = 1.959963984540054
# Student's t 0.975 quantiles for 1-30 degrees of freedom (standard table values; numpy has no
# t distribution and the project does not depend on scipy). Above 30, a Cornish-Fisher
# expansion around Z_95 is accurate to 1e-5.
_T_975 = (12.7062047, 4.3026527, 3.1824463, 2.7764451, 2.5705818, 2.4469119, 2.3646243, 2.3060041,
          2.2621572, 2.2281389, 2.2009852, 2.1788128, 2.1603687, 2.1447867, 2.1314495, 2.1199053,
          2.1098155, 2.1009220, 2.0930241, 2.0859634, 2.0796138, 2.0738731, 2.0686576, 2.0638986,
          2.0595386, 2.0555294, 2.0518305, 2.0484071, 2.0452296, 2.0422725)
QUESTION_METHOD = ("95% interval over questions (rollouts nested in them): Wilson (continuity-corrected) on the "
                   "pooled {items} with the effective sample size ({items} / design effect, estimated from the spread "
                   "between questions, at least 1) and Student's t with (effective questions, or fewer: those with an "
                   "event on the rarer side) − 1 degrees of freedom")
CLUSTER_METHOD = ("95% interval over runs: Wilson (continuity-corrected) on the pooled responses with the effective sample size "
                  "(responses / design effect, design effect estimated from the spread between runs, at least 1) "
                  "and Student's t with effective runs − 1 degrees of freedom (Kish: runs of unequal size count "
                  "as fewer)")
WILSON_METHOD = "a single run: Wilson 95% over its {items} (no spread between runs to measure)"
SINGLE_QUESTION_METHOD = ("a single question: Wilson 95% over its {items} (no spread between questions to measure; "
                          "its rollouts are not independent draws, so read it as too narrow)")
_DIFFERENCE = ("95% t interval over {clusters} ({clusters} − 1 degrees of freedom), variance from the spread between "
               "{clusters}, at least the binomial variance of the responses")
_NO_DIFFERENCE = "a single {cluster} on a side: no interval for the difference"
# What the seeded simulation (tests/test_stats.py, bench/bench_coverage.py) measured for CLUSTER_METHOD:
# share of 95% intervals that contain the true rate, over homogeneous runs, a rare event (p = 0.05) and
# runs whose rates differ (intraclass correlation 0.3), at 2, 3, 5 and 8 runs per cell.
COVERAGE_NOTE = ("measured coverage of the 95% intervals over a grid of simulated cells (bench/bench_coverage.py, "
                 "bench/coverage_grid.txt: rates 0.05-0.5, runs that differ up to intraclass correlation 0.5 and "
                 "all-or-nothing runs, 2-20 runs of 4-16 or 2-40 responses, 4,000 cells per case): a cell's share "
                 "at least 0.951 with runs of 4-16 responses and 0.938 with runs of 2-40 (both lowest at p = 0.15, "
                 "runs that differ, 20 runs); the paired gap at least 0.960, and 0.934 where the technique acts in only "
                 "10-100% of 2-5 runs, by +0.2 or all-or-nothing (issue 37's grid, 320 cases); the unpaired gap at least "
                 "0.966 (runs of 4-16) and 0.944 (runs of 2-40). Where the rarer side has fewer than 8 events the cell shows a "
                 "distribution-free interval and says so: the run-level interval alone covered as little as 0.77 there")
QUESTION_COVERAGE_NOTE = (
    "measured coverage of these 95% intervals over a grid of simulated cells (bench/bench_coverage.py "
    "--questions-only, bench/coverage_grid.txt: rates 0.05-0.5, questions that differ up to intraclass correlation "
    "0.5 and all-or-nothing questions, 5-95 questions of 1-10 rollouts, rates over draws or over 2-8 facts per "
    "draw, 2,000 cells per case): a cell's rate at least 0.949 over draws and 0.940 over facts (p = 0.15, icc 0.3, "
    "20 questions, 10 rollouts); the paired gaps at least 0.943, and 0.941 where the technique acts on only 10-100% of "
    "2-5 questions, by +0.2 or all-or-nothing (issue 37's grid, 960 cases); the censored − control gap at least 0.950")
# Colours for series (Okabe-Ito: distinguishable with colour-vision deficiencies); every chart uses these.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def t_975(df: float) -> float:
    """Student's t 0.975 quantile (two-sided 95%) for ``df`` >= 1 degrees of freedom; a
    fractional df is rounded down, which errs wide (:func:`t_975_fractional` interpolates instead)."""
    if df < 1 or math.isnan(df):
        raise ValueError(f"t_975: degrees of freedom must be at least 1, got {df}")
    whole = int(df)
    if whole <= len(_T_975):
        return _T_975[whole - 1]
    z = Z_95
    return (z + (z ** 3 + z) / (4 * whole) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * whole ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * whole ** 3))


def t_975_fractional(df: float) -> float:
    """Student's t 0.975 quantile for a fractional ``df`` >= 1 (an effective number of runs − 1),
    interpolated linearly in ``1 / df`` between the whole degrees of freedom around it. The
    quantile is convex in ``1 / df``, so the chord lies above it: the value errs wide, but by far
    less than rounding ``df`` down (which turned 2.7 effective runs into 1 degree of freedom, t 12.7,
    and made a 3-run interval nearly [0, 1]; issue 26)."""
    if df < 1 or math.isnan(df):
        raise ValueError(f"t_975_fractional: degrees of freedom must be at least 1, got {df}")
    low = int(df)
    if df == low:
        return t_975(low)
    weight = (1 / df - 1 / (low + 1)) / (1 / low - 1 / (low + 1))
    return weight * t_975(low) + (1 - weight) * t_975(low + 1)


def wilson_bounds(p: np.ndarray, n: np.ndarray, z: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score bounds for share ``p`` of ``n`` (possibly fractional: an effective size)."""
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At p == 0 and p == 1 the bounds are exactly 0 and 1; set them so rounding cannot show 0.9999.
    return np.where(p <= 0, 0.0, np.maximum(0.0, centre - half)), np.where(p >= 1, 1.0, np.minimum(1.0, centre + half))


def wilson_cc_bounds(p: np.ndarray, n: np.ndarray, z: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Continuity-corrected Wilson score bounds (Newcombe 1998, method 4) for share ``p`` of an
    effective size ``n``. The correction, about ``1 / (2 n)`` on each side, matters where the
    effective size is small, which is where runs differ most: a skewed rate (p 0.15) in runs that
    differ put the plain Wilson bound below the truth in 5-6% of cells with 12-20 runs (issue 26)."""
    z2 = z * z
    lo = (2 * n * p + z2 - 1 - z * np.sqrt(np.maximum(0.0, z2 - 2 - 1 / n + 4 * p * (n * (1 - p) + 1)))) / (2 * (n + z2))
    hi = (2 * n * p + z2 + 1 + z * np.sqrt(np.maximum(0.0, z2 + 2 - 1 / n + 4 * p * (n * (1 - p) - 1)))) / (2 * (n + z2))
    return np.where(p <= 0, 0.0, np.clip(lo, 0.0, p)), np.where(p >= 1, 1.0, np.clip(hi, p, 1.0))


def wilson(k: int, n: int, z: float = Z_95) -> dict[str, Any] | None:
    """k/n with its Wilson score interval; None when n == 0 (the rate is undefined)."""
    if n == 0:
        return None
    lo, hi = wilson_bounds(np.asarray(k / n), np.asarray(float(n)), z)
    return {"value": k / n, "lo": float(lo), "hi": float(hi), "k": k, "n": n}


def _between_run_variance(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pooled share ``K/N`` over the last axis (the runs) and its variance estimated from the
    spread between runs (the ratio estimator's linearised variance, with the R/(R-1) small-sample
    factor)."""
    runs = k.shape[-1]
    total = n.sum(axis=-1)
    p = k.sum(axis=-1) / total
    residual = (k - p[..., None] * n) / total[..., None]
    return p, runs / (runs - 1) * (residual ** 2).sum(axis=-1)


def run_level_bounds(k: np.ndarray, n: np.ndarray, event_clusters: bool = False
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pooled share and CLUSTER_METHOD bounds for arrays of shape (..., runs), runs >= 2, every
    n > 0. Vectorised so the coverage simulation measures this very code. ``event_clusters``
    (QUESTION_METHOD) caps the clusters the degrees of freedom count at those with an event on
    the rarer side (:func:`clusters_with_events`)."""
    runs = k.shape[-1]
    if runs < 2:
        raise ValueError("run_level_bounds: needs at least two runs (one run falls back to wilson)")
    p, between = _between_run_variance(k, n)
    total = n.sum(axis=-1)
    binomial = p * (1 - p) / total
    # Design effect: how much more the pooled share varies than if every response were an
    # independent draw; floored at 1 (also when p is 0 or 1, where the binomial variance is 0).
    deff = np.maximum(1.0, np.divide(between, binomial, out=np.ones_like(p), where=binomial > 0))
    # Degrees of freedom from the effective number of runs (Kish: N^2 / sum n^2, R when runs are of
    # equal size): one big run among small ones carries most of the pooled share, so the spread
    # between runs is estimated from fewer than R runs' worth of information (issue 26's grid: runs
    # of 2-40 responses under-covered with R - 1).
    effective = total ** 2 / (n ** 2).sum(axis=-1)
    if event_clusters:
        effective = np.minimum(effective, clusters_with_events(k, n))
    t = np.vectorize(t_975_fractional)(np.maximum(1.0, effective - 1))
    lo, hi = wilson_cc_bounds(p, total / deff, t)
    return p, lo, hi


def clusters_with_events(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """How many clusters (last axis) hold at least one event of the rarer side of their pooled cell:
    the clusters the spread between clusters is really measured from."""
    rarer_is_k = k.sum(axis=-1) <= (n - k).sum(axis=-1)
    return np.where(rarer_is_k[..., None], k > 0, k < n).sum(axis=-1)


RARE_EVENTS = 8
"""Below this many events on the rarer side (``min(K, N − K)``), a cell's run-level interval is not
trusted: with runs that differ (intraclass correlation up to 0.5) a rare event is concentrated in a
few runs, and a cell that happened to draw none of them looks homogeneous; the Wilson interval on
the effective size then covered 0.55-0.80 in the grid of ``bench/bench_coverage.py``. Those cells get
:func:`free_bounds` instead, and say so (``FREE_METHOD``). Chosen by that simulation: the smallest
threshold with coverage of at least 0.93 over every grid case whose runs answer 4-16 probes."""
FREE_METHOD = ("95% distribution-free interval over {clusters} (Hoeffding on the mean of the per-{cluster} shares, "
               "valid however much {clusters} differ): fewer than {m} {items} on the rarer side, where the "
               "{cluster}-level interval under-covers when {clusters} differ")


def hidden_share(runs: int) -> float:
    """The largest share of runs a technique could act in and still be missed by all ``runs`` runs
    5% of the time: ``1 − 0.05^(1/runs)`` (0.78 of 2 runs, 0.63 of 3, 0.45 of 5, 0.14 of 20)."""
    return 1 - 0.05 ** (1 / runs)


_UNPAIRED = ("unpaired 95% interval over {clusters}: each side's interval over its own {clusters}, combined by MOVER "
             "(each side's distance to its bounds, in quadrature; keeps each side's skew)")
_FREE_DIFFERENCE = ("unpaired 95% distribution-free interval over {clusters}: each side's interval combined by MOVER, "
                    "a side with fewer than {m} events on its rarer side taking its distribution-free (Hoeffding) "
                    "interval, where the {cluster}-level interval under-covers when {clusters} differ")
UNPAIRED_METHOD = ("unpaired 95% interval over runs: each side's interval over its own runs (distribution-free "
                   f"(Hoeffding) for a side with fewer than {RARE_EVENTS} events on its rarer side), combined by MOVER")
_HIDDEN = ("; not every {cluster} shows the difference, so it reaches as far as an effect in the {clusters} that "
           "show none could move it (an effect in {share:.0%} of {runs} {clusters} is missed by all of them 5% of the time)")
_RARE_PAIRED = ("; an arm has fewer than {m} events on its rarer side, so it holds the unpaired interval of the same "
                "{clusters} (each arm's interval, distribution-free for the rare arm, combined by MOVER)")
DIFFERENCE_METHOD = (f"paired {_DIFFERENCE.format(clusters='runs')}; where not every run shows the difference, widened "
                     f"to reach as far as an effect in the runs that show none could move it (an effect in 1 − 0.05^(1/R) "
                     f"of R runs, {hidden_share(3):.0%} of 3 or {hidden_share(5):.0%} of 5, is missed by all of them 5% of "
                     f"the time); where either arm has fewer than {RARE_EVENTS} events on its rarer side, widened to hold "
                     f"the unpaired interval of the same runs (each arm's interval, distribution-free for the rare arm, "
                     f"combined by MOVER)")


def free_bounds(k: np.ndarray, n: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Hoeffding's two-sided ``1 − alpha`` interval for the mean of the per-run shares (each in
    [0, 1], the runs independent): half-width ``sqrt(ln(2 / alpha) / (2 R))``, whatever the
    distribution of run rates; widened to hold the pooled share, which the cell reports."""
    runs = k.shape[-1]
    mean = (k / n).mean(axis=-1)
    pooled = k.sum(axis=-1) / n.sum(axis=-1)
    half = math.sqrt(math.log(2 / alpha) / (2 * runs))
    return np.maximum(0.0, np.minimum(mean - half, pooled)), np.minimum(1.0, np.maximum(mean + half, pooled))


def cell_bounds(k: np.ndarray, n: np.ndarray, event_clusters: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pooled share and the bounds a cell shows, for arrays of shape (..., runs), runs >= 2: the
    run-level interval, or :func:`free_bounds` where the rarer side has fewer than
    :data:`RARE_EVENTS` events; the last array is True where the latter was used. Vectorised so
    the coverage simulation measures this very code; ``event_clusters`` as in :func:`run_level_bounds`."""
    p, lo, hi = run_level_bounds(k, n, event_clusters)
    rare = np.minimum(k.sum(axis=-1), (n - k).sum(axis=-1)) < RARE_EVENTS
    free_lo, free_hi = free_bounds(k, n)
    return p, np.where(rare, free_lo, lo), np.where(rare, free_hi, hi), rare


def _arrays(ks: Sequence[float], ns: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Counts of the runs that counted anything (a run with n == 0 carries no evidence)."""
    k, n = np.asarray(ks, dtype=float), np.asarray(ns, dtype=float)
    keep = ~(np.isnan(k) | np.isnan(n)) & (n > 0)
    return k[keep], n[keep]


def spread(ks: Sequence[float], ns: Sequence[float]) -> tuple[float, float] | None:
    """Lowest and highest per-run share: how much repeats of one cell disagree."""
    k, n = _arrays(ks, ns)
    if not len(k):
        return None
    shares = k / n
    return float(shares.min()), float(shares.max())


def cluster_rate(ks: Sequence[float], ns: Sequence[float], items: str = "responses") -> dict[str, Any] | None:
    """Pooled share of several runs with a run-level 95% interval (see the module docs).

    Returns ``{"value", "lo", "hi", "k", "n", "runs", "unit", "method", "spread"}``, or None when
    no run counted anything (an undefined share is not 0). ``unit`` is what the interval's n
    counts: ``runs``, or ``items`` (what a run's n counts: responses, facts, cards) for the
    single-run fallback.
    """
    return _clustered_rate(ks, ns, items, "run")


def question_rate(ks: Sequence[float], ns: Sequence[float], items: str = "draws") -> dict[str, Any] | None:
    """Pooled share over questions with a question-level 95% interval (QUESTION_METHOD): position i
    is one question, its ``k`` and ``n`` summed over its rollouts (and facts). The same fields as
    :func:`cluster_rate`, ``runs`` counting questions and ``unit`` ``questions``."""
    return _clustered_rate(ks, ns, items, "question")


def _clustered_rate(ks: Sequence[float], ns: Sequence[float], items: str, cluster: str) -> dict[str, Any] | None:
    """:func:`cluster_rate` (``cluster`` "run") or :func:`question_rate` ("question")."""
    k, n = _arrays(ks, ns)
    if not len(k):
        return None
    base = {"k": int(k.sum()), "n": int(n.sum()), "runs": len(k), "spread": spread(k, n)}
    by_question = cluster == "question"
    if len(k) == 1:
        interval = wilson(int(k[0]), int(n[0]))
        assert interval is not None  # n > 0 by _arrays
        single = SINGLE_QUESTION_METHOD if by_question else WILSON_METHOD
        return {**interval, **base, "unit": items, "method": single.format(items=items)}
    p, lo, hi, rare = cell_bounds(k, n, event_clusters=by_question)
    method = FREE_METHOD.format(m=RARE_EVENTS, items=items, clusters=f"{cluster}s", cluster=cluster) if rare \
        else QUESTION_METHOD.format(items=items) if by_question else CLUSTER_METHOD
    return {"value": float(p), "lo": float(lo), "hi": float(hi), **base, "unit": f"{cluster}s", "method": method}


def _floor_variance(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Binomial variance of a pooled share with one success and one failure added
    (Agresti-Caffo): never 0, so a difference of agreeing runs keeps a width."""
    p = (k.sum(axis=-1) + 1) / (n.sum(axis=-1) + 2)
    return p * (1 - p) / (n.sum(axis=-1) + 2)


def paired_t_bounds(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Difference of pooled shares (a - b) and the paired t bounds (``_DIFFERENCE``), arrays of shape
    (..., runs) where position i of every array is the same run; runs >= 2, every n > 0."""
    runs = ak.shape[-1]
    a_total, b_total = an.sum(axis=-1), bn.sum(axis=-1)
    pa, pb = ak.sum(axis=-1) / a_total, bk.sum(axis=-1) / b_total
    # Each run's contribution to the difference: its two arms' residuals kept together.
    u = (ak - pa[..., None] * an) / a_total[..., None] - (bk - pb[..., None] * bn) / b_total[..., None]
    variance = np.maximum(runs / (runs - 1) * (u ** 2).sum(axis=-1), _floor_variance(ak, an) + _floor_variance(bk, bn))
    half = t_975(runs - 1) * np.sqrt(variance)
    d = pa - pb
    return d, np.maximum(-1.0, d - half), np.minimum(1.0, d + half)


def hidden_effect(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where not every run's own difference ``ak/an − bk/bn`` lies strictly on the side of the pooled
    one (some runs show no effect, or the opposite), the bounds an effect the technique has in runs
    that show none could reach: the technique arm's rate moved to 1 (or to 0) in
    :func:`hidden_share` of the runs, ``d + h (1 − p_a)`` and ``d − h p_a``. Returns (lo, hi, where).
    A difference every run shows is not hidden, and keeps its t interval."""
    d = ak.sum(axis=-1) / an.sum(axis=-1) - bk.sum(axis=-1) / bn.sum(axis=-1)
    own = ak / an - bk / bn
    where = np.where(d[..., None] >= 0, own > 0, own < 0).sum(axis=-1) < ak.shape[-1]
    h, pa = hidden_share(ak.shape[-1]), ak.sum(axis=-1) / an.sum(axis=-1)
    return d - h * pa, d + h * (1 - pa), where


def paired_bounds(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray, event_clusters: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The paired gap as shown, arrays of shape (..., runs), position i of every array the same run,
    runs >= 2: difference of pooled shares (a - b), its bounds, and where each guard applied
    (hidden effect, rare arm). The paired t bounds (:func:`paired_t_bounds`), widened to reach
    :func:`hidden_effect`'s bounds where not every run shows the difference, and to hold the
    unpaired bounds of the same runs (:func:`unpaired_bounds`, ``event_clusters`` as there) where
    either arm has fewer than :data:`RARE_EVENTS` events on its rarer side (:func:`either_arm_rare`).
    Vectorised so the coverage simulation measures this very code."""
    d, lo, hi = paired_t_bounds(ak, an, bk, bn)
    hidden_lo, hidden_hi, hidden = hidden_effect(ak, an, bk, bn)
    lo = np.where(hidden, np.maximum(-1.0, np.minimum(lo, hidden_lo)), lo)
    hi = np.where(hidden, np.minimum(1.0, np.maximum(hi, hidden_hi)), hi)
    rare = either_arm_rare(ak, an, bk, bn)
    _, unpaired_lo, unpaired_hi = unpaired_bounds(ak, an, bk, bn, event_clusters)
    return d, np.where(rare, np.minimum(lo, unpaired_lo), lo), np.where(rare, np.maximum(hi, unpaired_hi), hi), \
        hidden, rare


def unpaired_bounds(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray, event_clusters: bool = False
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Difference of pooled shares of two separate sets of runs (shape (..., runs_a) and
    (..., runs_b), each >= 2 runs) with the bounds ``_UNPAIRED`` describes: :func:`mover_bounds` of the two
    sides' cell intervals (:func:`cell_bounds`, each run-level or distribution-free as a cell of
    that side would show; ``event_clusters`` as in :func:`run_level_bounds`)."""
    pa, la, ua, _ = cell_bounds(ak, an, event_clusters)
    pb, lb, ub, _ = cell_bounds(bk, bn, event_clusters)
    return mover_bounds(pa, la, ua, pb, lb, ub)


def mover_bounds(pa: np.ndarray, la: np.ndarray, ua: np.ndarray, pb: np.ndarray, lb: np.ndarray, ub: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``a − b`` with the MOVER bounds of Zou & Donner (2008; Newcombe 1998 for two Wilson
    intervals): each side's distance to its own 95% bound, combined in quadrature,
    ``lo = d − sqrt((pa − la)² + (ub − pb)²)`` and ``hi = d + sqrt((ua − pa)² + (pb − lb)²)``.
    Each side's interval already carries its skew (a low rate's interval reaches further up than
    down) and its own few-runs correction; the symmetric Welch t interval this replaced did not,
    and covered as little as 0.900 with runs of 2-40 responses (issue 26's grid)."""
    d = pa - pb
    return (d, np.maximum(-1.0, d - np.sqrt((pa - la) ** 2 + (ub - pb) ** 2)),
            np.minimum(1.0, d + np.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)))


def either_arm_rare(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray) -> np.ndarray:
    """True where either arm of a difference (paired or not) has a rare side (see :data:`RARE_EVENTS`)."""
    return np.minimum(np.minimum(ak.sum(axis=-1), (an - ak).sum(axis=-1)),
                      np.minimum(bk.sum(axis=-1), (bn - bk).sum(axis=-1))) < RARE_EVENTS


def paired_difference(a_ks: Sequence[float], a_ns: Sequence[float],
                      b_ks: Sequence[float], b_ns: Sequence[float], cluster: str = "run") -> dict[str, Any] | None:
    """Pooled share of arm a minus that of arm b, where position i of every list is one run that
    sampled both arms on the same probes; the interval keeps each run's two arms together.
    ``cluster`` names what a position is (``question`` for the benchmark's pairs by question).

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
    base = {"value": value, "runs": len(ak), "unit": f"{cluster}s", "n_a": int(an.sum()), "n_b": int(bn.sum())}
    if len(ak) == 1:
        return {**base, "lo": math.nan, "hi": math.nan, "method": _NO_DIFFERENCE.format(cluster=cluster)}
    _, lo, hi, hidden, rare = paired_bounds(ak, an, bk, bn, event_clusters=cluster == "question")
    clusters = f"{cluster}s"
    method = f"paired {_DIFFERENCE.format(clusters=clusters)}" \
        + (_HIDDEN.format(cluster=cluster, clusters=clusters, share=hidden_share(len(ak)), runs=len(ak)) if hidden else "") \
        + (_RARE_PAIRED.format(m=RARE_EVENTS, clusters=clusters) if rare else "")
    return {**base, "lo": float(lo), "hi": float(hi), "method": method}


def unpaired_difference(a_ks: Sequence[float], a_ns: Sequence[float],
                        b_ks: Sequence[float], b_ns: Sequence[float], cluster: str = "run") -> dict[str, Any] | None:
    """Pooled share of the runs of a minus that of the runs of b (separate runs; ``cluster``
    ``question`` for separate questions, each side's interval then QUESTION_METHOD's). None unless
    both sets counted something; no interval unless both have at least two runs."""
    ak, an = _arrays(a_ks, a_ns)
    bk, bn = _arrays(b_ks, b_ns)
    if not len(ak) or not len(bk):
        return None
    value = float(ak.sum() / an.sum() - bk.sum() / bn.sum())
    clusters = f"{cluster}s"
    base = {"value": value, "runs": len(ak) + len(bk), "unit": clusters, "n_a": int(an.sum()), "n_b": int(bn.sum())}
    if len(ak) < 2 or len(bk) < 2:
        return {**base, "lo": math.nan, "hi": math.nan, "method": _NO_DIFFERENCE.format(cluster=cluster)}
    _, lo, hi = unpaired_bounds(ak, an, bk, bn, event_clusters=cluster == "question")
    method = _FREE_DIFFERENCE.format(m=RARE_EVENTS, clusters=clusters, cluster=cluster) \
        if either_arm_rare(ak, an, bk, bn) else _UNPAIRED.format(clusters=clusters)
    return {**base, "lo": float(lo), "hi": float(hi), "method": method}


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
