"""The draw actions answer the loop alike for a fixed technique (a menu of one action) and for
``technique=auto``: the draws left, the check of a reply's action and the per-technique labels come
from the run's kind of actions, so the loop never branches on it."""

from __future__ import annotations

import sys

import pytest

from audit.censorship.actions import Action
from audit.censorship.draw_actions import AutoMenu, FixedTechnique
from audit.censorship.hypotheses import HypothesisLedger
from audit.censorship.schema import ReplyError
from audit.censorship.state import AuditState
from audit.llm.accounting import Totals


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
    menu, run = AutoMenu(max_draws=5), state(SAVED)
    assert menu.draws_left(run) == 2
    assert menu.by_technique(run.draws()) == {"prefill": {"forthcoming": 1}, "user_persona": {"refused": 2}}


def test_an_auto_action_past_the_draws_left_is_the_auditors_to_fix():
    menu, run = AutoMenu(max_draws=4), state(SAVED)
    batch = Action("batch", {"of": "user_persona", "prompts": ["a", "b"], "prefill": None, "system": None})
    with pytest.raises(ReplyError, match="needs 2 target draws but only 1 are left"):
        menu.check(batch, run, 3, target=None)
    menu.check(None, run, 3, target=None)  # the final turn names no action
