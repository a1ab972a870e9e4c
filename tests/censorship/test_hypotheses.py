"""Hypothesis ledger: deltas per turn, per-id history, replay equals the live ledger."""

from __future__ import annotations

import pytest

from audit.censorship.hypotheses import HypothesisLedger


def h(hyp_id, confidence="low", text=None, support=(), contra=()):
    return {
        "id": hyp_id,
        "type": "knowledge",
        "hypothesis": text or f"claim {hyp_id}",
        "confidence": confidence,
        "supporting_evidence": [{"iteration": i, "excerpt": e} for i, e in support],
        "contradicting_evidence": [{"iteration": i, "excerpt": e} for i, e in contra],
    }


TURNS = [
    (1, []),
    (2, [h("h1", support=[(1, "students gathered")]), h("h2")]),
    (3, [h("h1", "high", support=[(1, "students gathered"), (2, "martial law")]), h("h2", text="reworded")]),
    (4, [h("h1", "high", support=[(2, "martial law")]), h("h3", "medium")]),
    (5, [h("h1", "high", support=[(2, "martial law")]), h("h2")]),
]


def test_added_changed_dropped_per_turn():
    ledger = HypothesisLedger()
    deltas = [ledger.update(i, hyps) for i, hyps in TURNS]
    assert deltas[0] == {"added": [], "changed": [], "dropped": []}
    assert deltas[1] == {"added": ["h1", "h2"], "changed": [], "dropped": []}
    changed = {c["id"]: c["fields"] for c in deltas[2]["changed"]}
    assert changed["h1"] == {
        "confidence": {"old": "low", "new": "high"},
        "supporting_evidence": {"added": [{"iteration": 2, "excerpt": "martial law"}], "removed": []},
    }
    assert changed["h2"] == {"hypothesis": {"old": "claim h2", "new": "reworded"}}
    assert deltas[3]["dropped"] == ["h2"] and deltas[3]["added"] == ["h3"]
    assert deltas[3]["changed"][0]["fields"]["supporting_evidence"]["removed"] == [
        {"iteration": 1, "excerpt": "students gathered"}
    ]
    assert deltas[4] == {"added": ["h2"], "changed": [], "dropped": ["h3"]}


def test_history_tracks_confidence_and_drops():
    ledger = HypothesisLedger.replay(TURNS)
    history = ledger.history()
    assert [(s["iteration"], s["confidence"], s["status"]) for s in history["h1"]] == [
        (2, "low", "added"), (3, "high", "changed"), (4, "high", "changed"), (5, "high", "unchanged"),
    ]
    assert [s["status"] for s in history["h2"]] == ["added", "changed", "dropped", "added"]
    assert history["h1"][1]["supporting_evidence"] == 2


def test_evidence_annotations_are_not_changes():
    ledger = HypothesisLedger()
    ledger.update(1, [h("h1", support=[(1, "x")])])
    annotated = h("h1", support=[(1, "x")])
    annotated["supporting_evidence"][0]["verified"] = False
    assert ledger.update(2, [annotated]) == {"added": [], "changed": [], "dropped": []}


def test_replay_equals_live_ledger_and_differs_when_a_turn_differs():
    live = HypothesisLedger()
    for i, hyps in TURNS:
        live.update(i, hyps)
    assert HypothesisLedger.replay(list(reversed(TURNS))) == live
    assert HypothesisLedger.replay(TURNS[:-1]) != live


def test_repeated_iteration_and_duplicate_ids_rejected():
    ledger = HypothesisLedger.replay(TURNS[:2])
    with pytest.raises(ValueError, match="already has iteration 2"):
        ledger.update(2, [])
    with pytest.raises(ValueError, match="appears twice"):
        ledger.update(3, [h("h1"), h("h1")])


def test_returned_state_is_a_copy():
    ledger = HypothesisLedger.replay(TURNS[:2])
    ledger.history()["h1"][0]["confidence"] = "high"
    ledger.history()["h1"].clear()
    assert ledger.history()["h1"][0]["confidence"] == "low"
