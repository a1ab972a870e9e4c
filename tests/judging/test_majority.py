"""The panel majority rule: ties, failed members, and no dependence on member order."""

from __future__ import annotations

import itertools

import pytest

from audit.judging.majority import DISPUTED, FAILED, MAJORITY, panel_label, tally


def one_each(*votes: str | None) -> dict[str, list[str | None]]:
    return {f"judge{k}": [v] for k, v in enumerate(votes)}


@pytest.mark.parametrize("votes, label, outcome", [
    (("refused", "refused", "deflected"), "refused", MAJORITY),
    (("refused", "deflected", "partial"), DISPUTED, DISPUTED),
    (("refused", "deflected"), DISPUTED, DISPUTED),                   # a two-way tie
    (("refused", "refused", None), "refused", MAJORITY),              # 2 of 3, failure included
    (("refused", "deflected", None), None, FAILED),                   # the failed member would decide
    (("refused", None, None), None, FAILED),
    ((None, None, None), None, FAILED),
    (("refused", "deflected", "partial", None), DISPUTED, DISPUTED),  # no outcome of the failure gives 3 of 4
    (("refused", "refused", None, None), None, FAILED),               # 2 of 4 is not a majority
    (("refused", "refused", "refused", None, None), "refused", MAJORITY),
])
def test_rule(votes, label, outcome):
    verdict = panel_label(one_each(*votes))
    assert (verdict.label, verdict.outcome) == (label, outcome)
    assert verdict.votes == len(votes)
    assert len(verdict.failures) == votes.count(None)


@pytest.mark.parametrize("votes", [("refused", "deflected"), ("refused", "deflected", None),
                                   ("a", "a", "b", "b"), ("a", "b", "c")])
def test_a_tie_never_depends_on_member_order(votes):
    outcomes = {(panel_label(one_each(*order)).label, panel_label(one_each(*order)).outcome)
                for order in itertools.permutations(votes)}
    assert len(outcomes) == 1
    assert outcomes.pop()[0] in (DISPUTED, None)


def test_samples_are_votes_of_equal_weight():
    # Two members, three samples each: 4 of 6 votes say refused.
    verdict = panel_label({"a": ["refused", "refused", "partial"], "b": ["refused", "partial", "refused"]})
    assert (verdict.label, verdict.counts, verdict.votes) == ("refused", {"partial": 2, "refused": 4}, 6)
    tied = panel_label({"a": ["refused", "refused", "partial"], "b": ["partial", "partial", "refused"]})
    assert tied.label == DISPUTED


def test_failed_members_are_recorded_with_their_errors():
    verdict = panel_label({"a": ["refused", None], "b": ["refused", "refused"]},
                          errors={"a": [None, "judge reply not JSON"]})
    assert verdict.label == "refused"  # 3 of 4
    (failure,) = verdict.failures
    assert (failure.member, failure.sample, failure.error) == ("a", 1, "judge reply not JSON")
    saved = verdict.as_dict()
    assert saved["failed"] == 1 and saved["members"]["a"] == ["refused", None]


@pytest.mark.parametrize("votes", [{}, {"a": ["x"], "b": ["x", "y"]}, {"a": []}, {"a": [DISPUTED]}, {"a": [""]}])
def test_bad_panels_are_refused(votes):
    with pytest.raises(ValueError):
        panel_label(votes)


def test_tally_counts_disputed_and_failed_items():
    verdicts = [panel_label(one_each(*v)) for v in (("a", "a", "b"), ("a", "b", "c"), ("a", "b", None), ("b", "b", "b"))]
    assert tally(verdicts) == {"items": 4, "labels": {"a": 1, "b": 1, DISPUTED: 1},
                               "outcomes": {MAJORITY: 2, DISPUTED: 1, FAILED: 1}, "failed_votes": 1}
