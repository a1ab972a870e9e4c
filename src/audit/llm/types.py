"""Value types the gateway returns and raises; free of litellm so callers import them cheaply."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from audit.record.usage import Usage


@dataclass(frozen=True)
class LLMResponse:
    """One model reply.

    ``text`` is already cut at the caller's stop sequences (some servers drop special
    tokens before matching stops, so the gateway cuts again). ``cached`` replies cost
    nothing in this run; ``usage`` still holds what the original call cost. ``shared`` (then
    also ``cached``) says the reply came from an identical request in flight, not the cache.
    """

    text: str
    finish_reason: str | None
    usage: Usage
    model: str
    provider: str | None = None
    latency_s: float = 0.0
    retries: int = 0
    cached: bool = False
    shared: bool = False
    endpoint: str | None = None
    """The endpoint that served the reply and its effective base URL (after OPENROUTER_API_BASE)."""
    api_base: str | None = None
    structured_output: str | None = None
    """``json_schema`` (or the response_format type sent), ``rejected`` (sent, refused, re-sent without) or None."""
    surrogates_replaced: int = 0
    """Lone UTF-16 surrogates (half an emoji) replaced by U+FFFD in ``text``; see ``replies.sanitize``."""
    outcome: str = "answer"
    """What the reply is (``replies.outcome_of``): ``answer``, ``empty`` (the model ended at once),
    ``reasoning_only`` (all of max_tokens spent reasoning, no answer text), ``content_filter``
    (the provider's filter cut the text: in a censorship audit a finding, not a failure) or
    ``blocked`` (a ``content_filter`` finish with no text: the filter withheld the whole answer)."""
    native_finish_reason: str | None = None
    """The finish reason the serving provider gave (OpenRouter normalises ``finish_reason``)."""
    reasoning_tokens: int = 0
    generation_id: str | None = None
    """OpenRouter's generation id (``gen-...``): what its activity page and support look up."""
    routing: dict[str, Any] | None = None
    """OpenRouter's routing metadata (endpoints considered, attempts), when the server sent it."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    cache_key: str | None = field(default=None, compare=False, repr=False)
    """The request's key in the response cache, so a caller can :meth:`~audit.llm.gateway.Gateway.forget`
    a reply it found unusable (not stored: it is the key, not part of the value)."""

    def record(self) -> dict[str, Any]:
        """A JSON-ready summary for output files (no raw payload).

        Built field by field: ``asdict`` deep-copies every value, the raw payload included,
        and this runs once per call.
        """
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("raw", "cache_key")}
        data["usage"] = self.usage.as_dict()
        return data

    @classmethod
    def from_record(cls, record: dict[str, Any], *, key: str) -> LLMResponse:
        """The reply :meth:`record` saved in the response cache under ``key``, served again as cached."""
        fields_ = {k: v for k, v in record.items() if k not in ("usage", "cached", "shared")}
        return cls(usage=Usage.of(record["usage"]), cached=True, cache_key=key, **fields_)


class ReplyTooLarge(Exception):
    """A reply body over ``gateway.max_reply_bytes``: cut off where it crossed the limit, never read whole."""


BLOCKING_KINDS = frozenset({"content_policy", "refusal", "guardrail", "moderation"})
"""Failures that are a filter between the caller and the model stopping the request (OpenRouter's errors
guide: the typed 400s ``content_policy_violation`` and ``refusal``, a 403 guardrail block, a 403 moderation
flag). On the audited model they are a finding (a ``blocked`` draw), never a failure; on any other role
an error naming the filter."""


@dataclass(frozen=True)
class Blocked:
    """What stopped a request before the model's words reached the caller: OpenRouter's typed
    ``error_type`` (or the kind, when the body had none), the provider the body names (None: OpenRouter's
    own guardrail, or a body that names none) and the reason it gives (``reasons``, ``patterns``, the
    provider's ``raw`` words or the message)."""

    code: str
    provider: str | None
    reason: str | None

    def as_dict(self) -> dict[str, str | None]:
        return {"code": self.code, "provider": self.provider, "reason": self.reason}

    def __str__(self) -> str:
        return (f"blocked by a filter: {self.code}" + (f" (provider {self.provider})" if self.provider else "")
                + (f": {self.reason}" if self.reason else ""))


class MalformedEvent(Exception):
    """A streamed event that is not a chunk: a ``data:`` line that is not a JSON object, or one the
    stream handler cannot read. The stream is broken there (what followed may be missing), so the
    attempt is an error finish and retried, never a reply read past the gap."""


class GatewayError(Exception):
    """A model call that failed for good (after retries where retrying makes sense).

    ``kind`` is one of: ``auth`` (401/403), ``permission`` (403 ``permission_denied``: the key lacks
    a permission), ``guardrail`` (403: a guardrail on the key or account blocked the request),
    ``content_policy`` and ``refusal`` (400 ``content_policy_violation``/``refusal``: a filter or the
    model refused), ``bad_request`` (400), ``model_not_found`` (400
    "... is not a valid model ID"), ``payment`` (402), ``moderation`` (403, input flagged),
    ``region`` (403, provider unavailable where the caller is), ``routing`` (404 "No endpoints
    found ...": no provider meets ``provider``'s constraints or the account's data policy),
    ``not_found`` (other 404), ``wrong_endpoint`` (400 ``availability.code: wrong_endpoint``: the
    model is served on another API route), ``context_length``, ``rate_limit`` (429), ``server`` (5xx),
    ``error_finish`` (HTTP 200, ``finish_reason: "error"``: the provider failed mid-generation;
    the partial text is no answer), ``empty`` (no text and no finish reason: "no content
    generated"), ``timeout`` (no whole reply within ``timeout_s``), ``connection``,
    ``bad_response`` (unparseable body), ``too_large`` (a body over ``max_reply_bytes``),
    ``budget`` (not sent: ``budget.max_cost_usd`` is spent).

    ``blocked`` is set on a failure of :data:`BLOCKING_KINDS`: the filter's code, provider and reason.
    """

    def __init__(self, kind: str, message: str, *, status: int | None = None, retries: int = 0,
                 blocked: Blocked | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retries = retries
        self.blocked = blocked

    @property
    def fatal(self) -> bool:
        """True when every further call with the same key and model would fail the same way."""
        return self.kind in FATAL_KINDS

    def __str__(self) -> str:
        hint = _HINTS.get(self.kind)
        status = f" {self.status}" if self.status else ""
        return f"{self.kind}{status}: {super().__str__()}" + (f" ({hint})" if hint else "")


# A bad key or an unknown model: a run should stop at the first one instead of recording
# the same failure for every remaining call (and paying for the calls that precede it).
# A spent sweep budget (``budget``) likewise stops the run: no later call may start.
# A mistyped model id or an account out of credits likewise: OpenRouter answers every call the same.
FATAL_KINDS = frozenset({"auth", "permission", "not_found", "model_not_found", "payment", "region", "routing",
                         "wrong_endpoint", "budget"})

# What the user can do about a failure that retrying cannot fix.
_HINTS = {
    "auth": "check OPENROUTER_API_KEY in .env or the environment, and the account's credits",
    "not_found": "check the model id in the config against the provider's model list",
    "model_not_found": "the model id is mistyped or retired: check it against https://openrouter.ai/models",
    "payment": "the key's credits do not cover this call: add credits (openrouter.ai/settings/credits) "
               "or lower max_tokens",
    "permission": "the key is valid but lacks the permission for this request: check the key's settings "
                  "(openrouter.ai/settings/keys) or use another key",
    "guardrail": "a guardrail on the OpenRouter key or account blocked this request before any provider saw it "
                 "(openrouter.ai/settings, guardrails); not the model's answer",
    "content_policy": "a content filter (the provider's or OpenRouter's) flagged the input or output; "
                      "not the model's own answer",
    "refusal": "the provider reported that the model refused the request outright (no text was returned)",
    "moderation": "OpenRouter's moderation flagged the input (see metadata.reasons); a provider without "
                  "moderation can be pinned with the role's provider setting (provider.only)",
    "region": "the model or provider is not available from this region: pin another with the role's provider "
              "setting (provider.only, provider.ignore) or run from an allowed region; retrying from here cannot help",
    "wrong_endpoint": "the model is not served on this API route (availability.constraint names the one that "
                      "serves it): pick a model that serves it, e.g. one that serves /completions for raw prompts",
    "routing": "no provider meets the request's routing constraints: loosen the role's provider setting "
               "(only, require_parameters, data_collection) or the account's data policy "
               "(openrouter.ai/settings/privacy)",
    "error_finish": "the provider failed mid-generation; the partial text was discarded",
    "empty": "the provider returned no content (often a cold start); retried",
    "context_length": "shorten the prompt or lower max_tokens",
    "too_large": "the server sent more than gateway.max_reply_bytes; raise it if the replies are real",
}
