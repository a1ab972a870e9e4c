"""The statistics module: Wilson, run-level intervals, paired/unpaired gaps, and their coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.stats.coverage import RUN_COUNTS, SCENARIOS, Scenario, paired_coverage, rate_coverage, unpaired_coverage
from audit.stats.intervals import (CLUSTER_METHOD, WILSON_METHOD, cluster_rate, paired_difference, paired_t_bounds, t_975,
                         unpaired_difference, wilson)

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


def test_three_runs_without_events_give_a_paired_gap_as_wide_as_they_justify() -> None:
    """Issue 37's example: 3 runs of 10 responses, no event in either arm. A technique that works
    completely in a share f of the runs is missed by all 3 with probability (1 − f)³, so a 95% interval
    must reach f = 1 − 0.025^(1/3) (0.71) above 0, and as far below (the baseline can hide as much). The
    paired gap was [−0.19, 0.19]; it now holds the unpaired interval of the same runs and says why."""
    gap = paired_difference([0] * 3, [10] * 3, [0] * 3, [10] * 3)
    same_runs = unpaired_difference([0] * 3, [10] * 3, [0] * 3, [10] * 3)
    assert gap is not None and same_runs is not None
    justified = 1 - 0.025 ** (1 / 3)
    assert gap["lo"] <= -justified and gap["hi"] >= justified
    assert (gap["lo"], gap["hi"]) == pytest.approx((same_runs["lo"], same_runs["hi"]))
    assert "fewer than 8 events on its rarer side" in gap["method"] and "not every run shows" in gap["method"]


def _arrays(*lists: list[int]) -> list[np.ndarray]:
    return [np.asarray(x, dtype=float) for x in lists]


def test_a_difference_every_run_shows_keeps_its_t_interval() -> None:
    """Where every run shows the difference and neither arm is rare, the paired gap is the t interval
    it was before issue 37's guards, and its method says nothing more."""
    a_k, b_k, n = [9, 8, 10, 9], [2, 3, 1, 2], [12] * 4
    gap = paired_difference(a_k, n, b_k, n)
    _, lo, hi = paired_t_bounds(*_arrays(a_k, n, b_k, n))
    assert gap is not None and (gap["lo"], gap["hi"]) == pytest.approx((float(lo), float(hi)))
    assert gap["method"] == "paired 95% t interval over runs (runs − 1 degrees of freedom), variance from the spread " \
        "between runs, at least the binomial variance of the responses"


def test_a_difference_some_runs_do_not_show_reaches_what_could_hide_in_them() -> None:
    """Five runs of 40 responses where the technique moves nothing beyond noise (both arms about 0.14,
    neither rare): a technique that works completely in some runs could have been missed by all five, so
    the gap reaches as far as the technique arm moving to 1 in 1 − 0.05^(1/5) of the runs (0.45), where
    the t interval alone stopped at about ±0.10 (issue 37: 0.75 coverage at 22% of runs)."""
    a_k, b_k, n = [5, 6, 5, 6, 5], [6, 5, 6, 6, 5], [40] * 5
    gap = paired_difference(a_k, n, b_k, n)
    assert gap is not None and "not every run shows" in gap["method"] and "fewer than 8" not in gap["method"]
    share, pa = 1 - 0.05 ** (1 / 5), sum(a_k) / sum(n)
    assert gap["hi"] >= gap["value"] + share * (1 - pa) - 1e-12 and gap["lo"] <= gap["value"] - share * pa + 1e-12
    _, lo, hi = paired_t_bounds(*_arrays(a_k, n, b_k, n))
    assert gap["hi"] > float(hi)  # the guard widened it
