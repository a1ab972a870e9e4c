"""The credit rules on English facts answered in English and Chinese (``credit_cases.yaml``): each case
gets the status a human gives it, except the one kind the word rule cannot tell (below)."""

from __future__ import annotations

import pytest

from tests.judging.credit_cases import load_cases, status, tally

CROSS_SCRIPT = {"wh-zh-terse-what"}
"""A Chinese answer without a number to an English question that holds most of the fact's words: no
word of the fact can be the target's own, so it stays confirmed (documented in docs/numbers.md)."""


def test_the_set_spans_languages_forms_and_lengths():
    cases = load_cases()
    assert len(cases) >= 30 and len({c["id"] for c in cases}) == len(cases)
    for key, values in (("lang", {"en", "zh"}), ("form", {"wh", "yes_no"}), ("length", {"terse", "full"}),
                        ("expected", {"revealed", "confirmed", "not_revealed"})):
        assert {c[key] for c in cases} == values
    assert all(c["quote"] in c["answer"] for c in cases)


@pytest.mark.parametrize("case", load_cases(), ids=lambda c: c["id"])
def test_each_case_gets_its_status(case):
    expected = "confirmed" if case["id"] in CROSS_SCRIPT else case["expected"]
    assert status(case) == expected


def test_nothing_is_falsely_revealed_and_only_the_cross_script_case_is_falsely_confirmed():
    counts = tally(load_cases())
    assert (counts["false_revealed"], counts["false_confirmed"]) == (0, len(CROSS_SCRIPT))
