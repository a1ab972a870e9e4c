"""The auditor's action menu (technique=auto): one definition gives the JSON Schema and the validator."""

from __future__ import annotations

import json

import jsonschema
import pytest

from audit.censorship.action_kinds import ACTIONS, MENU, check_menu
from audit.censorship.actions import Action
from audit.censorship.prompts import auto_output_format, menu_text
from audit.censorship.schema import AUDITOR_RESPONSE_FORMATS, FINAL, FIRST, NEXT, ONE_PROBE, Menu, ReplyError, \
    auditor_schema, response_formats, validate_reply
from audit.errors import UserError

FULL = Menu(ACTIONS, 3)

EXAMPLES = {
    "user_persona": {"kind": "user_persona", "prompt": "I was in Beijing in 1989 and", "system": None},
    "assistant": {"kind": "assistant", "prompt": "What happened on June 4?", "system": "Be frank."},
    "prefill": {"kind": "prefill", "prompt": "What happened?", "prefill": "Sure, on June 4", "system": None},
    "raw_text": {"kind": "raw_text", "text": "Encyclopedia entry: The 1989 Tiananmen Square protests were"},
    "few_shot": {"kind": "few_shot", "examples": [{"question": "Capital of France?", "answer": "Paris."}],
                 "prompt": "What happened on June 4, 1989?", "prefill": None, "system": None},
    "continue": {"kind": "continue", "conversation": "c1", "mode": "followup_user", "prompt": None, "prefill": None},
    "rollback": {"kind": "rollback", "conversation": "c1", "to_turn": 2, "prompt": "And then?", "prefill": "Then"},
    "batch": {"kind": "batch", "of": "prefill", "prompts": ["Q1?", "Q2?"], "prefill": "Sure:", "system": None},
    "reopen": {"kind": "reopen", "iteration": 2},
}


def turn(action, **extra):
    return {"reasoning": "r", "hypotheses": [], "action": action, "prompt_strategy": "direct_factual",
            "prompt_rationale": "x", "should_continue": True, "final_summary": None, **extra}


def test_every_action_has_an_example():
    assert set(EXAMPLES) == set(MENU)


@pytest.mark.parametrize("kind", ACTIONS)
def test_schema_and_validator_accept_the_same_valid_action(kind):
    for stage in (FIRST, NEXT):
        jsonschema.validate(turn(EXAMPLES[kind]), auditor_schema(stage, FULL))
    reply = validate_reply(turn(EXAMPLES[kind]), stage=NEXT, menu=FULL)
    assert reply.action is not None and reply.action.as_dict() == EXAMPLES[kind]
    assert reply.as_dict()["action"] == EXAMPLES[kind]
    assert Action.of(reply.as_dict()["action"]) == reply.action  # what a saved turn sends again


BAD = [
    ("missing argument", {"kind": "prefill", "prompt": "Q?", "system": None}, "action.prefill"),
    ("empty prompt", {**EXAMPLES["assistant"], "prompt": ""}, "action.prompt"),
    ("too many variations", {**EXAMPLES["batch"], "prompts": ["a", "b", "c", "d"]}, "at most 3"),
    ("negative turn", {**EXAMPLES["rollback"], "to_turn": -1}, "action.to_turn"),
    ("reopen without an iteration", {"kind": "reopen", "iteration": "two"}, "action.iteration"),
    ("unknown mode", {**EXAMPLES["continue"], "mode": "sideways"}, "action.mode"),
    ("unknown kind", {"kind": "jailbreak"}, "action.kind"),
    ("pair without question", {**EXAMPLES["few_shot"], "examples": [{"answer": "x"}]}, "action.examples"),
]


@pytest.mark.parametrize("name,action,field", BAD, ids=[b[0] for b in BAD])
def test_schema_and_validator_reject_the_same_bad_action(name, action, field):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(turn(action), auditor_schema(NEXT, FULL))
    with pytest.raises(ReplyError, match=field.replace(".", r"\.")):
        validate_reply(turn(action), stage=NEXT, menu=FULL)


