"""The one usage record: what model calls used and cost, whatever the scale.

A single call (a draw's ``usage``, a ledger line in ``usage.jsonl``), a sum of calls (an auditor
turn with its re-asks, a judge panel), a run's totals (``usage.json``'s ``totals``, ``by_model``
and ``by_tag``, ``summary.json``'s ``usage``) and the Inspect export all use this record, so a
field added here (the cached-token counts, the cost split) reaches every one of them. It sits on
the base floor because every floor reads it and it needs nothing.

Reading is tolerant of history: :meth:`Usage.of` takes any mapping the program ever wrote (missing
fields are zero, unknown ones ignored, ``null`` is no usage), so old run dirs keep loading.

BYOK (bring your own provider key): OpenRouter's ``usage.cost`` is then only its fee, and the provider
bills the key's owner ``usage.cost_details.upstream_inference_cost`` directly (usage-accounting.mdx,
"Cost Breakdown"; about 20 times the fee). ``cost`` is the whole bill, both added, so the budget, the
ledger and every summary count what the user pays; ``upstream_cost`` and ``byok_calls`` show the part.

The cost split: ``cost`` is what the service billed (OpenRouter's ``usage.cost``). OpenRouter
documents no per-part cost (``cookbook/administration/usage-accounting.mdx``: ``cost`` and
``cost_details.upstream_inference_cost``, the latter for BYOK only), so the four parts and the
prompt cache's saving are priced per token from a price list (:mod:`audit.llm.prices`: litellm's
map, else OpenRouter's model list, counted in ``list_priced_calls``) and counted in
``estimated_calls``; a call no price list knows has no split (``priced_calls`` says how many had one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

_COUNTS = ("calls", "cached_calls", "shared_calls", "errors", "aborted_calls", "retries", "prompt_tokens", "cached_prompt_tokens",
           "cache_write_tokens", "completion_tokens", "surrogates_replaced", "priced_calls", "estimated_calls",
           "list_priced_calls", "byok_calls")
_MONEY = ("cost", "estimated_cost", "input_cost", "cache_read_cost", "cache_write_cost", "output_cost", "cache_saving",
          "upstream_cost")
_LABELS = ("model", "provider")


@dataclass(frozen=True)
class Usage:
    """Calls, tokens and dollars; ``a + b`` adds field by field.

    ``model`` and ``provider`` name who served a single call; a sum spans calls and names neither.
    """

    calls: int = 0
    cached_calls: int = 0
    """Served from the response cache: paid for by an earlier run or session, so no cost here."""
    shared_calls: int = 0
    """Served by an identical request in flight (single-flight); ``calls - cached_calls - shared_calls`` were sent."""
    errors: int = 0
    """Calls that failed for good (an aborted call is counted in ``aborted_calls`` instead)."""
    aborted_calls: int = 0
    """Calls cut off in flight (deadline, Ctrl-C, a budget stop): the server had them and may bill them."""
    retries: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Of ``prompt_tokens``, read from the provider's prompt cache (billed at its cache-read price)."""
    cache_write_tokens: int = 0
    """Of ``prompt_tokens``, written to the provider's prompt cache (billed at its cache-write price)."""
    completion_tokens: int = 0
    cost: float = 0.0
    """USD the call cost: OpenRouter's ``usage.cost``, plus ``upstream_cost`` under BYOK; zero for a reply
    from the response cache. An aborted call's cost is the gateway's estimate (:mod:`audit.llm.aborted`),
    also in ``estimated_cost``."""
    upstream_cost: float = 0.0
    """Of ``cost``, what the provider billed on the user's own key (BYOK: ``cost_details.upstream_inference_cost``);
    the rest of a BYOK call's cost is OpenRouter's fee."""
    byok_calls: int = 0
    """Calls OpenRouter routed through the user's own provider key (``usage.is_byok``)."""
    estimated_cost: float = 0.0
    """Of ``cost``, the estimates of ``aborted_calls`` (no reply said what they cost)."""
    input_cost: float = 0.0
    """USD of the prompt tokens neither read from nor written to the prompt cache."""
    cache_read_cost: float = 0.0
    cache_write_cost: float = 0.0
    output_cost: float = 0.0
    cache_saving: float = 0.0
    """USD the prompt cache saved: its tokens at the input price less what they cost (a write costs extra)."""
    priced_calls: int = 0
    """Calls with a cost split (the four parts and the saving); the others have none."""
    estimated_calls: int = 0
    """Of ``priced_calls``, split from a price list rather than the service's own figures."""
    list_priced_calls: int = 0
    """Of ``estimated_calls``, priced from OpenRouter's model list (``GET /models``); the rest from
    litellm's price map (:mod:`audit.llm.prices`)."""
    latency_s: float = 0.0
    surrogates_replaced: int = 0
    """Lone UTF-16 surrogates (half an emoji) replaced by U+FFFD in replies (``replies.sanitize``)."""
    model: str | None = None
    provider: str | None = None

    @classmethod
    def of(cls, data: Usage | Mapping[str, Any] | None) -> Usage:
        """The record in any shape a run dir ever held it; zero for ``None`` or a non-mapping."""
        if isinstance(data, Usage):
            return data
        if not isinstance(data, Mapping):
            return cls()
        values: dict[str, Any] = {}
        for name in _COUNTS:
            values[name] = _number(data.get(name), int)
        for name in (*_MONEY, "latency_s"):
            values[name] = _number(data.get(name), float)
        for name in _LABELS:
            values[name] = str(data[name]) if data.get(name) is not None else None
        return cls(**values)

    @classmethod
    def total(cls, records: Iterable[Usage | Mapping[str, Any] | None]) -> Usage:
        """The sum of ``records`` (``None`` entries are skipped)."""
        out = cls()
        for record in records:
            if record:
                out = out + cls.of(record)
        return out

    def __add__(self, other: Usage) -> Usage:
        sums = {n: getattr(self, n) + getattr(other, n) for n in (*_COUNTS, *_MONEY, "latency_s")}
        return replace(self, **sums, model=None, provider=None)

    def __bool__(self) -> bool:
        return any(getattr(self, n) for n in (*_COUNTS, *_MONEY))

    def free(self) -> Usage:
        """The record of a reply that cost nothing in this run (from the response cache or a
        request in flight): its tokens still say what the prompt and reply were."""
        return replace(self, cost=0.0, upstream_cost=0.0, input_cost=0.0, cache_read_cost=0.0, cache_write_cost=0.0, output_cost=0.0,
                       cache_saving=0.0, latency_s=0.0, retries=0)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def sent(self) -> int:
        """Requests that went to the server (neither from the response cache nor shared in flight)."""
        return self.calls - self.cached_calls - self.shared_calls

    @property
    def replay(self) -> bool:
        """Every reply came from the response cache: the run repeats a sample already taken."""
        return self.calls > 0 and self.sent <= 0

    def cache_line(self) -> str:
        """The end line's prompt-cache part, e.g. ``; 12,345 of 20,000 prompt tokens (62%) read from the
        provider's prompt cache, saving ~$0.0331 (estimate)``; empty when the provider reported none."""
        if not self.cached_prompt_tokens or not self.prompt_tokens:
            return ""
        share = self.cached_prompt_tokens / self.prompt_tokens
        line = (f"; {self.cached_prompt_tokens:,} of {self.prompt_tokens:,} prompt tokens ({share:.0%}) "
                "read from the provider's prompt cache")
        if self.priced_calls:
            line += f", saving {'~' if self.estimated_calls else ''}${self.cache_saving:.4f}" + \
                    (" (estimate)" if self.estimated_calls else "")
        return line

    def byok_line(self) -> str:
        """The end line's BYOK part, e.g. ``; 13 of 20 calls BYOK: $0.000260 of the total billed on your
        provider key, the rest by OpenRouter``; empty when no call was BYOK."""
        if not self.byok_calls:
            return ""
        return (f"; {self.byok_calls:,} of {self.calls:,} calls BYOK: ${self.upstream_cost:.6f} of the total billed "
                "on your provider key, the rest by OpenRouter")

    def bill_notes(self) -> str:
        """What the end line adds after the total: the prompt cache's part and the BYOK part."""
        return self.cache_line() + self.byok_line()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, money rounded; the labels only when known."""
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _LABELS:
                if value is not None:
                    data[f.name] = value
            elif f.name in _MONEY:
                data[f.name] = round(value, 10)
            elif f.name == "latency_s":
                data[f.name] = round(value, 6)
            else:
                data[f.name] = value
        return data


FIELDS = tuple(f.name for f in fields(Usage))
"""Every field of the record (a reader picking usage keys out of a wider mapping uses these)."""


def _number(value: Any, kind: type) -> Any:
    """``value`` as ``kind``; zero for a missing, null or unreadable value."""
    if value is None:
        return kind(0)
    try:
        return kind(value)
    except (TypeError, ValueError):
        return kind(0)
