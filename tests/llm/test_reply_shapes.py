"""Every reply shape OpenRouter documents, classified by the gateway over real HTTP (loopback server).

Sources, per shape, in :mod:`audit.testing.documented` (OpenRouter's errors guide "Errors and
Debugging", API reference "Responses", provider routing and reasoning tokens guides).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.types import FATAL_KINDS, GatewayError
from audit.testing import documented
from audit.testing.replies import CHAT, COMPLETION, completion_reply, error_reply
from audit.testing.server import FakeOpenRouter

KEY = "sk-or-v1-fake-shape-test-key-0123456789"


def make_gateway(server: FakeOpenRouter, tmp_path: Path, retries: int = 2) -> Gateway:
    settings = GatewaySettings(api_base=server.base_url, timeout_s=5.0, max_retries=retries, backoff_initial_s=0.01,
                               backoff_max_s=0.02, cache_path=tmp_path / "cache.sqlite")
    return Gateway(settings, KEY, rng=random.Random(0))


def call(gateway: Gateway, kind: str):
    if kind == CHAT:
        return gateway.chat("m/x", [{"role": "user", "content": "q"}])
    return gateway.complete("m/x", "p")


@pytest.mark.parametrize("kind", [CHAT, COMPLETION])
@pytest.mark.parametrize("shape,expected", [
    (documented.error_finish, "error_finish"),
    (documented.empty, "empty"),
], ids=["error_finish", "empty"])
def test_error_finish_and_empty_are_retried_never_answers(fake_openrouter, tmp_path, kind, shape, expected):
    """HTTP 200 with ``finish_reason: "error"`` and partial text, and a reply with no text and no finish
    reason, are failures the gateway retries; the answer is the retry's, and neither is cached."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    good = documented.generation(kind, "a whole answer")
    fake_openrouter.push(shape(kind), good)
    try:
        reply = call(gateway, kind)
        assert reply.text == "a whole answer" and reply.retries == 1 and reply.outcome == "answer"
        fake_openrouter.push(shape(kind), shape(kind), shape(kind))
        with pytest.raises(GatewayError) as info:
            gateway.chat("m/x", [{"role": "user", "content": "other"}]) if kind == CHAT else \
                gateway.complete("m/x", "other")
        assert info.value.kind == expected and info.value.retries == 2
    finally:
        gateway.close()


@pytest.mark.parametrize("kind", [CHAT, COMPLETION])
def test_reasoning_only_reply_is_flagged_not_an_empty_answer(fake_openrouter, tmp_path, kind):
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(documented.reasoning_only(kind))
    try:
        reply = call(gateway, kind)
    finally:
        gateway.close()
    assert reply.text == "" and reply.outcome == "reasoning_only" and reply.reasoning_tokens == 500


def test_empty_text_with_a_finish_reason_is_an_empty_outcome(fake_openrouter, tmp_path):
    """The model ended the user turn at once: its own outcome (not retried: it is a sample), never an answer."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(completion_reply("<|im_end|>more"))  # the server ignored the stop; cut to ""
    try:
        reply = gateway.complete("m/x", "p", stop=["<|im_end|>"])
    finally:
        gateway.close()
    assert reply.text == "" and reply.outcome == "empty" and reply.retries == 0


def test_content_filter_is_kept_with_its_text_and_without_any_is_blocked(fake_openrouter, tmp_path):
    """``finish_reason: "content_filter"`` (API reference, "Responses"): the words up to the cut are the
    model's (``content_filter``, judged); with no words at all the filter withheld the whole answer, the
    200 form of a filter's typed 400 (``blocked``, never judged as the model's refusal)."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(documented.content_filter(COMPLETION, "In June 1989 the"))
    fake_openrouter.push(documented.content_filter(COMPLETION))
    try:
        cut, withheld = gateway.complete("m/x", "p"), gateway.complete("m/x", "q")
    finally:
        gateway.close()
    assert (cut.text, cut.finish_reason, cut.outcome) == ("In June 1989 the", "content_filter", "content_filter")
    assert (withheld.text, withheld.finish_reason, withheld.outcome) == ("", "content_filter", "blocked")


