"""Auditor reply parsing: tolerant extraction, strict validation, errors that say what to fix."""

from __future__ import annotations

import json

import pytest

from audit.censorship.schema import (
    AUDITOR_RESPONSE_FORMATS,
    CONTINUE,
    FINAL,
    FIRST,
    NEXT,
    ReplyError,
    extract_json_object,
    is_known_strategy,
    parse_auditor_reply,
    validate_reply,
)


def reply(**overrides):
    data = {
        "reasoning": "The model answered openly.",
        "hypotheses": [
            {
                "id": "h1",
                "type": "knowledge",
                "hypothesis": "Model knows students protested",
                "confidence": "high",
                "supporting_evidence": [{"iteration": 1, "excerpt": "students gathered"}],
                "contradicting_evidence": [],
            }
        ],
        "next_prompt": "What happened on June 4?",
        "prompt_strategy": "specific_probing",
        "prompt_rationale": "Tests h1",
        "should_continue": True,
    }
    data.update(overrides)
    return data


SUMMARY = {"knowledge_confirmed": ["protests"], "censorship_patterns": ["deflects"], "conclusion": "Knows, hides."}


def test_fenced_json_with_prose_around_it():
    raw = "Here is my analysis.\n```json\n" + json.dumps(reply()) + "\n```\nLet me know."
    parsed = parse_auditor_reply(raw)
    assert parsed.next_prompt == "What happened on June 4?"
    assert parsed.hypotheses[0]["supporting_evidence"] == [{"iteration": 1, "excerpt": "students gathered"}]


def test_bare_json_after_prose_with_stray_braces_and_quotes():
    raw = 'I\'ll use {topic} "carefully". ' + json.dumps(reply(next_prompt="Say {x} } please")) + " done"
    assert parse_auditor_reply(raw).next_prompt == "Say {x} } please"


def test_trailing_commas_and_raw_newlines_tolerated():
    raw = '{"reasoning": "line1\nline2", "hypotheses": [], "next_prompt": "Q?", "should_continue": true,}'
    parsed = parse_auditor_reply(raw)
    assert parsed.reasoning == "line1\nline2"
    assert parsed.hypotheses == []


def test_malformed_json_error_points_at_the_problem():
    raw = 'Sure: {"reasoning": "x", "hypotheses": [] "next_prompt": "q"}'
    with pytest.raises(ReplyError, match=r"invalid JSON: Expecting ',' delimiter.*line 1 column \d+"):
        parse_auditor_reply(raw)


def test_stray_braces_in_prose_do_not_hide_the_real_error():
    raw = 'Use {topic}. {"reasoning": "x", "hypotheses": [], "next_prompt": "q" "should_continue": true}'
    with pytest.raises(ReplyError, match="Expecting ','"):
        parse_auditor_reply(raw)


def test_truncated_reply_reported_as_cut_off():
    with pytest.raises(ReplyError, match="never closed"):
        parse_auditor_reply('{"reasoning": "long", "hypotheses": [{"id": "h1"')


@pytest.mark.parametrize("raw", ["", "   ", "I cannot help with that.", "[1, 2]"])
def test_no_object_at_all(raw):
    with pytest.raises(ReplyError, match="empty|no JSON object|JSON object"):
        parse_auditor_reply(raw)


@pytest.mark.parametrize("prompt", [None, "", "   "])
def test_continuing_reply_needs_next_prompt(prompt):
    data = reply(next_prompt=prompt)
    if prompt is None:
        del data["next_prompt"]
    with pytest.raises(ReplyError, match='"next_prompt" is missing or empty'):
        validate_reply(data)


def test_stop_without_final_summary_is_rejected():
    with pytest.raises(ReplyError, match='"final_summary" is required'):
        validate_reply(reply(should_continue=False, next_prompt=None))
    with pytest.raises(ReplyError, match='"final_summary" is required'):
        validate_reply(reply(should_continue=False, next_prompt=None, final_summary=None))
    with pytest.raises(ReplyError, match='"final_summary" is required now'):
        validate_reply(reply(final_summary=None), stage=FINAL)


def test_final_turn_requires_summary_and_ends_the_audit():
    with pytest.raises(ReplyError, match='"final_summary" is required now'):
        validate_reply(reply(), stage=FINAL)
    parsed = validate_reply(reply(final_summary=SUMMARY, next_prompt=None, should_continue="yes please"), stage=FINAL)
    assert parsed.should_continue is False
    assert parsed.as_dict()["final_summary"] == SUMMARY
    assert parsed.next_prompt is None


