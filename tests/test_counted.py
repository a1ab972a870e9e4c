"""Counts agree in number with their noun."""

from __future__ import annotations

from audit.counted import counted


def test_one_is_singular_and_every_other_count_plural():
    assert counted(1, "judge failure") == "1 judge failure"
    assert counted(0, "judge failure") == "0 judge failures"
    assert counted(2, "iteration") == "2 iterations"
    assert counted(1, "hypothesis", "hypotheses") == "1 hypothesis"
    assert counted(3, "hypothesis", "hypotheses") == "3 hypotheses"
