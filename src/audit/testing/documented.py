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
    estimate_tokens, prompt_text


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
