"""Kappa and alpha against references, the bootstrap's unit, and the kappa interval's coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.judging.agreement import (OVER_RESPONSES, OVER_RUNS, alpha_interval, cohen_kappa, confusion,
                                    kappa_from_tables, kappa_interval, krippendorff_alpha, per_label_kappa)

statsmodels_inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
krippendorff = pytest.importorskip("krippendorff")

LABELS = ("refused", "deflected", "official_line", "partial", "forthcoming")


def random_judgings(seed: int, n: int, agree: float) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    a = rng.choice(LABELS, n, p=[0.3, 0.2, 0.2, 0.1, 0.2])
    b = np.where(rng.random(n) < agree, a, rng.choice(LABELS, n))
    return list(a), list(b)


@pytest.mark.parametrize("seed, agree", [(0, 0.0), (1, 0.5), (2, 0.9)])
def test_kappa_matches_statsmodels(seed, agree):
    a, b = random_judgings(seed, 80, agree)
    table = np.asarray(confusion(a, b, LABELS)["matrix"])
    assert cohen_kappa(a, b, LABELS) == pytest.approx(statsmodels_inter_rater.cohens_kappa(table).kappa, abs=1e-12)


def test_kappa_by_hand():
    # 50 items: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no. po = 0.7; pe = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert confusion(a, b, ["yes", "no"])["matrix"] == [[20, 5], [10, 15]]


def test_missing_votes_leave_kappa_and_are_counted():
    a, b = ["x", "y", None, "x"], ["x", "y", "y", None]
    result = kappa_interval(a, b, resamples=50)
    assert (result["n"], result["missing"], result["value"]) == (2, 2, 1.0)
    assert confusion(a, b)["missing"] == 2


def test_no_zero_width_interval_when_one_judging_uses_one_label():
    result = kappa_interval(["x", "y", "x", "y", "z"], ["x"] * 5, resamples=100)
    assert result["value"] == 0.0 and result["lo"] is None and "single label" in result["note"]


def test_kappa_is_undefined_when_both_judgings_say_one_label():
    assert math.isnan(cohen_kappa(["x"] * 5, ["x"] * 5))
    assert math.isnan(float(kappa_from_tables(np.array([[5.0, 0.0], [0.0, 0.0]]))))


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: four observers,
# twelve units, values 1-5 with gaps; nominal alpha = 0.743.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def units_of(observers: list[list[object]]) -> list[list[str | None]]:
    return [[None if o[u] is None else str(o[u]) for o in observers] for u in range(len(observers[0]))]


def test_alpha_textbook_example():
    assert krippendorff_alpha(units_of(KRIPPENDORFF_2011)) == pytest.approx(0.743, abs=5e-4)
    result = alpha_interval(units_of(KRIPPENDORFF_2011), resamples=200)
    assert (result["n"], result["missing"]) == (11, 1)  # the last unit has one vote: not pairable


@pytest.mark.parametrize("seed", range(4))
def test_alpha_matches_the_krippendorff_package(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, 60)
    votes = np.where(rng.random((3, 60)) < 0.7, truth, rng.integers(0, 4, (3, 60))).astype(float)
    votes[rng.random((3, 60)) < 0.15] = np.nan
    ours = krippendorff_alpha([[None if np.isnan(v) else str(int(v)) for v in votes[:, u]] for u in range(60)])
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=votes, level_of_measurement="nominal"), abs=1e-9)


def test_alpha_of_two_judgings_is_close_to_their_kappa():
    a, b = random_judgings(5, 200, 0.6)
    alpha = krippendorff_alpha([[x, y] for x, y in zip(a, b)])
    assert alpha == pytest.approx(cohen_kappa(a, b), abs=0.02)  # they differ by the small-sample correction only


def test_the_interval_says_its_unit():
    a, b = random_judgings(3, 60, 0.6)
    one_run = kappa_interval(a, b, resamples=200)
    assert (one_run["unit"], one_run["runs"], one_run["n"]) == (OVER_RESPONSES, 1, 60)
    runs = [k // 10 for k in range(60)]
    several = kappa_interval(a, b, runs, resamples=200)
    assert (several["unit"], several["runs"], several["n"]) == (OVER_RUNS, 6, 60)
    assert "6 runs" in several["method"] and several["lo"] < several["value"] < several["hi"]
    assert several["value"] == one_run["value"]


def test_per_label_kappa_finds_the_confused_label():
    a = ["refused"] * 30 + ["deflected"] * 30 + ["forthcoming"] * 30
    b = ["refused"] * 30 + ["deflected"] * 15 + ["partial"] * 15 + ["forthcoming"] * 30
    per = per_label_kappa(a, b, resamples=100)
    assert per["refused"]["value"] == pytest.approx(1.0) and per["forthcoming"]["value"] == pytest.approx(1.0)
    assert per["deflected"]["value"] < 0.8 and per["partial"]["value"] == pytest.approx(0.0)


# -- coverage of the kappa interval -------------------------------------------------------------
# Two judges see items of three classes (shares P); each reports the true class with probability q,
# else a class drawn from P. The population's joint table, and so its kappa, is known exactly; with
# several runs, each run has its own q (runs differ), and the target is the kappa of the average table.
P = np.array([0.5, 0.3, 0.2])


def population_table(q: float) -> np.ndarray:
    given_truth = q * np.eye(3) + (1 - q) * P[None, :]
    return np.einsum("t,ta,tb->ab", P, given_truth, given_truth)


def coverage(runs: int, per_run: int, qs: list[float], data_sets: int, seed: int = 1, *,
             keep_runs_together: bool = True) -> float:
    truth = float(kappa_from_tables(np.mean([population_table(q) for q in qs], axis=0)))
    rng = np.random.default_rng(seed)
    hits = 0
    for k in range(data_sets):
        a, b, ids = [], [], []
        for run in range(runs):
            q = qs[rng.integers(len(qs))]
            t = rng.choice(3, per_run, p=P)
            for judging in (a, b):
                judging += [str(v) for v in np.where(rng.random(per_run) < q, t, rng.choice(3, per_run, p=P))]
            ids += [run] * per_run
        result = kappa_interval(a, b, ids if runs > 1 and keep_runs_together else None, resamples=400, seed=k)
        hits += result["lo"] <= truth <= result["hi"]
    return hits / data_sets


@pytest.mark.parametrize("runs, per_run, qs", [(1, 60, [0.6]), (1, 150, [0.8]), (4, 30, [0.3, 0.6, 0.9]),
                                               (10, 15, [0.3, 0.6, 0.9])])
def test_kappa_interval_covers(runs, per_run, qs):
    # 200 seeded data sets per case; the measured coverage is 0.92-0.96 (COVERAGE_NOTE, 800 data sets).
    assert coverage(runs, per_run, qs, data_sets=200) >= 0.89


def test_ignoring_runs_would_not_cover():
    # The same runs, bootstrapped as if their responses were independent: the interval is too narrow.
    assert coverage(12, 25, [0.2, 0.9], data_sets=200, keep_runs_together=False) < 0.85
    assert coverage(12, 25, [0.2, 0.9], data_sets=200) >= 0.89


# -- coverage of the alpha interval (a panel of three) ------------------------------------------
# Each item has a true label drawn from FREQ; each of three judges reports it with probability q and
# otherwise a label drawn from FREQ, so every vote's label is distributed as FREQ and the population's
# nominal alpha is 1 - (1 - q^2)(1 - sum FREQ^2) / (1 - sum FREQ^2) = q^2.
FREQ = np.array([0.4, 0.25, 0.15, 0.12, 0.08])


def panel_votes(rng: np.random.Generator, items: int, q: float) -> list[list[str]]:
    truth = rng.choice(len(FREQ), size=items, p=FREQ)
    right = rng.random((items, 3)) < q
    noise = rng.choice(len(FREQ), size=(items, 3), p=FREQ)
    return [[str(v) for v in row] for row in np.where(right, truth[:, None], noise)]


@pytest.mark.parametrize(("items", "q"), [(30, 0.8), (60, 0.5), (150, 0.95)])
def test_alpha_interval_covers(items, q):
    # 200 seeded data sets per case (measured with 400: 0.92-0.97 over 30-150 items, COVERAGE_NOTE)
    rng = np.random.default_rng(7)
    hits = total = 0
    for s in range(200):
        result = alpha_interval(panel_votes(rng, items, q), categories=[str(k) for k in range(len(FREQ))],
                                resamples=500, seed=s)
        if result["lo"] is not None:
            total += 1
            hits += result["lo"] <= q * q <= result["hi"]
    assert total >= 190 and hits / total >= 0.89


# -- perfect and near-perfect agreement (issue 26) ----------------------------------------------


def test_perfect_agreement_gets_a_one_sided_bound_and_a_note_that_names_it():
    a = ["refused"] * 10 + ["deflected"] * 10 + ["partial"] * 10
    result = kappa_interval(a, list(a))
    # 0 of 30 disagree: exact upper bound 1 - 0.05^(1/30) on the disagreement share; 1 - pe = 2/3
    assert result["value"] == 1.0 and result["hi"] == 1.0 and result["one_sided"]
    assert result["lo"] == pytest.approx(1 - (1 - 0.05 ** (1 / 30)) / (2 / 3))
    assert "agree on all 30 items" in result["note"] and "single label" not in result["note"]


def test_near_perfect_agreement_always_has_an_interval_that_covers():
    """30 items, population kappa 0.9 (each judge reports the true class with probability sqrt(0.9)):
    before issue 26, 15% of data sets (those with no disagreement) got no interval and a note blaming
    a single label. Now every data set has one, and they cover (400 seeded data sets)."""
    q, truth = 0.9 ** 0.5, float(kappa_from_tables(population_table(0.9 ** 0.5)))
    assert truth == pytest.approx(0.9)
    rng = np.random.default_rng(26)
    results = []
    for k in range(400):
        t = rng.choice(3, 30, p=P)
        a, b = ([str(v) for v in np.where(rng.random(30) < q, t, rng.choice(3, 30, p=P))] for _ in range(2))
        results.append(kappa_interval(a, b, resamples=400, seed=k))
    assert all(r["lo"] is not None for r in results)
    perfect = [r for r in results if r.get("one_sided")]
    assert 0.05 < len(perfect) / len(results) < 0.3  # the case is common, not a corner
    assert np.mean([r["lo"] <= truth <= r["hi"] for r in results]) >= 0.93
