"""Value types the gateway returns and raises; free of litellm so callers import them cheaply."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Usage:
    """Token counts and the provider-reported cost (``usage.cost``, USD) of one call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cached_prompt_tokens: int = 0
    """Of ``prompt_tokens``, read from the provider's prompt cache (``prompt_tokens_details.cached_tokens``)."""
    cache_write_tokens: int = 0
    """Of ``prompt_tokens``, written to the provider's prompt cache (``prompt_tokens_details.cache_write_tokens``)."""


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
        data["usage"] = asdict(self.usage)
        return data


class ReplyTooLarge(Exception):
    """A reply body over ``gateway.max_reply_bytes``: cut off where it crossed the limit, never read whole."""


class GatewayError(Exception):
    """A model call that failed for good (after retries where retrying makes sense).

    ``kind`` is one of: ``auth`` (401/403), ``bad_request`` (400), ``not_found`` (404,
    unknown model), ``context_length``, ``rate_limit`` (429), ``server`` (5xx),
    ``timeout`` (no whole reply within ``timeout_s``), ``connection``, ``bad_response``
    (unparseable body), ``too_large`` (a body over ``max_reply_bytes``), ``budget`` (not sent:
    ``budget.max_cost_usd`` is spent).
    """

    def __init__(self, kind: str, message: str, *, status: int | None = None, retries: int = 0):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retries = retries

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
FATAL_KINDS = frozenset({"auth", "not_found", "budget"})

# What the user can do about a failure that retrying cannot fix.
_HINTS = {
    "auth": "check OPENROUTER_API_KEY in .env or the environment, and the account's credits",
    "not_found": "check the model id in the config against the provider's model list",
    "context_length": "shorten the prompt or lower max_tokens",
    "too_large": "the server sent more than gateway.max_reply_bytes; raise it if the replies are real",
}
