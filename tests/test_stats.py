"""The statistics module: Wilson, run-level intervals, paired/unpaired gaps, and their coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.coverage import RUN_COUNTS, SCENARIOS, Scenario, paired_coverage, rate_coverage, unpaired_coverage
from audit.stats import (CLUSTER_METHOD, WILSON_METHOD, cluster_rate, paired_difference, t_975, unpaired_difference,
                         wilson)

CELLS = 4000  # simulated cells per scenario and run count: Monte Carlo error about 0.003 at 0.95


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_run_level_interval_covers_at_three_runs_or_more(scenario: Scenario) -> None:
    coverage = {runs: rate_coverage(scenario, runs, CELLS) for runs in RUN_COUNTS}
    for runs, (covered, width, zero_width) in coverage.items():
        assert zero_width == 0, f"{scenario.name}, {runs} runs: {zero_width:.1%} zero-width intervals"
        if runs >= 3:
            assert covered >= 0.93, f"{scenario.name}, {runs} runs: coverage {covered:.3f}"
        assert width < 1
    # More runs, narrower intervals: the method learns from runs rather than staying at [0, 1].
    widths = [coverage[runs][1] for runs in RUN_COUNTS]
    assert widths == sorted(widths, reverse=True)


def test_the_coverage_check_can_fail() -> None:
    """The same simulation finds the under-coverage of a naive interval (Wilson over every
    response as if independent) when runs differ: the check is not vacuous."""
    def naive(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        bounds = [wilson(int(a), int(b)) for a, b in zip(k.sum(axis=1), n.sum(axis=1))]
        return (np.array([b["value"] for b in bounds]), np.array([b["lo"] for b in bounds]),  # type: ignore[index]
                np.array([b["hi"] for b in bounds]))  # type: ignore[index]
    covered, _, _ = rate_coverage(SCENARIOS[2], 8, 1000, naive)
    assert covered < 0.85


@pytest.mark.parametrize("scenario", SCENARIOS[::2], ids=lambda s: s.name)
def test_difference_intervals_cover(scenario: Scenario) -> None:
    for runs in RUN_COUNTS[1:]:
        assert paired_coverage(scenario, 0.2, runs, CELLS) >= 0.93
        assert unpaired_coverage(scenario, SCENARIOS[0], runs, CELLS) >= 0.93


def test_cluster_interval_is_wider_than_pooled_wilson_when_runs_disagree() -> None:
    ks, ns = [0, 10, 1, 9, 0, 10], [10] * 6  # runs that disagree: all or nothing
    clustered, pooled = cluster_rate(ks, ns), wilson(sum(ks), sum(ns))
    assert clustered is not None and pooled is not None
    assert clustered["value"] == pooled["value"] == 0.5
    assert clustered["hi"] - clustered["lo"] > 1.5 * (pooled["hi"] - pooled["lo"])
    assert (clustered["runs"], clustered["n"], clustered["spread"], clustered["method"], clustered["unit"]) == \
        (6, 60, (0.0, 1.0), CLUSTER_METHOD, "runs")


@pytest.mark.parametrize(("ks", "ns"), [([5] * 6, [10] * 6), ([9, 0], [9, 0]), ([5, 4], [5, 4]), ([0, 0, 0], [3, 4, 5])])
def test_agreeing_runs_never_give_a_zero_width_interval(ks: list[int], ns: list[int]) -> None:
    clustered = cluster_rate(ks, ns)
    assert clustered is not None and clustered["hi"] - clustered["lo"] > 0.05
    # Never narrower than treating every response as an independent draw.
    pooled = wilson(sum(ks), sum(ns))
    assert pooled is not None and clustered["lo"] <= pooled["lo"] and clustered["hi"] >= pooled["hi"]


def test_cluster_rate_is_deterministic_and_skips_runs_that_counted_nothing() -> None:
    ks, ns = [1, 3, 0, 2, math.nan], [4, 4, 0, 5, math.nan]
    assert cluster_rate(ks, ns) == cluster_rate(ks, ns)
    assert cluster_rate(ks, ns)["runs"] == 3  # type: ignore[index]
    assert cluster_rate([0], [0]) is None and cluster_rate([], []) is None


def test_a_single_run_falls_back_to_wilson_over_responses_and_says_so() -> None:
    single = cluster_rate([3], [10])
    assert single is not None and single["method"] == WILSON_METHOD.format(items="responses")
    assert single["unit"] == "responses" and cluster_rate([3], [6], items="facts")["unit"] == "facts"  # type: ignore[index]
    assert (single["lo"], single["hi"]) == pytest.approx((wilson(3, 10)["lo"], wilson(3, 10)["hi"]))  # type: ignore[index]


def test_t_quantiles() -> None:
    assert t_975(1) == pytest.approx(12.706, abs=1e-3) and t_975(4) == pytest.approx(2.776, abs=1e-3)
    assert t_975(60) == pytest.approx(2.0003, abs=1e-4) and t_975(1000) == pytest.approx(1.9623, abs=1e-4)
    with pytest.raises(ValueError, match="at least 1"):
        t_975(0)


def test_paired_difference_keeps_the_arms_of_a_run_together() -> None:
    # Every run: the technique refuses 1 of 8 fewer than the assistant on the same probes, though
    # the runs' levels differ widely. Paired, the spread between runs cancels.
    a_k, b_k, n = [0, 4, 6, 2, 7], [1, 5, 7, 3, 8], [8] * 5
    gap = paired_difference(a_k, n, b_k, n)
    unpaired = unpaired_difference(a_k, n, b_k, n)
    assert gap is not None and unpaired is not None
    assert gap["value"] == pytest.approx(-0.125) and gap["lo"] < -0.125 < gap["hi"] and gap["runs"] == 5
    assert gap["hi"] - gap["lo"] > 0  # identical gaps in every run still leave response-level noise
    assert unpaired["hi"] - unpaired["lo"] > 1.3 * (gap["hi"] - gap["lo"])  # ignoring the pairing loses precision


def test_differences_without_enough_runs() -> None:
    one = paired_difference([0], [4], [4], [4])
    assert one is not None and one["value"] == -1.0 and math.isnan(one["lo"])
    assert paired_difference([1], [0], [1], [4]) is None  # an arm that counted nothing
    assert unpaired_difference([1], [4], [], []) is None
    with pytest.raises(ValueError, match="one entry per run"):
        paired_difference([1, 2], [4], [1], [4])
