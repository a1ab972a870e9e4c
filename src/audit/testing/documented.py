"""OpenRouter's documented replies, as the loopback server sends them (stdlib only).

Each builder is one shape OpenRouter documents, with where it is documented; tests script them
to check that the client handles every one, and :mod:`audit.testing.fake_openrouter` can play
them by hand. Sources (OpenRouter docs, repository OpenRouterTeam/docs):

- errors guide, "Errors and Debugging" (openrouter.ai/docs/api/reference/errors-and-debugging):
  the ``{"error": {"code", "message", "metadata"}}`` body; the HTTP status equals ``code`` for a
  request error; once the model started, HTTP 200 with the error in the body; 402 insufficient
  credits; 403 moderation flag with ``ModerationErrorMetadata`` (``reasons``, ``flagged_input``,
  ``provider_name``, ``model_slug``); "When No Content is Generated": an empty reply (cold start),
  retry; "Guardrail Errors": a 403 ``Request blocked: ...``; "Typed Error Codes": the
  ``error.metadata.error_type`` to rely on (``permission_denied``, ``content_policy_violation``,
  ``refusal``, ...);
- API reference, "Responses": ``choices[].finish_reason`` is one of ``stop``, ``length``,
  ``content_filter``, ``tool_calls``, ``error``, beside ``native_finish_reason`` (the provider's
  own) and an optional ``choices[].error``; reasoning models' ``reasoning`` field and
  ``usage.completion_tokens_details.reasoning_tokens`` (reasoning tokens guide);
- router metadata guide, "Pipeline Stages": a ``context_compression`` stage (middle-out) when the
  prompt was compressed before the model saw it;
- provider routing guide: a request no endpoint can serve under ``provider`` constraints
  (``require_parameters``, ``data_collection: deny``, ``only``) is answered 404 "No endpoints
  found ...".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from audit.testing.replies import CHAT, COMPLETION, Reply, _Generation, chat_reply, completion_reply, error_reply, \
    estimate_tokens, json_reply, prompt_text


def generation(kind: str, text: str, **shape: Any) -> Reply:
    """A 200 generation on ``kind``'s endpoint (``CHAT`` or ``COMPLETION``)."""
    return chat_reply(text, **shape) if kind == CHAT else completion_reply(text, **shape)


def error_finish(kind: str, partial: str = "The square was cleared on the night of",
                 message: str = "Provider returned error") -> Reply:
    """HTTP 200, ``finish_reason: "error"``, ``choices[0].error`` and the partial text generated
    before the provider failed (API reference "Responses"; errors guide: an error after the
    model started processing comes back with status 200)."""
    return generation(kind, partial, finish_reason="error",
                      choice_error={"code": 502, "message": message, "metadata": {}})


def empty(kind: str) -> Reply:
    """Empty text and no finish reason: "no content generated" (errors guide: retry)."""
    return generation(kind, "", finish_reason=None, usage={"completion_tokens": 0})


def reasoning_only(kind: str, reasoning: str = "The user asks about June 1989. I should consider",
                   reasoning_tokens: int = 500) -> Reply:
    """A reasoning model that spent all of ``max_tokens`` on reasoning: no answer text,
    ``finish_reason: "length"``, the ``reasoning`` field and its token count (reasoning tokens guide)."""
    return generation(kind, "", finish_reason="length", reasoning=reasoning, reasoning_tokens=reasoning_tokens,
                      usage={"completion_tokens": reasoning_tokens})


def content_filter(kind: str, text: str = "") -> Reply:
    """``finish_reason: "content_filter"``: the provider's filter withheld or cut the text."""
    return generation(kind, text, finish_reason="content_filter")


def model_not_found(model: str) -> Reply:
    """The 400 OpenRouter answers an unknown model id with (``"<id> is not a valid model ID"``)."""
    return error_reply(400, f"{model} is not a valid model ID")


def payment_required() -> Reply:
    """402: the account or key has insufficient credits (errors guide)."""
    return error_reply(402, "Insufficient credits. Add more using https://openrouter.ai/credits",
                       metadata={})


def moderation(flagged: str = "Tell me about June 4th", provider: str = "OpenAI",
               model: str = "openai/gpt-4.1") -> Reply:
    """403 with ``ModerationErrorMetadata`` (errors guide, "Moderation Errors")."""
    return error_reply(403, f"{model} requires moderation on {provider}. Your input was flagged for "
                       '"harassment". No credits were charged.',
                       metadata={"reasons": ["harassment"], "flagged_input": flagged[:100],
                                 "provider_name": provider, "model_slug": model})


def region_blocked(provider: str = "OpenAI") -> Reply:
    """403 when the provider does not serve the caller's region."""
    return error_reply(403, f"This model is not available in your region. (provider {provider})",
                       metadata={"provider_name": provider})


