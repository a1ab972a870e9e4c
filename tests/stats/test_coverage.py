"""Issue 26's coverage grid, reduced so it runs in seconds: the minimum coverage of each interval the
comparison shows, over rare and even rates, runs from alike to very different, few to many runs
(``bench/bench_coverage.py`` runs the whole grid; ``bench/coverage_grid.txt`` keeps its output);
issue 30's, the benchmark's intervals whose unit is the question; and issue 37's, the paired gaps
where the technique acts in some runs (questions) only."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.stats.cards import card_cluster_bounds
from audit.stats.coverage import EFFECT_METHODS, GRID_METHODS, PER_ROLLOUT, QUESTION_METHODS, SIZES, CardScenario, Scenario, \
    card_grid, card_grid_scenarios, effect_grid, effects, every_card_outcome, grid, overlapping_sets_coverage, \
    question_effect_grid, question_grid
from audit.stats.intervals import QUESTION_METHOD, cluster_rate, paired_t_bounds, question_rate, unpaired_difference, wilson

CELLS = 1000
REDUCED = {"scenarios": grid(means=(0.05, 0.3), iccs=(0.0, 0.5)), "runs": (3, 8, 20), "sizes": ["4-16 responses"]}


def minimum(method: str) -> float:
    points = GRID_METHODS[method](CELLS, REDUCED["scenarios"], REDUCED["runs"], REDUCED["sizes"])
    assert len(points) == len(REDUCED["scenarios"]) * len(REDUCED["runs"])
    return min(p.coverage for p in points)


@pytest.mark.parametrize("method", ["cell (as shown)", "paired gap (knows vs says)",
                                    # 0.928 here with the Welch t interval it had before MOVER
                                    "unpaired gap (vs assistant runs)"])
def test_every_interval_covers_over_the_reduced_grid(method: str) -> None:
    assert minimum(method) >= 0.93


def test_the_grid_finds_what_the_run_level_interval_alone_misses() -> None:
    """Without the rare-event fallback, a rare event in runs that differ (p = 0.05, icc 0.5) is missed
    far more often than 5%: the check can fail."""
    assert minimum("cell, run-level interval alone (no rare-event fallback)") < 0.90


def test_a_rare_cell_says_which_interval_it_shows() -> None:
    rare = cluster_rate([0, 1, 0, 0], [10, 12, 9, 11])
    assert rare is not None and rare["method"].startswith("95% distribution-free") and rare["lo"] == 0.0
    common = cluster_rate([4, 6, 5], [10, 12, 9])
    assert common is not None and common["method"].startswith("95% interval over runs")
    gap = unpaired_difference([0, 0, 1], [10, 10, 10], [5, 6, 4], [10, 10, 10])
    assert gap is not None and gap["method"].startswith("unpaired 95% distribution-free")


def test_the_card_clustered_interval_covers_and_is_narrower_with_repeats() -> None:
    """The epistemic matrix with repeats over a reduced card grid (a fixed-denominator rate at p 0.05
    and 0.3, an AP-like ratio; cards alike to deterministic): the clustered interval covers at least
    0.93, and where repeats disagree (icc 0.3, 200 cards, 3 repeats) the old interval over per-card
    averages is at least 25% wider (the bench measured 30-36% at 4,000 cells)."""
    scenarios = [s for s in card_grid_scenarios(means=(0.05, 0.3), iccs=(0.0, 0.3, 1.0))]
    points = card_grid(CELLS, scenarios, card_counts=(50, 200), repeats=(3,))
    assert len(points) == len(scenarios) * 2
    assert min(p.coverage for p in points) >= 0.93
    disagree = [p for p in points if p.scenario.icc == 0.3 and p.cards == 200 and p.scenario.entailed == 1.0]
    assert disagree and all(p.old_width / p.width >= 1.25 for p in disagree)
    # deterministic cards: repeats say nothing new, so the interval is exactly the old one
    alike = [p for p in points if p.scenario.icc == 1.0]
    assert all(p.width == pytest.approx(p.old_width) for p in alike)



def _binomial_coverage(cards: int, rate: float, copies: int) -> float:
    """Exact coverage of Wilson over ``cards`` x ``copies`` answers when each card's ``copies``
    answers are one 0/1 outcome repeated: the binomial sum over how many cards answered 1."""
    covered = 0.0
    for k in range(cards + 1):
        interval = wilson(k * copies, cards * copies)
        assert interval is not None
        if interval["lo"] <= rate <= interval["hi"]:
            covered += math.comb(cards, k) * rate ** k * (1 - rate) ** (cards - k)
    return covered


def test_cards_that_always_answer_alike_count_once_whatever_the_repeats() -> None:
    """Last stop's one card case below 0.93: rate 0.5, icc 1.0, 50 cards, 2 repeats, measured 0.919 by
    1,000 simulated cells. Its repeats are copies (each card always answers the same way), so the
    interval must be Wilson over the 50 cards at 1, 2 or 20 repeats, never over the 100 or 1,000
    answers. Its coverage is then a binomial sum with no Monte Carlo error: 0.935, not 0.919 (the
    simulation's draw, 1.8 of its standard errors low). Counting the 100 answers would cover 0.80."""
    case = CardScenario("rate 0.5, icc 1.0", 0.5, 1.0)
    points = card_grid(CELLS, [case], card_counts=(50,), repeats=(1, 2, 20))
    over_cards = _binomial_coverage(50, 0.5, 1)
    assert over_cards == pytest.approx(0.9351, abs=1e-4) and _binomial_coverage(50, 0.5, 2) < 0.85
    for p in points:
        assert (p.coverage, p.old_coverage) == pytest.approx((over_cards, over_cards), abs=1e-9), p.repeats
        assert p.coverage >= 0.93
    assert len({round(p.width, 12) for p in points}) == 1  # repeats of a copy never narrow it


@pytest.mark.parametrize("case", [CardScenario("rate 0.05, icc 1.0", 0.05, 1.0),
                                  CardScenario("AP-like ratio, icc 0.3", 0.6, 0.3, 0.4, 0.1)],
                         ids=["fixed rate", "ratio"])
def test_the_exact_card_coverage_is_what_a_simulation_finds(case: CardScenario) -> None:
    """The grid's exact cases (every card one 0/1 outcome: icc 1, or one answer per card) weigh each
    possible cell by its probability; 20,000 simulated cells of 20 cards (2 repeats at icc 1, 1
    otherwise) land within 3 of their standard errors, and the weights sum to 1."""
    repeats = 2 if case.icc >= 1 else 1
    y, x, total, weight = every_card_outcome(case, 20, repeats)
    assert weight.sum() == pytest.approx(1, abs=1e-9)
    exact = card_grid(CELLS, [case], card_counts=(20,), repeats=(repeats,))[0].coverage
    sy, sx, stotal = case.draw(np.random.default_rng(3), 20_000, 20, repeats)
    _, lo, hi, _ = card_cluster_bounds(sy, sx, stotal)
    defined = sx.sum(axis=-1) > 0
    simulated = float(np.mean((lo[defined] <= case.truth) & (case.truth <= hi[defined])))
    assert abs(simulated - exact) <= 3 * math.sqrt(exact * (1 - exact) / defined.sum())
    assert (y <= x).all() and (total == x * repeats).all()

@pytest.mark.parametrize("case", [CardScenario("rate 0", 0.0, 1.0), CardScenario("rate 1", 1.0, 1.0),
                                  CardScenario("ratio, entailed never abstain", 0.6, 1.0, 0.4, 0.0)],
                         ids=["rate 0", "rate 1", "abstain_e 0"])
def test_a_certain_outcome_is_one_cell_of_weight_one(case: CardScenario) -> None:
    """A probability of 0 or 1 (every card alike) leaves one possible cell or a few, weights summing to 1
    (0 · log 0 is 0, not NaN: before, every row was dropped and the grid raised)."""
    y, x, total, weight = every_card_outcome(case, 20, 1)
    assert len(weight) >= 1 and weight.sum() == pytest.approx(1, abs=1e-9)
    assert card_grid(CELLS, [case], card_counts=(20,), repeats=(1,))[0].coverage >= 0


QUESTIONS_REDUCED = {"scenarios": grid(means=(0.05, 0.3), iccs=(0.0, 0.5)), "questions": (5, 40), "rollouts": (1, 10),
                     "per_rollout": list(PER_ROLLOUT)}


def question_minimum(method: str) -> float:
    points = question_grid(method, CELLS, **QUESTIONS_REDUCED)
    assert len(points) == len(QUESTIONS_REDUCED["scenarios"]) * 2 * 2 * len(PER_ROLLOUT)
    return min(p.coverage for p in points)


@pytest.mark.parametrize("method", ["benchmark cell (as shown)", "benchmark paired gap (by question)",
                                    "benchmark unpaired gap (censored vs control)"])
def test_every_benchmark_interval_covers_over_the_reduced_question_grid(method: str) -> None:
    """The benchmark's intervals, the question as the unit (5-40 questions, 1-10 rollouts, rates over
    draws or over 2-8 facts per draw): the whole grid's minima are in docs/numbers.md."""
    assert question_minimum(method) >= 0.93


def test_the_question_grid_finds_what_the_uncapped_degrees_of_freedom_miss() -> None:
    """A rare fact in questions that differ (p = 0.05, icc 0.5, 40 questions of 20-80 judged facts;
    seeded, 2,000 cells): with the effective number of questions as the degrees of freedom the cell
    misses the truth more than 7% of the time, with them capped at the questions holding a fact, not."""
    case = Scenario("rare facts in questions that differ", 0.05, 0.5)
    uncapped, _ = QUESTION_METHODS["benchmark cell, df not capped by questions with events"](case, 40, (20, 80), 2000)
    capped, _ = QUESTION_METHODS["benchmark cell (as shown)"](case, 40, (20, 80), 2000)
    assert uncapped < 0.93 <= capped


def test_a_question_cell_says_its_unit() -> None:
    cell = question_rate([3, 0, 2, 5, 1, 4], [5, 5, 5, 5, 5, 5])
    assert cell is not None and cell["unit"] == "questions" and cell["runs"] == 6
    assert cell["method"] == QUESTION_METHOD.format(items="draws")
    rare = question_rate([0, 1, 0, 0], [3, 3, 3, 3], "judged facts")
    assert rare is not None and rare["method"].startswith("95% distribution-free interval over questions")
    one = question_rate([2], [5])
    assert one is not None and one["method"].startswith("a single question")


def test_a_card_two_card_sets_share_counted_once_covers_and_twice_does_not() -> None:
    """Two seeds' card sets of 100 cards from a pool of 250 claims (40 shared on average; two seeds of
    geography/has_capital share 37% at the default size), answers fixed by the claim: the interval
    over distinct cards covers, the two sets added as if disjoint do not (0.88-0.91 at 2,000 cells)."""
    added, distinct, shared = overlapping_sets_coverage(0.3, pool=250, per_set=100, cells=1000)
    assert 35 < shared < 45
    assert distinct >= 0.93 and added < 0.92


ALL_OR_NOTHING = effects(baselines=(0.02, 0.15, 0.3), shares=(0.22, 0.5), sizes=(None,))
"""Issue 37: a technique that works completely in 22% or 50% of the runs (questions) and not at all in the
others, over a baseline of 0.02-0.3 (the whole grid, with +0.2 effects and 8-20 runs, is bench/'s)."""
EFFECT_CELLS = 2000
"""The lowest case (5 runs of 2-40 responses, baseline 0.15, 50%) measured 0.934 with 4,000 cells: 2,000 keep
the Monte Carlo error (0.005) well inside the margin, in about a second."""


@pytest.mark.parametrize("runs", [3, 5])
def test_the_paired_gap_covers_an_all_or_nothing_effect(runs: int) -> None:
    """The t interval alone covered 0.53 at 3 runs (baseline 0.02, effect in 22% of runs): every run
    drawn showed nothing, and it said ±0.19."""
    points = effect_grid(EFFECT_METHODS["paired gap (as shown)"], EFFECT_CELLS, ALL_OR_NOTHING, (runs,), list(SIZES))
    assert len(points) == len(ALL_OR_NOTHING) * len(SIZES)
    assert min(p.coverage for p in points) >= 0.93


@pytest.mark.parametrize("questions", [3, 5])
def test_the_benchmark_paired_gap_covers_an_all_or_nothing_effect(questions: int) -> None:
    """The same with the question as the unit: a technique that gets past the refusal on some questions
    only, 1 or 10 rollouts, a rate over draws or over 2-8 facts per draw (0.70 before)."""
    points = question_effect_grid(EFFECT_CELLS, ALL_OR_NOTHING, (questions,), (1, 10), list(PER_ROLLOUT))
    assert len(points) == len(ALL_OR_NOTHING) * 2 * len(PER_ROLLOUT)
    assert min(p.coverage for p in points) >= 0.93


def test_the_effect_grid_finds_what_the_t_interval_alone_misses() -> None:
    """Without issue 37's guards the paired gap misses an effect in 22% of 3 runs far more often than 5%:
    the check can fail."""
    case = effects(baselines=(0.02,), shares=(0.22,), sizes=(None,))
    before = effect_grid(paired_t_bounds, CELLS, case, (3,), list(SIZES))
    assert max(p.coverage for p in before) < 0.85
