"""Precision, recall and kappa against human labels: failures, labels nobody used, several runs."""

from __future__ import annotations

import pytest

from audit.judge_check.metrics import validate

CATS = ("refused", "deflected", "forthcoming")


def test_failures_leave_every_denominator():
    human = ["refused", "refused", "deflected", "forthcoming"]
    judged = ["refused", None, "deflected", "refused"]
    m = validate(human, judged, [None] * 4, CATS, resamples=200)
    assert (m["judged"], m["failed"]) == (3, 1)
    assert m["per_label"]["refused"]["recall"]["n"] == 1  # the failed refused response is not a miss
    assert m["per_label"]["refused"]["precision"]["value"] == 0.5
    assert m["per_label"]["forthcoming"]["precision"] is None  # the judge never said it: n/a, not 0
    assert m["confusion"]["missing"] == 1 and m["kappa"]["n"] == 3


def test_several_runs_give_intervals_over_runs():
    human = ["refused", "deflected"] * 12
    judged = ["refused", "deflected"] * 10 + ["deflected", "deflected"] * 2
    runs = [f"run{k // 6}" for k in range(24)]
    m = validate(human, judged, runs, CATS, resamples=200)
    assert m["runs"] == 4 and m["kappa"]["unit"] == "runs" and m["kappa"]["runs"] == 4
    recall = m["per_label"]["refused"]["recall"]
    assert (recall["unit"], recall["runs"], recall["k"], recall["n"]) == ("runs", 4, 10, 12)
    single = validate(human, judged, [None] * 24, CATS, resamples=200)
    assert single["per_label"]["refused"]["recall"]["unit"] == "responses"
    assert single["kappa"]["value"] == pytest.approx(m["kappa"]["value"])


def test_lengths_must_match():
    with pytest.raises(ValueError):
        validate(["refused"], [], [None], CATS)
