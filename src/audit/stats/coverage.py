"""Coverage of the intervals in :mod:`audit.stats.intervals`, measured by a seeded simulation (pure: no I/O).

An interval that claims 95% should contain the true rate in about 95% of repeated experiments.
With 2-10 runs per cell that is not guaranteed by any textbook result, so it is measured: each
scenario draws many synthetic cells of ``runs`` runs (each run a random number of responses,
each response a success with the run's own rate), computes the interval the comparison would
show, and counts how often it contains the rate the runs were drawn around. The test suite
holds the methods to a floor; ``bench/bench_coverage.py`` prints the whole table. The card grid's
cases where a cell can take only a few hundred values are summed exactly instead
(:func:`every_card_outcome`): no Monte Carlo error where Wilson's own coverage sits near the floor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from audit.stats.cards import card_cluster_bounds
from audit.stats.intervals import Z_95, wilson_bounds, cell_bounds, paired_bounds, paired_t_bounds, run_level_bounds, \
    unpaired_bounds

SEED = 15
RUN_COUNTS = (2, 3, 5, 8)
# Responses per run, drawn uniformly: the audits of the docs' examples answer 4-16 probes.
MIN_RESPONSES, MAX_RESPONSES = 4, 16


@dataclass(frozen=True)
class Scenario:
    """How the runs of one cell differ: every run's rate is drawn from Beta(mean, icc), where
    ``icc`` (the intraclass correlation) is the share of a response's variance that is between
    runs; icc = 0 means every run has the same rate (homogeneous)."""

    name: str
    mean: float
    icc: float

    def run_rates(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        if self.icc == 0:
            return np.full(shape, self.mean)
        strength = 1 / self.icc - 1  # Beta(a, b) with a + b = strength has icc 1 / (1 + a + b)
        return rng.beta(self.mean * strength, (1 - self.mean) * strength, size=shape)


SCENARIOS = (Scenario("homogeneous (p = 0.3)", 0.3, 0.0),
             Scenario("rare event (p = 0.05)", 0.05, 0.0),
             Scenario("heterogeneous runs (mean 0.4, icc 0.3)", 0.4, 0.3))
# A harsher case than the requirement, reported so nobody mistakes the floor for a guarantee:
# runs that mostly refuse everything or nothing.
STRESS = Scenario("all-or-nothing runs (mean 0.5, icc 0.67)", 0.5, 0.67)

Bounds = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
DiffBounds = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


# The wider grid of issue 26: rare to even rates, runs from alike to all-or-nothing, 2-20 runs, and
# run sizes from the examples' 4-16 responses to very unequal ones (2-40).
GRID_MEANS = (0.05, 0.15, 0.3, 0.5)
GRID_ICCS = (0.0, 0.1, 0.3, 0.5)
GRID_RUNS = (2, 3, 5, 8, 12, 20)
SIZES = {"4-16 responses": (MIN_RESPONSES, MAX_RESPONSES), "2-40 responses": (2, 40)}


def grid(means: Sequence[float] = GRID_MEANS, iccs: Sequence[float] = GRID_ICCS) -> list[Scenario]:
    """Every (mean, icc) scenario of the grid, and the all-or-nothing runs (``STRESS``)."""
    return [Scenario(f"p = {m}, icc {icc}", m, icc) for m in means for icc in iccs] + [STRESS]


@dataclass(frozen=True)
class GridPoint:
    """One case of the grid and what the simulation measured there."""

    scenario: Scenario | Effect
    runs: int
    sizes: str
    coverage: float
    width: float


def draw_cells(scenario: Scenario, runs: int, cells: int, rng: np.random.Generator,
               sizes: tuple[int, int] = (MIN_RESPONSES, MAX_RESPONSES)) -> tuple[np.ndarray, np.ndarray]:
    """``cells`` synthetic cells of ``runs`` runs: successes and responses, each of shape (cells, runs)."""
    n = rng.integers(sizes[0], sizes[1] + 1, size=(cells, runs))
    k = rng.binomial(n, scenario.run_rates(rng, (cells, runs)))
    return k.astype(float), n.astype(float)


def rate_coverage(scenario: Scenario, runs: int, cells: int, bounds: Bounds = run_level_bounds,
                  seed: int = SEED, sizes: tuple[int, int] = (MIN_RESPONSES, MAX_RESPONSES)) -> tuple[float, float, float]:
    """Share of ``cells`` simulated intervals that contain the scenario's mean, the mean width,
    and the share of zero-width intervals."""
    k, n = draw_cells(scenario, runs, cells, np.random.default_rng(seed), sizes)
    _, lo, hi = bounds(k, n)
    return (float(np.mean((lo <= scenario.mean) & (scenario.mean <= hi))), float(np.mean(hi - lo)),
            float(np.mean(hi - lo <= 0)))


def _paired(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The audit's paired gap as shown (:func:`audit.stats.paired_bounds`, the run as the unit)."""
    return paired_bounds(ak, an, bk, bn)[:3]