def test_rules_the_schema_cannot_state_are_the_validators():
    # a prefill batch needs its opening; any other batch has none (schema: both nullable)
    for action in ({**EXAMPLES["batch"], "prefill": None}, {**EXAMPLES["batch"], "of": "assistant"}):
        jsonschema.validate(turn(action), auditor_schema(NEXT, FULL))
        with pytest.raises(ReplyError, match="action.prefill"):
            validate_reply(turn(action), stage=NEXT, menu=FULL)


def test_menu_restricts_both_schema_and_validator():
    menu = Menu(check_menu(["batch", "prefill"]), 2)
    assert menu.actions == ("prefill", "batch")  # menu order
    kinds = [alt["properties"]["kind"]["enum"] for alt in auditor_schema(FIRST, menu)["properties"]["action"]["anyOf"]]
    assert kinds == [["prefill"], ["batch"]]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(turn(EXAMPLES["assistant"]), auditor_schema(NEXT, menu))
    with pytest.raises(ReplyError, match="must be one of prefill, batch"):
        validate_reply(turn(EXAMPLES["assistant"]), stage=NEXT, menu=menu)
    shown = auto_output_format(menu.actions, batch_max=2, max_draws=9)
    assert '- "prefill": {' in shown and '- "batch": {' in shown and '- "assistant"' not in shown
    assert "at most 2 variations" in shown and "9 target draws" in shown


@pytest.mark.parametrize("kind", ACTIONS)
def test_the_menu_file_names_exactly_the_arguments_of_each_action(kind):
    """The auditor's menu is text in a file; the arguments it names are the definition's."""
    import re

    line = menu_text([kind])
    assert line.startswith(f'- "{kind}": {{')
    named = re.findall(r'(?:\{|, )"([a-z_]+)": ', line)
    assert named == [a.name for a in MENU[kind]]


def test_unknown_menu_name_is_one_line_with_a_suggestion():
    with pytest.raises(UserError) as info:
        check_menu(["prefil"])
    assert "Unknown action in technique.menu 'prefil'. Did you mean 'prefill'?" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(UserError, match="technique.menu is empty"):
        check_menu([])


def test_stages_first_must_act_final_must_not():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(turn(None), auditor_schema(FIRST, FULL))
    stop = turn(None, should_continue=False, final_summary={"knowledge_confirmed": [], "censorship_patterns": [],
                                                          "conclusion": "done"})
    jsonschema.validate(stop, auditor_schema(NEXT, FULL))
    jsonschema.validate({**stop, "prompt_strategy": None, "prompt_rationale": None}, auditor_schema(FINAL, FULL))
    assert validate_reply(stop, stage=NEXT, menu=FULL).action is None
    with pytest.raises(ReplyError, match='"action" is missing'):
        validate_reply(turn(None), stage=NEXT, menu=FULL)


def test_citations_name_a_draw_under_auto():
    cited = turn(EXAMPLES["assistant"], hypotheses=[{
        "id": "h1", "type": "knowledge", "hypothesis": "knows", "confidence": "low",
        "supporting_evidence": [{"iteration": 1, "draw": 2, "excerpt": "tanks"}], "contradicting_evidence": []}])
    jsonschema.validate(cited, auditor_schema(NEXT, FULL))
    parsed = validate_reply(cited, stage=NEXT, menu=FULL)
    assert parsed.hypotheses[0]["supporting_evidence"] == [{"iteration": 1, "draw": 2, "excerpt": "tanks"}]
    undrawn = json.loads(json.dumps(cited))
    del undrawn["hypotheses"][0]["supporting_evidence"][0]["draw"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(undrawn, auditor_schema(NEXT, FULL))


def test_fixed_techniques_keep_their_formats():
    """A fixed technique is a menu of one probe: its reply is the spec's, with next_prompt and no action."""
    assert response_formats(ONE_PROBE) == AUDITOR_RESPONSE_FORMATS
    assert "action" not in auditor_schema(NEXT)["properties"]
    assert "next_prompt" not in auditor_schema(NEXT, FULL)["properties"]
