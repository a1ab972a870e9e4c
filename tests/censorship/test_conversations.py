"""The conversation tree (pure): rebuilt from saved draws, branches by rollback, actions checked against it."""

from __future__ import annotations

from audit.censorship.actions import Action
from audit.censorship.action_kinds import check_action, plan_draws
from audit.censorship.conversations import Tree
from audit.record.draws import Draw
from audit.templates import get_family

FAMILY = get_family("qwen2_5")


def draw(id_, conversation, branch, parent, user, role, text, **extra):
    return Draw.model_validate({"id": id_, "conversation": conversation, "branch": branch, "parent": parent,
                                "user": user, "role": role, "raw_response": text, **extra,
                                "iteration": int(id_.split(".")[0]), "technique": "assistant", "auto": True})


TREE = Tree.of([
    draw("1.1", "c1", "c1.b1", None, "Q1", "assistant", "A1", system="S"),
    draw("2.1", "c1", "c1.b1", "1.1", "Q2", "assistant", "A2"),
    draw("3.1", "c1", "c1.b2", "1.1", "Q3", "assistant", "A3", prefill="Sure, "),
    draw("4.1", None, None, None, None, None, "doc"),
])


def test_threads_follow_parents_and_the_active_branch_is_the_latest():
    assert TREE.branches("c1") == ["c1.b1", "c1.b2"] and TREE.active_branch("c1") == "c1.b2"
    assert [(d, m["content"]) for d, m in TREE.thread(TREE.tip("c1"))] == [
        ("1.1", "Q1"), ("1.1", "A1"), ("3.1", "Q3"), ("3.1", "Sure, A3")]
    assert [m["content"] for _, m in TREE.thread("2.1")] == ["Q1", "A1", "Q2", "A2"]  # the left branch, kept
    assert TREE.context("c1") == [{"role": "system", "content": "S"}]
    assert TREE.new_conversation_id() == "c2"


def continue_(mode, prompt, conversation="c1", prefill=None):
    return Action("continue", {"conversation": conversation, "mode": mode, "prompt": prompt, "prefill": prefill})


def rollback(to_turn):
    return Action("rollback", {"conversation": "c1", "to_turn": to_turn, "prompt": "Q5", "prefill": None})


def test_actions_that_do_not_fit_the_tree_say_why():
    assert "does not exist (conversations: c1)" in check_action(continue_("user", "x", "c7"), TREE)
    assert "prompt null" in check_action(continue_("user", None), TREE)  # ends with an assistant turn
    assert check_action(continue_("user", "Q4"), TREE) is None
    assert check_action(continue_("followup_user", None), TREE) is None
    assert "has 4 turn(s)" in check_action(rollback(5), TREE)
    assert "is a user turn" in check_action(rollback(3), TREE)
    assert check_action(rollback(2), TREE) is None and check_action(rollback(0), TREE) is None


def test_a_rollback_opens_a_new_branch_at_the_turn_it_names():
    (plan,) = plan_draws(rollback(2), TREE, FAMILY, None, 5)
    assert (plan.fields["branch"], plan.fields["parent"]) == ("c1.b3", "1.1")
    assert plan.messages == [{"role": "system", "content": "S"}, {"role": "user", "content": "Q1"},
                             {"role": "assistant", "content": "A1"}, {"role": "user", "content": "Q5"}]
    (plan,) = plan_draws(rollback(0), TREE, FAMILY, None, 5)
    assert plan.fields["parent"] is None and plan.messages[-1] == {"role": "user", "content": "Q5"}


def test_follow_up_user_sampling_renders_the_active_branch_in_the_template():
    (plan,) = plan_draws(continue_("followup_user", "I still"), TREE, FAMILY, None, 5)
    history = [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
               {"role": "user", "content": "Q3"}, {"role": "assistant", "content": "Sure, A3"}]
    assert plan.prompt == FAMILY.user_persona_prompt("I still", system="S", history=history)
    assert plan.prompt.endswith("<|im_end|>\n<|im_start|>user\nI still") and plan.stops == FAMILY.stops
    assert (plan.fields["role"], plan.fields["opening"], plan.fields["parent"]) == ("user", "I still", "3.1")


def test_the_ledger_tells_citations_of_two_draws_apart():
    from audit.censorship.hypotheses import HypothesisLedger

    def hypothesis(draw):
        return {"id": "h1", "type": "knowledge", "hypothesis": "knows", "confidence": "low",
                "supporting_evidence": [{"iteration": 1, "draw": draw, "excerpt": "tanks"}],
                "contradicting_evidence": []}

    ledger = HypothesisLedger()
    ledger.update(2, [hypothesis(1)])
    (changed,) = ledger.update(3, [hypothesis(2)])["changed"]
    assert changed["fields"]["supporting_evidence"] == {
        "added": [{"iteration": 1, "draw": 2, "excerpt": "tanks"}],
        "removed": [{"iteration": 1, "draw": 1, "excerpt": "tanks"}]}