def _question_paired(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The benchmark's paired gap as shown (the question as the unit: its rare guard's arms are question cells)."""
    return paired_bounds(ak, an, bk, bn, event_clusters=True)[:3]


def paired_coverage(scenario: Scenario, shift: float, runs: int, cells: int, bounds: DiffBounds = _paired,
                    seed: int = SEED, sizes: tuple[int, int] = (MIN_RESPONSES, MAX_RESPONSES),
                    width: list[float] | None = None) -> float:
    """Coverage of a paired difference: each run's technique arm has its baseline arm's rate
    plus ``shift`` (clipped to [0, 1]), so the arms of a run move together; both arms answer
    the same number of probes. The true difference is the mean over runs of the shifted rates
    minus the baseline mean, estimated by simulation once per call."""
    rng = np.random.default_rng(seed)
    n = rng.integers(sizes[0], sizes[1] + 1, size=(cells, runs))
    base = scenario.run_rates(rng, (cells, runs))
    technique = np.clip(base + shift, 0, 1)
    truth = float(np.mean(technique - base)) if scenario.icc else shift
    ak, bk = rng.binomial(n, technique).astype(float), rng.binomial(n, base).astype(float)
    _, lo, hi = bounds(ak, n.astype(float), bk, n.astype(float))
    if width is not None:
        width.append(float(np.mean(hi - lo)))
    return float(np.mean((lo <= truth) & (truth <= hi)))


def unpaired_coverage(a: Scenario, b: Scenario, runs: int, cells: int, bounds: DiffBounds = unpaired_bounds,
                      seed: int = SEED, sizes: tuple[int, int] = (MIN_RESPONSES, MAX_RESPONSES),
                      width: list[float] | None = None) -> float:
    """Coverage of the difference between two separate sets of ``runs`` runs each."""
    rng = np.random.default_rng(seed)
    ak, an = draw_cells(a, runs, cells, rng, sizes)
    bk, bn = draw_cells(b, runs, cells, rng, sizes)
    _, lo, hi = bounds(ak, an, bk, bn)
    if width is not None:
        width.append(float(np.mean(hi - lo)))
    truth = a.mean - b.mean
    return float(np.mean((lo <= truth) & (truth <= hi)))



@dataclass(frozen=True)
class Effect:
    """A technique whose effect is rare or all-or-nothing per run (issue 37): the baseline arm answers
    at ``baseline`` in every run; in a share ``share`` of the runs (each run independently) the
    technique arm answers at ``baseline + size``, or at 1 where ``size`` is None (all-or-nothing: the
    technique works completely or not at all), and elsewhere as the baseline. The true gap is the
    expected difference, ``share × (technique rate − baseline)``. An effect that lowers a rate
    (refusals falling to 0 in some runs) is this one mirrored: every interval here treats events and
    non-events alike, so its coverage is the same."""

    name: str
    baseline: float
    share: float
    size: float | None = None

    @property
    def technique(self) -> float:
        return 1.0 if self.size is None else min(1.0, self.baseline + self.size)

    @property
    def truth(self) -> float:
        return self.share * (self.technique - self.baseline)


EFFECT_BASELINES = (0.02, 0.05, 0.15, 0.3, 0.5)
EFFECT_SHARES = (0.1, 0.22, 0.5, 1.0)
EFFECT_SIZES: tuple[float | None, ...] = (None, 0.2)
EFFECT_RUNS = (2, 3, 4, 5)
"""Issue 37's grid: few runs (or questions), where an effect in a share of them is most often not drawn at all."""