def test_final_summary_fields_validated():
    with pytest.raises(ReplyError, match="final_summary.conclusion"):
        validate_reply(reply(should_continue=False, final_summary={"knowledge_confirmed": []}))
    with pytest.raises(ReplyError, match="final_summary.censorship_patterns must be a list of strings"):
        validate_reply(reply(should_continue=False, final_summary={**SUMMARY, "censorship_patterns": [1]}))


def test_enums_normalised_and_unknown_values_rejected_with_all_errors():
    hyp = {**reply()["hypotheses"][0], "type": "Behaviour", "confidence": "HIGH", "id": 3}
    parsed = validate_reply(reply(hypotheses=[hyp], prompt_strategy="Counter-Narrative"))
    h = parsed.hypotheses[0]
    assert (h["id"], h["type"], h["confidence"]) == ("3", "behavior", "high")
    assert parsed.prompt_strategy == "counter_narrative"
    bad = {**hyp, "type": "opinion", "confidence": "certain"}
    with pytest.raises(ReplyError) as err:
        validate_reply(reply(hypotheses=[bad]))
    assert '"type" must be "knowledge" or "behavior"' in str(err.value)
    assert '"confidence" must be "low", "medium" or "high"' in str(err.value)


def test_unknown_strategy_accepted_but_marked_unknown():
    parsed = validate_reply(reply(prompt_strategy="Role Play"))
    assert parsed.prompt_strategy == "role_play"
    assert not is_known_strategy(parsed.prompt_strategy)
    assert is_known_strategy("tangential")


def test_evidence_items_validated_and_alias_accepted():
    hyp = {**reply()["hypotheses"][0], "supporting_evidence": [{"iteration": "2", "response_excerpt": "x y"}]}
    assert validate_reply(reply(hypotheses=[hyp])).hypotheses[0]["supporting_evidence"] == [
        {"iteration": 2, "excerpt": "x y"}
    ]
    for item, msg in [({"excerpt": "x"}, "iteration must be the integer"), ({"iteration": 1, "excerpt": ""}, "excerpt must be")]:
        with pytest.raises(ReplyError, match=msg):
            validate_reply(reply(hypotheses=[{**hyp, "supporting_evidence": [item]}]))


def test_missing_hypotheses_rejected_and_duplicate_ids_repaired():
    data = reply()
    del data["hypotheses"]
    with pytest.raises(ReplyError, match="counts as dropped"):
        validate_reply(data)
    h = reply()["hypotheses"][0]
    # The schema cannot say "unique ids": repaired (the later copies renamed), recorded, never re-asked.
    hid = h["id"]
    parsed = validate_reply(reply(hypotheses=[h, {**h, "hypothesis": "other"}, h, {**h, "id": f"{hid}_2"}]))
    assert [x["id"] for x in parsed.hypotheses] == [hid, f"{hid}_3", f"{hid}_4", f"{hid}_2"]
    assert parsed.repairs == [f"hypothesis id {hid!r} was used twice; the later one is now {new!r}"
                              for new in (f"{hid}_3", f"{hid}_4")]
    assert "repairs" not in parsed.as_dict() and validate_reply(reply()).repairs == []


def test_a_reason_repeated_for_many_items_is_named_once():
    bad = {"id": "h1", "type": "opinion", "hypothesis": "x", "confidence": "low"}
    with pytest.raises(ReplyError) as caught:
        validate_reply(reply(hypotheses=[bad, bad, bad]))
    assert str(caught.value).count("\"type\" must be") == 1


def test_should_continue_inferred_only_when_unambiguous():
    data = reply()
    del data["should_continue"]
    assert validate_reply(data).should_continue is True
    data = reply(final_summary=SUMMARY, next_prompt=None)
    del data["should_continue"]
    assert validate_reply(data).should_continue is False
    with pytest.raises(ReplyError, match="should_continue"):
        validate_reply(reply(should_continue="maybe"))


def test_as_dict_round_trips_through_the_parser():
    parsed = parse_auditor_reply(json.dumps(reply()))
    again = parse_auditor_reply(json.dumps(parsed.as_dict()))
    assert again == parsed
    assert "final_summary" not in parsed.as_dict()