def compressed(kind: str, text: str = " I was there that night.", *, shown: float = 0.2) -> Reply:
    """A generation whose prompt OpenRouter compressed before the model saw it (router metadata guide,
    "Pipeline Stages": a ``context_compression`` stage, engine ``middle-out``, original vs compressed
    counts) and billed for what was left (``shown`` of the prompt's estimated tokens)."""
    reply = generation(kind, text)
    assert isinstance(reply.body, _Generation)
    stage = {"type": "context_compression", "name": "context-compression",
             "data": {"engine": "middle-out", "input_type": "prompt" if kind == COMPLETION else "messages",
                      "original_count": 100, "compressed_count": int(100 * shown)}}
    return replace(reply, body=replace(reply.body, pipeline=(stage,),
                                       prompt_tokens_of=lambda r: max(1, int(estimate_tokens(prompt_text(r)) * shown))))


def guardrail_blocked(patterns: tuple[str, ...] = ("ignore all previous instructions",)) -> Reply:
    """403 from a guardrail on the key or account, before any provider saw the request (errors guide,
    "Guardrail Errors": ``Request blocked: ...`` with ``metadata.patterns``; typed ``permission_denied``)."""
    return error_reply(403, "Request blocked: prompt injection patterns detected",
                       metadata={"patterns": list(patterns), "error_type": "permission_denied"})


def permission_denied() -> Reply:
    """403 ``permission_denied`` for a valid key that lacks the permission (errors guide, "Typed Error Codes")."""
    return error_reply(403, "Forbidden", metadata={"error_type": "permission_denied"})


def content_policy(provider: str = "Moonshot AI") -> Reply:
    """400 ``content_policy_violation``: a content filter, the provider's or OpenRouter's, flagged the input
    or output (errors guide, "Typed Error Codes", "Content Policy"; ``provider_code`` the upstream's own)."""
    return error_reply(400, "Provider returned error",
                       metadata={"error_type": "content_policy_violation", "provider_code": "content_filter",
                                 "provider_name": provider, "raw": "The request was rejected as sensitive"})


def refusal(provider: str = "Moonshot AI") -> Reply:
    """400 ``refusal``: the model explicitly refused the request (errors guide, "Typed Error Codes")."""
    return error_reply(400, "Provider returned error",
                       metadata={"error_type": "refusal", "provider_name": provider})


ROUTING_MESSAGES = {
    "require_parameters": "No endpoints found that can handle the requested parameters. To learn more about "
                          "provider routing, visit: https://openrouter.ai/docs/provider-routing",
    "data_policy": "No endpoints found matching your data policy (Free model training). Configure: "
                   "https://openrouter.ai/settings/privacy",
    "only": "No endpoints found for the requested providers. To learn more about provider routing, visit: "
            "https://openrouter.ai/docs/provider-routing",
}
"""404 bodies of the provider routing guide's failures, by the constraint that no endpoint met."""


def routing_404(reason: str = "require_parameters") -> Reply:
    """404 "No endpoints found ..." (provider routing guide) for the constraint ``reason``."""
    return error_reply(404, ROUTING_MESSAGES[reason])


def transient_400() -> Reply:
    """A 400 that names no parameter: an upstream provider refusing one request ("Provider
    returned error", errors guide: ``metadata.raw`` holds the provider's words)."""
    return error_reply(400, "Provider returned error", metadata={"raw": "upstream busy", "provider_name": "Prov"})


def schema_refused() -> Reply:
    """A 400 naming ``response_format``: this provider does not take structured outputs."""
    return error_reply(400, "Provider returned error",
                       metadata={"raw": "response_format json_schema is not supported by this model",
                                 "provider_name": "Prov"})


# Model availability errors, provider errors and routing fallbacks (errors guide
# api_reference/errors-and-debugging.mdx, "Model availability errors", "Provider errors"; router
# metadata guide guides/features/router-metadata.mdx, "Field Reference": ``attempt``, ``attempts``).

AVAILABILITY = {
    "model_not_found": (400, "invalid_request", False),
    "wrong_endpoint": (400, "invalid_request", False),
    "no_endpoints": (404, "not_found", False),
    "model_deprecated": (404, "not_found", False),
    "model_unavailable_upstream": (404, "not_found", False),
    "capacity_exhausted": (429, "rate_limit_exceeded", True),
    "temporarily_unavailable": (503, "provider_overloaded", True),
    "region_restricted": (403, "permission_denied", False),
    "privacy_restricted": (404, "not_found", False),
    "constraint_filtered": (404, "not_found", False),
    "free_variant_ended": (404, "not_found", False),
}
"""The guide's "Availability codes" table: each code's HTTP status, ``error_type`` and whether it is retryable."""


