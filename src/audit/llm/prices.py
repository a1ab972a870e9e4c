"""A call's cost split into uncached input, cache reads, cache writes and output, and the prompt
cache's saving, priced per token.

OpenRouter bills one figure per call (``usage.cost``) and documents no per-part cost
(OpenRouterTeam/docs, ``cookbook/administration/usage-accounting.mdx``: ``cost`` and, for BYOK
only, ``cost_details.upstream_inference_cost``). The split therefore comes from litellm's price map
(``model_cost``: ``input_cost_per_token``, ``cache_read_input_token_cost``,
``cache_creation_input_token_cost``, ``output_cost_per_token``) and is marked an estimate
(``estimated_calls``); the billed ``cost`` stays the service's own. A model the map does not know,
or one that read or wrote the prompt cache with no cache price in the map, gets no split rather
than a guessed one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from audit.llm import backend
from audit.usage import Usage


def split(usage: Usage, *models: str | None) -> Usage:
    """``usage`` with its cost split and the cache's saving, priced for the first of ``models`` the
    price map knows (the id asked for, then the one the server named); unchanged when none is, or
    when the service billed nothing (a local server, a free model: nothing to split)."""
    if not usage.cost:
        return usage
    for model in models:
        price = price_of(model) if model else None
        if price is not None:
            return priced(usage, price) or usage
    return usage


def priced(usage: Usage, price: Mapping[str, float]) -> Usage | None:
    """The split at ``price`` (per token: ``input``, ``output``, ``cache_read``, ``cache_write``);
    None when the call used a cache part that has no price."""
    read, write = usage.cached_prompt_tokens, usage.cache_write_tokens
    if (read and "cache_read" not in price) or (write and "cache_write" not in price):
        return None
    p_in, p_read, p_write = price["input"], price.get("cache_read", 0.0), price.get("cache_write", 0.0)
    uncached = max(usage.prompt_tokens - read - write, 0)
    return replace(usage, input_cost=uncached * p_in, cache_read_cost=read * p_read, cache_write_cost=write * p_write,
                   output_cost=usage.completion_tokens * price["output"],
                   cache_saving=read * (p_in - p_read) - write * (p_write - p_in),
                   priced_calls=usage.priced_calls + 1, estimated_calls=usage.estimated_calls + 1)


@lru_cache(maxsize=256)
def price_of(model: str) -> Mapping[str, float] | None:
    """Per-token prices of ``model`` from litellm's map, under the names OpenRouter ids take there
    (``openrouter/<id>``, ``<id>``, the id without its vendor); None when none is listed with a price."""
    bare = model.removeprefix("openrouter/")
    table = backend.litellm().model_cost
    for name in (f"openrouter/{bare}", bare, bare.split("/", 1)[-1]):
        entry = table.get(name)
        # litellm adds a zero-priced entry for every ``openrouter/*`` model it routes: no price at all
        if isinstance(entry, dict) and (_number(entry.get("input_cost_per_token")) or 0) > 0 \
                and _number(entry.get("output_cost_per_token")) is not None:
            price = {"input": _number(entry["input_cost_per_token"]), "output": _number(entry["output_cost_per_token"]),
                     "cache_read": _number(entry.get("cache_read_input_token_cost")),
                     "cache_write": _number(entry.get("cache_creation_input_token_cost"))}
            return {k: v for k, v in price.items() if v is not None}
    return None


def _number(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