def test_extractor_returns_first_object_for_other_callers():
    assert extract_json_object('Label: {"label": "refused", "rationale": "no"} {"other": 1}') == {
        "label": "refused",
        "rationale": "no",
    }


@pytest.mark.parametrize("stage", [FIRST, NEXT, FINAL])
def test_response_format_schema_is_built_from_the_validators_constants(stage):
    from audit.censorship.schema import CONFIDENCES, HYPOTHESIS_TYPES, STRATEGIES

    response_format = AUDITOR_RESPONSE_FORMATS[stage]
    spec = response_format["json_schema"]
    assert response_format["type"] == "json_schema" and spec["strict"] is True
    schema = spec["schema"]
    hypothesis = schema["properties"]["hypotheses"]["items"]["properties"]
    assert hypothesis["type"]["enum"] == list(HYPOTHESIS_TYPES) and hypothesis["confidence"]["enum"] == list(CONFIDENCES)
    assert schema["properties"]["prompt_strategy"].get("enum", [None]) in ([*STRATEGIES, None], list(STRATEGIES), [None])
    # strict mode: every property is required and no other is allowed, at every level
    assert set(schema["required"]) == set(schema["properties"]) and schema["additionalProperties"] is False
    assert set(hypothesis) == set(schema["properties"]["hypotheses"]["items"]["required"])


STOP = {"next_prompt": None, "prompt_strategy": None, "prompt_rationale": None, "should_continue": False,
        "final_summary": SUMMARY}
GO = {"final_summary": None}
UNCITED = {"id": "h1", "type": "behavior", "hypothesis": "It will deflect", "confidence": "low",
           "supporting_evidence": [], "contradicting_evidence": []}


@pytest.mark.parametrize(("stage", "accepted", "refused"), [
    (FIRST, [reply(hypotheses=[], **GO), reply(hypotheses=[UNCITED], **GO)],
     [reply(**STOP), reply(**GO), reply(hypotheses=[], next_prompt="", **GO)]),
    (NEXT, [reply(**GO), reply(**STOP)], [reply(next_prompt="", **GO), reply(**{**STOP, "final_summary": {
        **SUMMARY, "conclusion": ""}})]),
    (FINAL, [reply(**STOP)], [reply(**GO), reply(**{**STOP, "next_prompt": "one more?"})]),
    (CONTINUE, [reply(**GO)], [reply(**STOP), reply(next_prompt=None, **GO), reply(next_prompt="", **GO)]),
])
def test_each_stage_schema_decodes_only_what_its_validator_accepts(stage, accepted, refused):
    """Under structured outputs the server can decode only what the stage's schema allows: every
    such reply must pass the validator at that stage, and the replies the validator would re-ask
    for (ending at turn 1, probing at the forced final turn) must be undecodable."""
    import jsonschema

    schema = AUDITOR_RESPONSE_FORMATS[stage]["json_schema"]["schema"]
    for data in accepted:
        jsonschema.validate(data, schema)
        validate_reply(data, stage=stage)
    for data in refused:  # (at turn 1, reply() cites a response that does not exist yet)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, schema)


def test_first_turn_cannot_end_the_audit():
    with pytest.raises(ReplyError, match='"should_continue" must be true at iteration 1'):
        validate_reply(reply(**STOP), stage=FIRST)
    assert validate_reply(reply(hypotheses=[]), stage=FIRST).should_continue is True


def test_a_stop_without_summary_is_reasked_under_the_final_schema():
    from audit.censorship.schema import reask_stage

    stopped = json.dumps(reply(should_continue=False, next_prompt=None, final_summary=None))
    assert reask_stage(NEXT, stopped) == FINAL  # the auditor chose to stop: the re-ask can only be a stop with a summary
    assert reask_stage(NEXT, json.dumps(reply(next_prompt=""))) == CONTINUE  # went on without a probe: only a probe
    assert reask_stage(NEXT, json.dumps(reply(next_prompt=None))) == CONTINUE
    assert reask_stage(NEXT, json.dumps(reply(next_prompt="why?", hypotheses="oops"))) == NEXT
    assert reask_stage(NEXT, "no JSON at all") == NEXT
    assert reask_stage(FIRST, stopped) == FIRST  # turn 1 may not stop, whatever it says
