"""Per-token prices, and a call's cost split by them into uncached input, cache reads, cache writes
and output, with the prompt cache's saving (pure logic: the list is fetched by the gateway).

OpenRouter bills one figure per call (``usage.cost``) and documents no per-part cost
(OpenRouterTeam/docs, ``cookbook/administration/usage-accounting.mdx``: ``cost`` and, for BYOK
only, ``cost_details.upstream_inference_cost``). The split is therefore priced per token and marked
an estimate (``estimated_calls``); the billed ``cost`` stays the service's own. Two price lists,
in this order:

1. litellm's price map (``model_cost``: ``input_cost_per_token``, ``cache_read_input_token_cost``,
   ``cache_creation_input_token_cost``, ``output_cost_per_token``), offline;
2. OpenRouter's model list (``GET /models``; OpenRouterTeam/docs ``guides/overview/models.mdx``,
   "Pricing Object": ``prompt``, ``completion``, ``input_cache_read``, ``input_cache_write``, USD per
   token as decimal strings), for a model the map lacks (``anthropic/claude-sonnet-4`` at litellm
   1.106); such calls are also counted in ``list_priced_calls``. The list gives the top provider's
   base price: its conditional ``overrides`` (long-context or peak-hour rates) are not applied.

A model neither list prices, or a call that read or wrote the prompt cache with no cache price
listed, gets no split rather than a guessed one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from audit.llm import backend
from audit.record.usage import Usage

LITELLM = "litellm"
OPENROUTER = "openrouter"


@dataclass(frozen=True)
class Price:
    """A model's price in USD per token; a cache part the list does not price is None.

    ``source`` names the list it came from (:data:`LITELLM` or :data:`OPENROUTER`).
    """

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    source: str = LITELLM

    @property
    def origin(self) -> str:
        """The list in words, for a ledger note."""
        return "OpenRouter's model list" if self.source == OPENROUTER else "litellm's price map"


def split(usage: Usage, price: Price | None) -> Usage:
    """``usage`` with its cost split and the cache's saving at ``price``; unchanged when there is no
    price, when the service billed nothing (a local server, a free model: nothing to split), or when
    the call used a cache part ``price`` leaves unpriced."""
    if not usage.cost or price is None:
        return usage
    return priced(usage, price) or usage


def priced(usage: Usage, price: Price) -> Usage | None:
    """The split at ``price``; None when the call used a cache part that has no price."""
    read, write = usage.cached_prompt_tokens, usage.cache_write_tokens
    if (read and price.cache_read is None) or (write and price.cache_write is None):
        return None
    p_in, p_read, p_write = price.input, price.cache_read or 0.0, price.cache_write or 0.0
    uncached = max(usage.prompt_tokens - read - write, 0)
    return replace(usage, input_cost=uncached * p_in, cache_read_cost=read * p_read, cache_write_cost=write * p_write,
                   output_cost=usage.completion_tokens * price.output,
                   cache_saving=read * (p_in - p_read) - write * (p_write - p_in),
                   priced_calls=usage.priced_calls + 1, estimated_calls=usage.estimated_calls + 1,
                   list_priced_calls=usage.list_priced_calls + int(price.source == OPENROUTER))


@lru_cache(maxsize=256)
def mapped(model: str) -> Price | None:
    """``model``'s price in litellm's map, under the names OpenRouter ids take there
    (``openrouter/<id>``, ``<id>``, the id without its vendor); None when none is listed with a price."""
    bare = model.removeprefix("openrouter/")
    table = backend.litellm().model_cost
    for name in (f"openrouter/{bare}", bare, bare.split("/", 1)[-1]):
        entry = table.get(name)
        # litellm adds a zero-priced entry for every ``openrouter/*`` model it routes: no price at all
        if isinstance(entry, dict) and (_number(entry.get("input_cost_per_token")) or 0) > 0 \
                and _number(entry.get("output_cost_per_token")) is not None:
            return Price(_number(entry["input_cost_per_token"]) or 0.0, _number(entry["output_cost_per_token"]) or 0.0,
                         _number(entry.get("cache_read_input_token_cost")),
                         _number(entry.get("cache_creation_input_token_cost")))
    return None


def listed(listing: Any) -> dict[str, Price | None]:
    """Every model in a ``GET /models`` answer (``{"data": [{"id", "pricing": {...}}]}``) with its
    price; None for a model listed with no readable price (a local server lists ids only). A value
    that is not a number (or is negative) makes that part unpriced, never zero."""
    found: dict[str, Price | None] = {}
    for entry in (listing.get("data") if isinstance(listing, Mapping) else None) or ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
            continue
        pricing = entry.get("pricing") if isinstance(entry.get("pricing"), Mapping) else {}
        prompt, completion = _number(pricing.get("prompt")), _number(pricing.get("completion"))
        found[entry["id"]] = None if prompt is None or completion is None else \
            Price(prompt, completion, _number(pricing.get("input_cache_read")),
                  _number(pricing.get("input_cache_write")), OPENROUTER)
    return found


def _number(value: Any) -> float | None:
    """A price as a float; None for a missing, unreadable, non-finite or negative one (a negative
    figure is no price a call can be split by)."""
    try:
        number = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return number if number is not None and 0 <= number < float("inf") else None