def effects(baselines: Sequence[float] = EFFECT_BASELINES, shares: Sequence[float] = EFFECT_SHARES,
            sizes: Sequence[float | None] = EFFECT_SIZES) -> list[Effect]:
    """Every (baseline, share of runs, size) effect of the grid."""
    return [Effect(f"baseline {b}, {'all-or-nothing' if size is None else f'+{size}'} in {share:.0%} of runs",
                   b, share, size) for b in baselines for share in shares for size in sizes]


def effect_coverage(effect: Effect, runs: int, cells: int, bounds: DiffBounds = _paired, seed: int = SEED,
                    sizes: tuple[int, int] = (MIN_RESPONSES, MAX_RESPONSES), width: list[float] | None = None) -> float:
    """Coverage of a paired difference where the technique acts in some runs only (:class:`Effect`);
    both arms answer the same number of probes in a run."""
    rng = np.random.default_rng(seed)
    n = rng.integers(sizes[0], sizes[1] + 1, size=(cells, runs))
    acts = rng.random((cells, runs)) < effect.share
    ak = rng.binomial(n, np.where(acts, effect.technique, effect.baseline)).astype(float)
    bk = rng.binomial(n, effect.baseline, size=(cells, runs)).astype(float)
    _, lo, hi = bounds(ak, n.astype(float), bk, n.astype(float))
    if width is not None:
        width.append(float(np.mean(hi - lo)))
    return float(np.mean((lo <= effect.truth) & (effect.truth <= hi)))

