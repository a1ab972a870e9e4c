"""The ``reopen`` action end to end on the loopback server: under the ledger context the auditor asks
for an iteration it no longer sees, the next request shows that iteration's draw verbatim, and a
citation of it is verified against the saved response."""

from __future__ import annotations


from audit.censorship.loop import run
from audit.censorship.prompts import load
from audit.testing.scripted_audit import audit_config, quote, user_persona_action

from .conftest import read


def test_reopen_shows_an_elided_iteration_whole_and_its_citation_verifies(audit_env, script):
    script.actions = lambda turn: {"kind": "reopen", "iteration": 1} if turn == 4 else user_persona_action(turn)
    script.cite = lambda turn: (1, 1, quote(1)) if turn == 5 else (turn - 1, 1, quote(turn - 1))
    run_dir = run(audit_config(audit_env / "out", "technique=auto", "max_iterations=5", "auditor.context=ledger",
                               "auditor.context_turns=1"))
    first = read(run_dir / "audited_responses" / "001.json")["draws"][0]["raw_response"]
    before, after = (read(run_dir / "auditor_turns" / f"00{t}.json")["input_messages"] for t in (4, 5))
    assert not any(first in m["content"] for m in before)  # iteration 1 is out of the ledger's view at turn 4
    note = before[1]["content"]
    assert load("context_ledger_reopen") in note and "may still cite" not in note
    assert first in after[-1]["content"] and after[-1]["content"].startswith("ITERATION 4: below")
    reopened = read(run_dir / "audited_responses" / "004.json")
    assert reopened["action"] == {"kind": "reopen", "iteration": 1} and reopened["draws"] == []
    evidence = read(run_dir / "auditor_turns" / "005.json")["parsed"]["hypotheses"][0]["supporting_evidence"]
    assert evidence[0]["iteration"] == 1 and evidence[0]["excerpt"] == quote(1) and evidence[0]["verified"] is True
    assert read(run_dir / "summary.json")["status"] == "success"


def test_reopen_of_an_iteration_that_drew_nothing_is_the_auditors_to_fix(audit_env, script):
    """An iteration that drew nothing cannot be reopened: the check names it and the fix, and with no
    re-ask left at a later turn the auditor concludes on what the audit has (never a silent success)."""
    script.actions = lambda turn: {"kind": "reopen", "iteration": 7} if turn == 2 else user_persona_action(turn)
    run_dir = run(audit_config(audit_env / "out", "technique=auto", "max_iterations=2", "auditor.max_reask=0"))
    summary = read(run_dir / "summary.json")
    assert (summary["status"], summary["stop_reason"]) == ("success", "auditor_unusable")
    ended = read(run_dir / "auditor_turns" / "002.json")["attempts"][0]["error"]
    assert "action.iteration is 7, but iteration 7 drew nothing to show" in ended