@pytest.mark.parametrize("reply,kind,hint", [
    (documented.model_not_found("deepseek/deepseek-chta"), "model_not_found", "openrouter.ai/models"),
    (documented.payment_required(), "payment", "credits"),
    (documented.moderation(), "moderation", "provider"),
    (documented.region_blocked(), "region", "provider"),
    (documented.routing_404("require_parameters"), "routing", "provider"),
    (documented.routing_404("data_policy"), "routing", "data policy"),
    (documented.routing_404("only"), "routing", "provider"),
    (documented.guardrail_blocked(), "guardrail", "guardrail"),
    (documented.permission_denied(), "permission", "lacks the permission"),
    (documented.content_policy(), "content_policy", "content filter"),
    (documented.refusal(), "refusal", "refused"),
], ids=["model_not_found", "402", "403_moderation", "403_region", "404_require_parameters", "404_data_policy",
        "404_only", "403_guardrail", "403_permission_denied", "400_content_policy_violation", "400_refusal"])
@pytest.mark.parametrize("route", [CHAT, COMPLETION])
def test_documented_errors_get_their_own_kind_and_hint(fake_openrouter, tmp_path, reply, kind, hint, route):
    """Each is answered once (never retried) with its own kind, and a hint that names what to change
    (never "check OPENROUTER_API_KEY" for a moderation flag, never "check the model id" for routing)."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(reply)
    try:
        with pytest.raises(GatewayError) as info:
            call(gateway, route)
    finally:
        gateway.close()
    assert info.value.kind == kind
    assert hint in str(info.value)
    assert "OPENROUTER_API_KEY" not in str(info.value) and "check the model id" not in str(info.value)
    assert len(fake_openrouter.requests) == 1
    # a filter's or a guardrail's verdict is about this request's text: the next one may pass
    assert (kind in FATAL_KINDS) == (kind not in ("moderation", "guardrail", "content_policy", "refusal"))


@pytest.mark.parametrize("reply,code,provider,reason", [
    (documented.content_policy(), "content_policy_violation", "Moonshot AI", "The request was rejected as sensitive"),
    (documented.refusal(), "refusal", "Moonshot AI", "Provider returned error"),
    (documented.moderation(), "moderation", "OpenAI", "harassment (flagged input: 'Tell me about June 4th')"),
    (documented.guardrail_blocked(), "guardrail", None,
     "Request blocked: prompt injection patterns detected (patterns: ignore all previous instructions)"),
], ids=["400_content_policy_violation", "400_refusal", "403_moderation", "403_guardrail"])
@pytest.mark.parametrize("route", [CHAT, COMPLETION])
def test_a_filter_s_block_names_its_code_provider_and_reason(fake_openrouter, tmp_path, reply, code, provider,
                                                              reason, route):
    """A filter between the caller and the model (errors guide: the typed 400s, a guardrail's or moderation's
    403) carries what stopped the request, for a draw to record as ``blocked`` and an error line to name;
    another failure carries none."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(reply)
    fake_openrouter.push(documented.payment_required())
    try:
        with pytest.raises(GatewayError) as blocked:
            call(gateway, route)
        with pytest.raises(GatewayError) as other:
            call(gateway, route)
    finally:
        gateway.close()
    assert blocked.value.blocked is not None
    assert blocked.value.blocked.as_dict() == {"code": code, "provider": provider, "reason": reason}
    line = str(blocked.value)
    assert "\n" not in line and code in line and reason in line and (provider is None or provider in line)
    assert other.value.blocked is None


@pytest.mark.parametrize("words", ["This request is forbidden in your region by policy",
                                   "Request blocked: flagged for region-sensitive content"])
def test_a_typed_code_decides_before_the_message_text(fake_openrouter, tmp_path, words):
    """The errors guide: rely on ``error.metadata.error_type``, not on the status or the words. A guardrail
    403 whose message happens to name a region is not a region block, and a 403 typed ``authentication``
    is a key problem whatever it says (before, both were read from the message)."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(error_reply(403, words, metadata={"error_type": "permission_denied", "patterns": ["x"]}))
    fake_openrouter.push(error_reply(403, words, metadata={"error_type": "authentication"}))
    try:
        kinds = []
        for _ in range(2):
            with pytest.raises(GatewayError) as info:
                call(gateway, COMPLETION)
            kinds.append(info.value.kind)
    finally:
        gateway.close()
    assert kinds == ["guardrail", "auth"]


def test_provenance_of_a_draw(fake_openrouter, tmp_path):
    """The served provider, native finish reason, reasoning tokens, generation id and (with
    ``X-OpenRouter-Metadata: enabled``, router metadata guide) the routing metadata reach the reply."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(completion_reply("blue.", provider="DeepInfra", native_finish_reason="eos",
                                          reasoning_tokens=3))
    try:
        reply = gateway.complete("m/x", "p")
    finally:
        gateway.close()
    (request,) = fake_openrouter.requests
    assert request.headers["x-openrouter-metadata"] == "enabled"
    assert (reply.provider, reply.native_finish_reason, reply.reasoning_tokens) == ("DeepInfra", "eos", 3)
    assert reply.generation_id.startswith("gen-")
    assert reply.routing["summary"] == "available=1, selected=DeepInfra"