def _cell(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p, lo, hi, _ = cell_bounds(k, n)
    return p, lo, hi


GRID_METHODS: dict[str, Callable[..., list[GridPoint]]] = {}


def _method(name: str) -> Callable[[Callable[..., list[GridPoint]]], Callable[..., list[GridPoint]]]:
    def register(fn: Callable[..., list[GridPoint]]) -> Callable[..., list[GridPoint]]:
        GRID_METHODS[name] = fn
        return fn
    return register


def _points(measure: Callable[[Scenario, int, tuple[int, int], list[float]], float], scenarios: Sequence[Scenario],
            runs: Sequence[int], sizes: Sequence[str]) -> list[GridPoint]:
    out = []
    for scenario in scenarios:
        for r in runs:
            for size in sizes:
                width: list[float] = []
                covered = measure(scenario, r, SIZES[size], width)
                out.append(GridPoint(scenario, r, size, covered, width[0]))
    return out


@_method("cell (as shown)")
def cell_grid(cells: int, scenarios: Sequence[Scenario], runs: Sequence[int], sizes: Sequence[str]) -> list[GridPoint]:
    """The comparison cell's interval (:func:`audit.stats.cell_bounds`) over the grid."""
    return _rate_points(_cell, cells, scenarios, runs, sizes)


@_method("cell, run-level interval alone (no rare-event fallback)")
def run_level_grid(cells: int, scenarios: Sequence[Scenario], runs: Sequence[int], sizes: Sequence[str]
                   ) -> list[GridPoint]:
    """The run-level interval everywhere, as before the rare-event fallback."""
    return _rate_points(run_level_bounds, cells, scenarios, runs, sizes)


def _rate_points(bounds: Callable[..., Any], cells: int, scenarios: Sequence[Scenario], runs: Sequence[int],
                 sizes: Sequence[str]) -> list[GridPoint]:
    """One rate interval (``bounds``, as :func:`rate_coverage` takes it) measured over the grid."""
    def measure(scenario: Scenario, r: int, size: tuple[int, int], width: list[float]) -> float:
        covered, w, _ = rate_coverage(scenario, r, cells, bounds, sizes=size)
        width.append(w)
        return covered
    return _points(measure, scenarios, runs, sizes)


@_method("paired gap (knows vs says)")
def paired_grid(cells: int, scenarios: Sequence[Scenario], runs: Sequence[int], sizes: Sequence[str]
                ) -> list[GridPoint]:
    """The paired difference, the technique arm 0.2 above its baseline in each run."""
    return _points(lambda sc, r, size, width: paired_coverage(sc, 0.2, r, cells, sizes=size, width=width),
                   scenarios, runs, sizes)


@_method("unpaired gap (vs assistant runs)")
def unpaired_grid(cells: int, scenarios: Sequence[Scenario], runs: Sequence[int], sizes: Sequence[str]
                  ) -> list[GridPoint]:
    """The unpaired difference of the scenario's runs and separate homogeneous p = 0.3 runs."""
    return _points(lambda sc, r, size, width: unpaired_coverage(sc, SCENARIOS[0], r, cells, sizes=size, width=width),
                   scenarios, [r for r in runs if r >= 2], sizes)


# The fixed-question benchmark (issue 30): the question is the unit, every question asked the same
# number of times (rollouts); a response rate counts one item per rollout, a fact rate 2-8 facts per
# question and rollout.
QUESTION_COUNTS = (5, 10, 20, 40, 95)
ROLLOUTS = (1, 3, 10)
PER_ROLLOUT = {"draws": (1, 1), "facts (2-8 per draw)": (2, 8)}


def _question_cell(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p, lo, hi, _ = cell_bounds(k, n, event_clusters=True)
    return p, lo, hi


def _question_cell_uncapped(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _cell(k, n)


def _question_unpaired(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return unpaired_bounds(ak, an, bk, bn, event_clusters=True)


QUESTION_METHODS: dict[str, Callable[[Scenario, int, tuple[int, int], int], tuple[float, float]]] = {
    "benchmark cell (as shown)": lambda sc, q, size, cells: rate_coverage(sc, q, cells, _question_cell, sizes=size)[:2],
    "benchmark cell, df not capped by questions with events": lambda sc, q, size, cells: rate_coverage(
        sc, q, cells, _question_cell_uncapped, sizes=size)[:2],
    "benchmark paired gap (by question)": lambda sc, q, size, cells: _with_width(
        lambda width: paired_coverage(sc, 0.2, q, cells, _question_paired, sizes=size, width=width)),
    "benchmark unpaired gap (censored vs control)": lambda sc, q, size, cells: _with_width(
        lambda width: unpaired_coverage(sc, SCENARIOS[0], q, cells, _question_unpaired, sizes=size, width=width)),
    "benchmark unpaired gap, df not capped (the runs' interval)": lambda sc, q, size, cells: _with_width(
        lambda width: unpaired_coverage(sc, SCENARIOS[0], q, cells, sizes=size, width=width)),
}
"""Each benchmark interval's coverage and mean width for (scenario, questions, per-question sizes, cells)."""


def _with_width(measure: Callable[[list[float]], float]) -> tuple[float, float]:
    width: list[float] = []
    covered = measure(width)
    return covered, width[0]


def question_grid(method: str, cells: int, scenarios: Sequence[Scenario], questions: Sequence[int],
                  rollouts: Sequence[int], per_rollout: Sequence[str]) -> list[GridPoint]:
    """One benchmark interval over (scenario, questions per cell, rollouts per question, items per
    rollout); ``runs`` of each point counts questions and ``sizes`` says rollouts and items."""
    out = []
    for scenario in scenarios:
        for q in questions:
            for r in rollouts:
                for items in per_rollout:
                    low, high = PER_ROLLOUT[items]
                    covered, width = QUESTION_METHODS[method](scenario, q, (low * r, high * r), cells)
                    out.append(GridPoint(scenario, q, f"{r} rollout(s), {items}", covered, width))
    return out



EFFECT_METHODS: dict[str, DiffBounds] = {"paired gap (as shown)": _paired,
                                         "paired gap before (t interval alone, issue 26)": paired_t_bounds}
"""The audit's paired gap and the t interval it had before issue 37's guards, over issue 37's effects."""


def effect_grid(bounds: DiffBounds, cells: int, effect_list: Sequence[Effect], runs: Sequence[int],
                sizes: Sequence[str]) -> list[GridPoint]:
    """One paired interval over (effect, runs per cell, run sizes)."""
    out = []
    for e in effect_list:
        for r in runs:
            for size in sizes:
                width: list[float] = []
                covered = effect_coverage(e, r, cells, bounds, sizes=SIZES[size], width=width)
                out.append(GridPoint(e, r, size, covered, width[0]))
    return out


def question_effect_grid(cells: int, effect_list: Sequence[Effect], questions: Sequence[int],
                         rollouts: Sequence[int], per_rollout: Sequence[str], bounds: DiffBounds = _question_paired
                         ) -> list[GridPoint]:
    """The benchmark's paired gap (or ``bounds``) over (effect, questions, rollouts per question, items
    per rollout): the technique acts on a share of the questions."""
    out = []
    for e in effect_list:
        for q in questions:
            for r in rollouts:
                for items in per_rollout:
                    low, high = PER_ROLLOUT[items]
                    width: list[float] = []
                    covered = effect_coverage(e, q, cells, bounds, sizes=(low * r, high * r), width=width)
                    out.append(GridPoint(e, q, f"{r} rollout(s), {items}", covered, width[0]))
    return out

# -- the epistemic matrix with repeats: cards as the unit, repeats nested ----------------------

CARD_COUNTS = (20, 50, 200)
CARD_REPEATS = (1, 2, 3, 5, 10, 20)
CARD_MEANS = (0.05, 0.15, 0.3, 0.5)
CARD_ICCS = (0.0, 0.3, 0.7, 1.0)
"""How alike a card's repeats are: 0 every card has the same rate, 1 every card is answered the
same way every time (a model at temperature 0)."""


@dataclass(frozen=True)
class CardScenario:
    """Cards of one cell, each answered several times; a card's rate is drawn around ``mean`` with
    intraclass correlation ``icc`` between its repeats. With ``entailed`` = 1 the rate's denominator
    is fixed by the cards' labels (LA, FAR_NE, NO_on_U). Below 1 it is a ratio whose denominator
    depends on the answers (AP): that share of the cards is entailed and abstains at rate
    ``abstain_e``, the others at ``mean``, and the rate is the share of abstentions on the others."""

    name: str
    mean: float
    icc: float
    entailed: float = 1.0
    abstain_e: float = 0.0

    @property
    def truth(self) -> float:
        if self.entailed >= 1.0:
            return self.mean
        other = (1 - self.entailed) * self.mean
        return other / (self.entailed * self.abstain_e + other)

    def card_rates(self, rng: np.random.Generator, mean: float, shape: tuple[int, ...]) -> np.ndarray:
        if self.icc == 0:
            return np.full(shape, mean)
        if self.icc >= 1:
            return (rng.random(shape) < mean).astype(float)
        strength = 1 / self.icc - 1
        return rng.beta(mean * strength, (1 - mean) * strength, size=shape)

    def draw(self, rng: np.random.Generator, cells: int, cards: int, repeats: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-card mean numerator and denominator and the denominator count, each (cells, cards)."""
        if self.entailed >= 1.0:
            y = rng.binomial(repeats, self.card_rates(rng, self.mean, (cells, cards))).astype(float)
            return y / repeats, np.ones_like(y), np.full_like(y, repeats)
        entailed = rng.random((cells, cards)) < self.entailed
        rate = np.where(entailed, self.card_rates(rng, self.abstain_e, (cells, cards)),
                        self.card_rates(rng, self.mean, (cells, cards)))
        x = rng.binomial(repeats, rate).astype(float)
        y = np.where(entailed, 0.0, x)
        return y / repeats, x / repeats, x


def card_grid_scenarios(means: Sequence[float] = CARD_MEANS, iccs: Sequence[float] = CARD_ICCS) -> list[CardScenario]:
    """A fixed-denominator rate (LA, FAR_NE, NO_on_U) at every mean and icc, and a ratio rate
    (AP: abstentions on non-entailed cards over all abstentions, 40% of cards entailed) at every icc."""
    fixed = [CardScenario(f"rate {m}, icc {icc}", m, icc) for m in means for icc in iccs]
    ratio = [CardScenario(f"AP-like ratio (abstain 0.1 on E, 0.6 on others), icc {icc}", 0.6, icc, 0.4, 0.1)
             for icc in iccs]
    return fixed + ratio


@dataclass(frozen=True)
class CardPoint:
    """One case of the card grid: the clustered interval's and the old one's coverage and width."""

    scenario: CardScenario
    cards: int
    repeats: int
    coverage: float
    width: float
    old_coverage: float
    old_width: float


def old_card_bounds(y_mean: np.ndarray, x_mean: np.ndarray, x_total: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What :func:`audit.stats.card_rate` shows for the same cards (Wilson over the per-card
    averaged counts), in :func:`audit.stats.cards.card_cluster_bounds`'s shape, to compare."""
    k, n = y_mean.sum(axis=-1), x_mean.sum(axis=-1)
    rate = k / np.where(n > 0, n, 1)
    lo, hi = wilson_bounds(rate, np.where(n > 0, n, 1), Z_95)
    return rate, lo, hi, np.ones_like(n, dtype=bool)


def _log_factorials(n: int) -> np.ndarray:
    """``log(i!)`` for i = 0..n."""
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1)))))


