"""The statistics module: Wilson, run-level (cluster) intervals and paired/unpaired gaps."""

from __future__ import annotations

import math

import pytest

from audit.stats import CLUSTER_METHOD, WILSON_METHOD, cluster_rate, paired_difference, unpaired_difference, wilson


def test_cluster_interval_is_wider_than_pooled_wilson_when_runs_disagree() -> None:
    ks, ns = [0, 10, 1, 9, 0, 10], [10] * 6  # runs that disagree: all or nothing
    clustered, pooled = cluster_rate(ks, ns), wilson(sum(ks), sum(ns))
    assert clustered is not None and pooled is not None
    assert clustered["value"] == pooled["value"] == 0.5
    assert clustered["hi"] - clustered["lo"] > 1.5 * (pooled["hi"] - pooled["lo"])
    assert (clustered["runs"], clustered["n"], clustered["spread"], clustered["method"]) == (6, 60, (0.0, 1.0), CLUSTER_METHOD)


def test_cluster_interval_is_no_wider_than_wilson_when_runs_agree() -> None:
    clustered, pooled = cluster_rate([5] * 6, [10] * 6), wilson(30, 60)
    assert clustered is not None and pooled is not None
    assert (clustered["lo"], clustered["hi"]) == (0.5, 0.5)  # no between-run spread at all
    assert clustered["hi"] - clustered["lo"] < pooled["hi"] - pooled["lo"]


def test_cluster_rate_is_seeded_and_skips_runs_that_counted_nothing() -> None:
    ks, ns = [1, 3, 0, 2, math.nan], [4, 4, 0, 5, math.nan]
    assert cluster_rate(ks, ns) == cluster_rate(ks, ns)
    assert cluster_rate(ks, ns)["runs"] == 3  # type: ignore[index]
    assert cluster_rate([0], [0]) is None and cluster_rate([], []) is None


def test_a_single_run_falls_back_to_wilson_and_says_so() -> None:
    single = cluster_rate([3], [10])
    assert single is not None and single["method"] == WILSON_METHOD
    assert (single["lo"], single["hi"]) == pytest.approx((wilson(3, 10)["lo"], wilson(3, 10)["hi"]))  # type: ignore[index]


def test_paired_difference_keeps_the_arms_of_a_run_together() -> None:
    # Every run: the technique refuses 1 of 4 fewer than the assistant on the same probes, though
    # the runs' levels differ widely. Paired, the gap is exactly -0.25 in every resample.
    gap = paired_difference([0, 2, 3], [4, 4, 4], [1, 3, 4], [4, 4, 4])
    assert gap is not None and (gap["value"], gap["lo"], gap["hi"]) == pytest.approx((-0.25, -0.25, -0.25))
    assert gap["runs"] == 3
    unpaired = unpaired_difference([0, 2, 3], [4, 4, 4], [1, 3, 4], [4, 4, 4])
    assert unpaired is not None and unpaired["value"] == pytest.approx(-0.25)
    assert unpaired["hi"] - unpaired["lo"] > 0.3  # ignoring the pairing loses the precision


def test_differences_without_enough_runs() -> None:
    one = paired_difference([0], [4], [4], [4])
    assert one is not None and one["value"] == -1.0 and math.isnan(one["lo"])
    assert paired_difference([1], [0], [1], [4]) is None  # an arm that counted nothing
    assert unpaired_difference([1], [4], [], []) is None
    with pytest.raises(ValueError, match="one entry per run"):
        paired_difference([1, 2], [4], [1], [4])