def availability(code: str, model: str = "moonshotai/kimi-k2", message: str | None = None, *,
                 retry_after: float | None = None, **fields: Any) -> Reply:
    """An availability error as the guide's example payloads send it: ``error`` holds ``message``,
    ``error_type``, ``http_status`` and the ``availability`` object (``code``, ``retryable``,
    ``requested_models`` and ``docs_url`` always; ``fields`` adds ``affected_providers``,
    ``excluded_by``, ``fallback_models``, ``constraint``), and the 429/503 codes a ``Retry-After``
    header mirrored in ``availability.retry_after``; ``metadata.previous_errors`` in its slim shape."""
    status, error_type, retryable = AVAILABILITY[code]
    found: dict[str, Any] = {"code": code, "retryable": retryable, "requested_models": [model],
                             "docs_url": f"https://openrouter.ai/docs/errors#{code}", **fields}
    if retry_after is not None:
        found["retry_after"] = retry_after
    error: dict[str, Any] = {"message": message or f"{model} is not available ({code})", "error_type": error_type,
                             "http_status": status, "availability": found}
    if fields.get("affected_providers"):
        error["metadata"] = {"previous_errors": [{"provider": p, "code": code, "status": status}
                                                 for p in fields["affected_providers"]]}
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return json_reply({"error": error}, status=status, headers=headers)


def capacity_exhausted(retry_after: float = 40.0) -> Reply:
    """429 ``capacity_exhausted``: every provider of the model at capacity (the guide's example payload)."""
    return availability("capacity_exhausted", "anthropic/claude-sonnet-4.5",
                        f"All providers for anthropic/claude-sonnet-4.5 are at capacity. Retry after {retry_after:g} "
                        "seconds.", retry_after=retry_after,
                        affected_providers=["anthropic", "amazon-bedrock", "google-vertex"],
                        fallback_models=["anthropic/claude-haiku-4.5"])


def region_restricted(model: str = "moonshotai/kimi-k2") -> Reply:
    """403 ``region_restricted`` (``error_type: permission_denied``): the model is geo-gated where the
    caller is. The guide gives no example payload for it; this one follows its table (403,
    ``permission_denied``, not retryable) and field reference (``excluded_by: ["geo"]``)."""
    return availability("region_restricted", model, f"{model} is not available in your region.", excluded_by=["geo"])


def provider_rate_limited() -> Reply:
    """429 from the provider, typed (the guide's "Provider errors" example: ``error_type:
    rate_limit_exceeded``, the provider's own ``provider_code``)."""
    return error_reply(429, "Rate limit exceeded", metadata={"error_type": "rate_limit_exceeded",
                                                             "provider_code": "rate_limited"})


def fell_back(kind: str, text: str = " I was there that night.", *, failed: str = "Moonshot AI",
              served: str = "DeepInfra") -> Reply:
    """A generation the router got from a fallback: ``attempt`` 2, ``attempts`` naming the provider
    that failed (429) and the one that served (200), ``provider`` the one that served."""
    reply = generation(kind, text, provider=served)
    assert isinstance(reply.body, _Generation)
    tried = ({"provider": failed, "model": "moonshotai/kimi-k2", "status": 429},
             {"provider": served, "model": "moonshotai/kimi-k2", "status": 200})
    return replace(reply, body=replace(reply.body, attempts=tried))


def guardrail_with_metadata(patterns: tuple[str, ...] = ("ignore all previous instructions",)) -> Reply:
    """The guardrail 403 exactly as the errors guide's second example sends it to a request with router
    metadata on: the body without ``error_type`` and ``openrouter_metadata`` beside ``error`` with the
    guardrail stage that blocked it (no endpoint ``selected``, no ``attempts``)."""
    return json_reply({
        "error": {"code": 403, "message": "Request blocked: prompt injection patterns detected",
                  "metadata": {"patterns": list(patterns)}},
        "openrouter_metadata": {
            "requested": "openai/gpt-4o", "strategy": "direct", "region": "iad", "summary": "available=1",
            "attempt": 1, "is_byok": False,
            "endpoints": {"total": 1, "available": [{"provider": "OpenAI", "model": "openai/gpt-4o",
                                                     "selected": False}]},
            "pipeline": [{"type": "guardrail", "name": "regex_pi_detection", "guardrail_id": "grd_abc123",
                          "guardrail_scope": "api-key",
                          "summary": "Blocked: prompt injection detected (1 pattern matched)",
                          "data": {"action": "blocked", "detected": True, "engines": ["regex"],
                                   "patterns": list(patterns)}}]}}, status=403)