def _log(p: float) -> float:
    """log p, -inf at 0 (a scenario where every card answers alike has probabilities 0 and 1)."""
    with np.errstate(divide="ignore"):
        return float(np.log(p))


def _log1m(p: float) -> float:
    """log(1 - p), -inf at 1."""
    with np.errstate(divide="ignore"):
        return float(np.log1p(-p))


def _k_log(k: np.ndarray, log_p: float) -> np.ndarray:
    """k · log p with 0 · log 0 = 0: an outcome count of 0 at probability 0 is certain, not NaN."""
    with np.errstate(invalid="ignore"):
        return np.where(k == 0, 0.0, k * log_p)


def every_card_outcome(scenario: CardScenario, cards: int, repeats: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every cell a scenario can give when each card has one 0/1 outcome (its answers all agree: icc 1,
    or a single answer per card), in :meth:`CardScenario.draw`'s shape, one row per outcome, and each
    row's probability. A fixed-denominator rate's cell is fixed by how many cards answered 1 (binomial);
    a ratio's by how many entailed and how many other cards abstained (multinomial). Rows whose
    probability is below 1e-15 are left out."""
    logf = _log_factorials(cards)
    if scenario.entailed >= 1.0:
        hits = np.arange(cards + 1)
        pmf = np.exp(logf[cards] - logf[hits] - logf[cards - hits]
                     + _k_log(hits, _log(scenario.mean)) + _k_log(cards - hits, _log1m(scenario.mean)))
        keep = pmf > 1e-15
        hits, pmf = hits[keep], pmf[keep]
        y = (np.arange(cards) < hits[:, None]).astype(float)
        x = np.ones_like(y)
    else:
        # a card abstains on an entailed claim, abstains on another, or neither
        shares = np.array([scenario.entailed * scenario.abstain_e, (1 - scenario.entailed) * scenario.mean])
        a, b = (g.ravel() for g in np.meshgrid(np.arange(cards + 1), np.arange(cards + 1), indexing="ij"))
        a, b = a[a + b <= cards], b[a + b <= cards]
        rest = cards - a - b
        pmf = np.exp(logf[cards] - logf[a] - logf[b] - logf[rest] + _k_log(a, _log(shares[0])) + _k_log(b, _log(shares[1]))
                     + _k_log(rest, _log1m(shares.sum())))
        keep = pmf > 1e-15
        a, b, pmf = a[keep], b[keep], pmf[keep]
        position = np.arange(cards)
        x = (position < (a + b)[:, None]).astype(float)
        y = x * (position >= a[:, None])
    return y, x, x * repeats, pmf


def _card_coverage(bounds: Callable[..., Any], scenario: CardScenario, cards: int, repeats: int, cells: int
                   ) -> tuple[float, float]:
    """Coverage and mean width over the cells whose rate is defined. Where every card has one 0/1
    outcome (icc 1: its repeats are copies; or one answer per card) the cell can take only a few
    hundred values and both are exact (:func:`every_card_outcome`): a simulation of 1,000 cells put
    rate 0.5, icc 1, 50 cards at 0.919, 1.8 standard errors below its exact 0.935, and 4,000 cells
    put rate 0.05, 20 cards at 0.930 above its exact 0.925. Elsewhere ``cells`` simulated cells."""
    if scenario.icc >= 1 or repeats == 1:
        y, x, total, weight = every_card_outcome(scenario, cards, repeats)
    else:
        y, x, total = scenario.draw(np.random.default_rng(SEED), cells, cards, repeats)
        weight = np.ones(len(y))
    _, lo, hi, _ = bounds(y, x, total)
    defined = x.sum(axis=-1) > 0
    lo, hi, weight = lo[defined], hi[defined], weight[defined] / weight[defined].sum()
    covered = (lo <= scenario.truth) & (scenario.truth <= hi)
    return float(np.sum(weight * covered)), float(np.sum(weight * (hi - lo)))


def card_grid(cells: int, scenarios: Sequence[CardScenario], card_counts: Sequence[int] = CARD_COUNTS,
              repeats: Sequence[int] = CARD_REPEATS) -> list[CardPoint]:
    """The epistemic matrix's card-clustered interval (:func:`audit.stats.cards.card_cluster_bounds`)
    and the old one over every case (exact or ``cells`` simulated cells: :func:`_card_coverage`)."""
    return [CardPoint(s, m, r, *_card_coverage(card_cluster_bounds, s, m, r, cells),
                      *_card_coverage(old_card_bounds, s, m, r, cells))
            for s in scenarios for m in card_counts for r in repeats]


def overlapping_sets_coverage(rate: float, pool: int, per_set: int, cells: int, seed: int = SEED
                              ) -> tuple[float, float, float]:
    """Two card sets drawn from one pool of claims (two ``cards.seed`` of one domain), each claim's
    answer fixed by the claim (a cached reply, a model at temperature 0; the pool's answers drawn
    around ``rate`` afresh in every cell): the coverage of Wilson over the two sets added as if
    disjoint (a shared card counted twice) and of the card-clustered interval over the distinct
    cards (:func:`audit.stats.cards.card_cluster_bounds`, a shared card one card answered twice),
    and the mean number of shared cards."""
    rng = np.random.default_rng(seed)
    added = distinct = shared = 0
    for _ in range(cells):
        answers = rng.random(pool) < rate
        first, second = rng.choice(pool, per_set, replace=False), rng.choice(pool, per_set, replace=False)
        k = answers[first].sum() + answers[second].sum()
        lo, hi = wilson_bounds(np.asarray(k / (2 * per_set)), np.asarray(2 * per_set), Z_95)
        added += int(lo <= rate <= hi)
        cards, repeats = np.unique(np.concatenate([first, second]), return_counts=True)
        y = answers[cards].astype(float)[None]
        _, lo, hi, _ = card_cluster_bounds(y, np.ones_like(y), repeats[None].astype(float))
        distinct += int(lo[0] <= rate <= hi[0])
        shared += int((repeats == 2).sum())
    return added / cells, distinct / cells, shared / cells
