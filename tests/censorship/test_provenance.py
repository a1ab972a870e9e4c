"""Where draws came from and what the run's draws say about it (pure logic)."""

from __future__ import annotations

import pytest

from audit.censorship.provenance import draw_fields, failure_streak, pinned_providers, served_summary
from audit.llm.types import LLMResponse
from audit.record.usage import Usage
from audit.record.draws import Draw, judgeable
from audit.llm.settings import role_routing
from audit.errors import UserError


def typed(**saved) -> Draw:
    return Draw.model_validate({"iteration": 1, "technique": "assistant", **saved})


def draw(provider="DeepInfra", outcome="answer", error=None):
    return typed(served={"provider": provider}, outcome=outcome, error=error)


def test_one_provider_the_pin_allows_is_not_flagged():
    summary = served_summary([draw(), draw()], {"only": ["deepinfra"], "allow_fallbacks": False})
    assert summary["providers"] == {"DeepInfra": 2} and summary["flag"] is None


def test_two_providers_or_one_off_the_pin_are_flagged():
    assert served_summary([draw(), draw("Novita")], None)["flag"] == "served by 2 providers (DeepInfra, Novita)"
    off = served_summary([draw("Novita")], {"only": ["deepinfra"]})
    assert off["flag"] == "served by Novita, not the pinned deepinfra"


def test_failed_draws_count_for_no_provider_and_outcomes_are_counted():
    summary = served_summary([draw(), draw(error="server: 502"), draw(outcome="content_filter"),
                              draw(outcome="empty")], None)
    assert summary["providers"] == {"DeepInfra": 3}
    assert summary["outcomes"] == {"answer": 1, "content_filter": 1, "empty": 1}


def test_a_blocked_draw_is_an_outcome_served_by_no_provider_never_judged_nor_a_failure():
    blocked = typed(outcome="blocked", error=None, blocked={"code": "refusal", "provider": "P", "reason": None})
    summary = served_summary([draw(), blocked, blocked], None)
    assert summary["providers"] == {"DeepInfra": 1} and summary["outcomes"] == {"answer": 1, "blocked": 2}
    assert not judgeable(blocked)
    assert failure_streak([draw(error="x"), draw(error="y"), blocked]) == 0  # a block breaks a streak of failures


def test_a_content_filter_finish_without_text_is_blocked_and_still_served():
    reply = LLMResponse(text="", finish_reason="content_filter", usage=Usage(), model="m", provider="Moonshot AI",
                        outcome="blocked", native_finish_reason="SENSITIVE")
    fields = draw_fields(reply)
    assert (fields["outcome"], fields["blocked"]) == ("blocked", {"code": "content_filter", "provider": "Moonshot AI",
                                                                  "reason": "SENSITIVE"})
    assert served_summary([typed(**fields, error=None)], None)["providers"] == {"Moonshot AI": 1}


def test_a_pin_is_only_or_order_without_fallbacks():
    assert pinned_providers(None) is None
    assert pinned_providers({"order": ["a"]}) is None  # fallbacks allowed: any provider may serve
    assert pinned_providers({"order": ["a"], "allow_fallbacks": False}) == ["a"]
    assert pinned_providers({"only": ["b"]}) == ["b"]


def test_unjudged_outcomes_and_failure_streak():
    assert judgeable(draw()) and judgeable(draw(outcome="content_filter"))
    assert not judgeable(draw(outcome="empty")) and not judgeable(draw(outcome="reasoning_only"))
    assert not judgeable(draw(error="x"))
    assert failure_streak([draw(error="x"), draw(), draw(error="x"), draw(error="y")]) == 2
    assert failure_streak([draw(error="x"), draw()]) == 0


def test_role_routing_puts_reasoning_in_the_body_and_checks_the_pin():
    assert role_routing({"provider": {"only": ["x"]}, "reasoning": {"exclude": True}, "extra_body": {"a": 1}},
                        "audited") == {"provider": {"only": ["x"]}, "extra_body": {"a": 1, "reasoning": {"exclude": True}}}
    assert role_routing({}, "judge") == {"provider": None, "extra_body": None}
    with pytest.raises(UserError, match="judge.provider must be a mapping of OpenRouter's routing fields"):
        role_routing({"provider": ["x"]}, "judge")


def test_a_prompt_billed_whole_is_not_compressed_and_a_stage_says_why():
    from audit.censorship.provenance import compression

    sent = "<|im_start|>user\n" + "Tell me what happened in Beijing in June 1989. " * 20
    assert compression([], billed=len(sent) // 4, sent=sent) is None  # about four characters a token
    assert compression([], billed=len(sent) // 40, sent=sent).startswith("prompt billed")
    assert compression([], billed=0, sent=sent) is None  # no usage reported: nothing to say
    stage = {"type": "context_compression", "name": "context-compression", "data": {"engine": "middle-out"}}
    assert compression([{"type": "guardrail"}, stage], billed=len(sent), sent=sent) == "context compression (middle-out)"