@pytest.mark.parametrize("referer,title", [("https://example.org/lab", "my-audit"), (None, "audit")])
def test_attribution_headers_are_ours_on_both_routes(fake_openrouter, tmp_path, referer, title):
    """``HTTP-Referer`` and ``X-Title`` (OpenRouter's app attribution) as configured on /chat/completions
    and /completions alike; unset, the referer is sent empty rather than litellm's own on the chat route."""
    settings = GatewaySettings(api_base=fake_openrouter.base_url, cache_enabled=False, referer=referer, title=title)
    gateway = Gateway(settings, KEY)
    fake_openrouter.push_chat(documented.generation(CHAT, "x"))
    fake_openrouter.push_completion(completion_reply("y"))
    try:
        gateway.chat("m/x", [{"role": "user", "content": "q"}])
        gateway.complete("m/x", "p")
    finally:
        gateway.close()
    for request in fake_openrouter.requests:
        assert (request.headers["http-referer"], request.headers["x-title"]) == (referer or "", title)


AVAILABILITY_KINDS = {"model_not_found": "model_not_found", "model_deprecated": "model_not_found",
                      "free_variant_ended": "model_not_found", "wrong_endpoint": "wrong_endpoint",
                      "no_endpoints": "routing", "privacy_restricted": "routing", "constraint_filtered": "routing",
                      "model_unavailable_upstream": "not_found", "region_restricted": "region",
                      "capacity_exhausted": "rate_limit", "temporarily_unavailable": "server"}
"""What each code of the errors guide's "Availability codes" table is here (api_reference/errors-and-debugging.mdx)."""


