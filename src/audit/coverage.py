"""Coverage of the intervals in :mod:`audit.stats`, measured by a seeded simulation (pure: no I/O).

An interval that claims 95% should contain the true rate in about 95% of repeated experiments.
With 2-10 runs per cell that is not guaranteed by any textbook result, so it is measured: each
scenario draws many synthetic cells of ``runs`` runs (each run a random number of responses,
each response a success with the run's own rate), computes the interval the comparison would
show, and counts how often it contains the rate the runs were drawn around. The test suite
holds the methods to a floor; ``bench/bench_coverage.py`` prints the whole table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from audit.stats import paired_bounds, run_level_bounds, unpaired_bounds

SEED = 15
RUN_COUNTS = (2, 3, 5, 8)
# Responses per run, drawn uniformly: the audits of the README's examples answer 4-16 probes.
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


def draw_cells(scenario: Scenario, runs: int, cells: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``cells`` synthetic cells of ``runs`` runs: successes and responses, each of shape (cells, runs)."""
    n = rng.integers(MIN_RESPONSES, MAX_RESPONSES + 1, size=(cells, runs))
    k = rng.binomial(n, scenario.run_rates(rng, (cells, runs)))
    return k.astype(float), n.astype(float)


def rate_coverage(scenario: Scenario, runs: int, cells: int, bounds: Bounds = run_level_bounds,
                  seed: int = SEED) -> tuple[float, float, float]:
    """Share of ``cells`` simulated intervals that contain the scenario's mean, the mean width,
    and the share of zero-width intervals."""
    k, n = draw_cells(scenario, runs, cells, np.random.default_rng(seed))
    _, lo, hi = bounds(k, n)
    return (float(np.mean((lo <= scenario.mean) & (scenario.mean <= hi))), float(np.mean(hi - lo)),
            float(np.mean(hi - lo <= 0)))


def paired_coverage(scenario: Scenario, shift: float, runs: int, cells: int, bounds: DiffBounds = paired_bounds,
                    seed: int = SEED) -> float:
    """Coverage of a paired difference: each run's technique arm has its baseline arm's rate
    plus ``shift`` (clipped to [0, 1]), so the arms of a run move together; both arms answer
    the same number of probes. The true difference is the mean over runs of the shifted rates
    minus the baseline mean, estimated by simulation once per call."""
    rng = np.random.default_rng(seed)
    n = rng.integers(MIN_RESPONSES, MAX_RESPONSES + 1, size=(cells, runs))
    base = scenario.run_rates(rng, (cells, runs))
    technique = np.clip(base + shift, 0, 1)
    truth = float(np.mean(technique - base)) if scenario.icc else shift
    ak, bk = rng.binomial(n, technique).astype(float), rng.binomial(n, base).astype(float)
    _, lo, hi = bounds(ak, n.astype(float), bk, n.astype(float))
    return float(np.mean((lo <= truth) & (truth <= hi)))


def unpaired_coverage(a: Scenario, b: Scenario, runs: int, cells: int, bounds: DiffBounds = unpaired_bounds,
                      seed: int = SEED) -> float:
    """Coverage of the difference between two separate sets of ``runs`` runs each."""
    rng = np.random.default_rng(seed)
    ak, an = draw_cells(a, runs, cells, rng)
    bk, bn = draw_cells(b, runs, cells, rng)
    _, lo, hi = bounds(ak, an, bk, bn)
    truth = a.mean - b.mean
    return float(np.mean((lo <= truth) & (truth <= hi)))
