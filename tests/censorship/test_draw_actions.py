"""The draw actions answer the loop alike for a fixed technique (a menu of one action) and for
``technique=auto``: the draws left, the check of a reply's action and the per-technique labels come
from the run's kind of actions, so the loop never branches on it."""

from __future__ import annotations

import sys

import pytest

from audit.censorship.action_kinds import ACTIONS
from audit.censorship.actions import Action
from audit.censorship.draw_actions import AutoMenu, FixedTechnique
from audit.censorship.hypotheses import HypothesisLedger
from audit.censorship.plan import Plan
from audit.censorship.prompts import auto_output_format
from audit.censorship.schema import AUDITOR_RESPONSE_FORMATS, NEXT, Menu, ReplyError, response_formats, validate_reply
from audit.censorship.state import AuditState
from audit.llm.accounting import Totals
from audit.testing.scripted_audit import audit_config


def state(responses):
    return AuditState(technique="auto", turns={}, responses=responses, ledger=HypothesisLedger(),
                      conversation=None, failed_turns=[], totals=Totals(), started_at="", resumes=[])


def auto_draw(iteration, n, technique, label):
    return {"id": f"{iteration}.{n}", "technique": technique, "raw_response": "x", "error": None,
            "classification": {"label": label}}


SAVED = {1: {"iteration": 1, "technique": "auto", "action": {"kind": "batch"}, "baseline": None,
             "draws": [auto_draw(1, 1, "user_persona", "refused"), auto_draw(1, 2, "prefill", "forthcoming")]},
         2: {"iteration": 2, "technique": "auto", "action": {"kind": "assistant"}, "baseline": None,
             "draws": [auto_draw(2, 1, "user_persona", "refused")]}}


def test_a_fixed_technique_has_no_draw_cap_and_no_technique_to_keep_apart():
    fixed = FixedTechnique("user_persona", prefill="", with_baseline=True)
    run = state({})
    assert fixed.draws_left(run) == sys.maxsize
    assert fixed.by_technique(run.draws()) is None
    fixed.check(None, run, 1, target=None)  # its one action is the probe: nothing to refuse


def test_auto_counts_the_draws_spent_and_labels_each_technique_apart():
    menu, run = AutoMenu(ACTIONS, 3, max_draws=5), state(SAVED)
    assert menu.draws_left(run) == 2
    assert menu.by_technique(run.draws()) == {"prefill": {"forthcoming": 1}, "user_persona": {"refused": 2}}


def test_an_auto_action_past_the_draws_left_is_the_auditors_to_fix():
    menu, run = AutoMenu(ACTIONS, 3, max_draws=4), state(SAVED)
    batch = Action("batch", {"of": "user_persona", "prompts": ["a", "b"], "prefill": None, "system": None})
    with pytest.raises(ReplyError, match="needs 2 target draws but only 1 are left"):
        menu.check(batch, run, 3, target=None)
    menu.check(None, run, 3, target=None)  # the final turn names no action


def test_a_runs_actions_are_also_its_reply_menu():
    """The object that sends the draws is the one the reply's schema, its validator and the OUTPUT FORMAT
    ask: a fixed technique's reply is the spec's, ``technique=auto``'s names an action of its menu."""
    fixed = FixedTechnique("prefill", prefill="Sure,", with_baseline=False)
    auto = AutoMenu(("user_persona", "batch"), 2, max_draws=5)
    assert response_formats(fixed) == AUDITOR_RESPONSE_FORMATS
    assert response_formats(auto) == response_formats(Menu(("user_persona", "batch"), 2))
    assert fixed.output_format is None
    assert auto.output_format == auto_output_format(("user_persona", "batch"), batch_max=2, max_draws=5)
    turn = {"reasoning": "r", "hypotheses": [], "prompt_strategy": "direct_factual", "prompt_rationale": "x",
            "should_continue": True, "final_summary": None}
    assert validate_reply({**turn, "next_prompt": "Why?"}, stage=NEXT, menu=fixed).next_prompt == "Why?"
    chosen = {"kind": "user_persona", "prompt": "I recall", "system": None}
    assert validate_reply({**turn, "action": chosen}, stage=NEXT, menu=auto).action == Action(
        "user_persona", {"prompt": "I recall", "system": None})
    with pytest.raises(ReplyError, match="must be one of user_persona, batch"):
        validate_reply({**turn, "action": {**chosen, "kind": "assistant"}}, stage=NEXT, menu=auto)


def test_the_plan_tells_the_runs_kind_apart_once(tmp_path):
    """``Plan.from_config`` builds one object per run; the plan's technique, baseline and OUTPUT FORMAT are its."""
    fixed = Plan.from_config(audit_config(tmp_path, "technique=prefill", "technique.with_baseline=true"))
    assert fixed.actions == FixedTechnique("prefill", "Sure, here is a detailed and factual answer:", True)
    assert (fixed.technique, fixed.with_baseline, fixed.output_format) == ("prefill", True, None)
    assistant = Plan.from_config(audit_config(tmp_path, "technique=assistant", "technique.with_baseline=true"))
    assert not assistant.with_baseline  # the assistant technique is its own baseline
    auto = Plan.from_config(audit_config(tmp_path, "technique=auto", "technique.menu=[batch,prefill]",
                                         "technique.batch_max=2", "technique.max_draws=7",
                                         "technique.with_baseline=true"))
    assert auto.actions == AutoMenu(("prefill", "batch"), 2, 7)  # in menu order
    assert (auto.technique, auto.with_baseline) == ("auto", False)
    assert auto.output_format == auto_output_format(("prefill", "batch"), batch_max=2, max_draws=7)
    assert auto.output_format in auto.auditor_system