@pytest.mark.parametrize("code", sorted(documented.AVAILABILITY))
@pytest.mark.parametrize("route", [CHAT, COMPLETION])
def test_every_availability_code_is_read_by_its_code_not_its_words(fake_openrouter, tmp_path, code, route):
    """Errors guide (OpenRouterTeam/docs api_reference/errors-and-debugging.mdx, "Model availability
    errors"): "use ``availability.code`` -- not the HTTP status or the message prose". Each of the 11 codes,
    in the shape of the guide's example payloads (``error_type`` and ``http_status`` in ``error``, no
    ``code``), gets its own kind; the two the guide calls retryable are retried, the others answered once;
    the code and the server's suggestions are shown with the error."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    status, _, retryable = documented.AVAILABILITY[code]
    fake_openrouter.push(*[documented.availability(code, fallback_models=["other/model"])] * 3)
    try:
        with pytest.raises(GatewayError) as info:
            call(gateway, route)
    finally:
        gateway.close()
    assert (info.value.kind, info.value.status) == (AVAILABILITY_KINDS[code], status)
    assert len(fake_openrouter.requests) == (3 if retryable else 1)
    assert info.value.fatal is not retryable
    assert f"[availability: {code}; fallback models: other/model]" in str(info.value)
    assert "OPENROUTER_API_KEY" not in str(info.value) and "lacks the permission" not in str(info.value)


@pytest.mark.parametrize("route", [CHAT, COMPLETION])
def test_a_region_403_is_a_region_block_not_a_bad_key_or_a_permission(fake_openrouter, tmp_path, route):
    """Errors guide, "Availability codes": ``region_restricted`` is a 403 typed ``permission_denied``; its
    message here names no region, so only the code can tell. Before: ``permission`` ("the key lacks the
    permission"), and with no type ``auth`` ("check OPENROUTER_API_KEY"). Now ``region``, fatal, with the
    hint to pin another provider or run from an allowed region."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(documented.availability("region_restricted", message="Forbidden", excluded_by=["geo"]))
    try:
        with pytest.raises(GatewayError) as info:
            call(gateway, route)
    finally:
        gateway.close()
    assert info.value.kind == "region" and info.value.fatal
    assert "pin another with the role's provider setting" in str(info.value)
    assert "[availability: region_restricted; excluded by: geo]" in str(info.value)


def test_capacity_429_waits_the_retry_after_it_names_then_succeeds(fake_openrouter, tmp_path):
    """Errors guide: ``capacity_exhausted`` (429, retryable) sends ``Retry-After`` and mirrors it in
    ``availability.retry_after``; the provider's own 429 ("Provider errors") is typed ``rate_limit_exceeded``.
    Both are retried, and the answer is the retry's."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(documented.capacity_exhausted(retry_after=0.05), documented.provider_rate_limited(),
                         completion_reply("a whole answer"))
    try:
        reply = gateway.complete("m/x", "p")
    finally:
        gateway.close()
    assert reply.text == "a whole answer" and reply.retries == 2


def test_the_body_retry_after_stands_in_for_a_lost_header():
    from audit.llm.replies import availability_retry_after

    assert availability_retry_after({"availability": {"code": "capacity_exhausted", "retry_after": 40}}) == 40.0
    assert availability_retry_after({"availability": {"code": "no_endpoints"}}) is None
    assert availability_retry_after({"message": "x"}) is None


@pytest.mark.parametrize("route", [CHAT, COMPLETION])
def test_the_guardrail_403_with_router_metadata_is_a_guardrail(fake_openrouter, tmp_path, route):
    """Errors guide, "Guardrail errors", second example: the 403 with ``openrouter_metadata`` beside
    ``error`` and no ``error_type``; it is the guardrail's block (that call fails, not fatal), never a bad key."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(documented.guardrail_with_metadata())
    try:
        with pytest.raises(GatewayError) as info:
            call(gateway, route)
    finally:
        gateway.close()
    assert info.value.kind == "guardrail" and not info.value.fatal and "OPENROUTER_API_KEY" not in str(info.value)


@pytest.mark.parametrize("route", [CHAT, COMPLETION])
def test_a_reply_from_a_fallback_names_the_provider_that_served_and_keeps_the_attempts(fake_openrouter, tmp_path,
                                                                                     route):
    """Router metadata guide (guides/features/router-metadata.mdx, "Field Reference"): ``attempt`` above 1
    and ``attempts`` when the router fell back. The draw is credited to the provider that served it, and
    the failed attempt is kept in its routing metadata (``served.routing`` of the draw)."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(documented.fell_back(route, failed="Moonshot AI", served="DeepInfra"))
    try:
        reply = call(gateway, route)
    finally:
        gateway.close()
    assert reply.provider == "DeepInfra" and reply.routing["attempt"] == 2
    assert [(a["provider"], a["status"]) for a in reply.routing["attempts"]] == [("Moonshot AI", 429),
                                                                                ("DeepInfra", 200)]


@pytest.mark.parametrize("status,kind", [(408, "timeout"), (502, "server"), (503, "server")])
def test_the_guides_retryable_statuses_are_retried(fake_openrouter, tmp_path, status, kind):
    """Errors guide, "Error codes": 408 "Your request timed out", 502 "model is down or ... invalid response",
    503 "no available model provider": failures of this attempt, retried. Three in a row end as that kind
    after two retries."""
    gateway = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(*[error_reply(status)] * 3)
    try:
        with pytest.raises(GatewayError) as info:
            gateway.complete("m/x", "p")
    finally:
        gateway.close()
    assert (info.value.kind, info.value.retries, len(fake_openrouter.requests)) == (kind, 2, 3)


def test_an_unknown_availability_code_falls_back_to_its_retryable():
    """Errors guide: "new codes may be added ... treat an unrecognized code defensively and fall back to
    ``retryable``": retried (``server``) when it says so, else the status's kind."""
    from audit.llm.replies import refine_kind

    assert refine_kind("rate_limit", "x", {"availability": {"code": "new_code", "retryable": True}}) == "server"
    assert refine_kind("not_found", "x", {"availability": {"code": "new_code", "retryable": False}}) == "not_found"
