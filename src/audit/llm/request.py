"""What one call sends, from a verb's arguments (pure logic, no I/O): the sampling parameters,
the attribution headers, whether it streams, and its key in the response cache.

The request's bytes are fixed here and nowhere else, so the cache key and what reaches the server
are built from the same fields: a parameter a caller leaves out is left out of both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.llm import backend
from audit.llm.cache import cache_key
from audit.llm.settings import GatewaySettings


def attribution_headers(settings: GatewaySettings) -> dict[str, str]:
    """The headers every request carries: OpenRouter's app attribution and, when asked, its routing metadata."""
    headers = {}
    if settings.title:
        headers["X-Title"] = settings.title
    # Always ours, on both routes: left out, litellm's chat route sends its own (https://litellm.ai),
    # so OpenRouter would attribute the run's chat calls to litellm and its raw calls to nobody.
    headers["HTTP-Referer"] = settings.referer or ""
    if settings.routing_metadata:
        headers["X-OpenRouter-Metadata"] = "enabled"
    return headers


def sampling(max_tokens: int | None, temperature: float | None, stops: Sequence[str]) -> dict[str, Any]:
    """The sampling parameters a caller set (an unset one is the server's default, and is not sent)."""
    params: dict[str, Any] = {}
    if max_tokens is not None:
        params["max_tokens"] = int(max_tokens)
    if temperature is not None:
        params["temperature"] = float(temperature)
    if stops:
        params["stop"] = list(stops)
    return params


def streams(settings: GatewaySettings, route: str, max_tokens: Any) -> bool:
    """Whether a call is streamed: a chat call allowed ``gateway.stream.min_tokens`` or more.

    Only the chat route: litellm's raw-completions stream drops the serving provider's name,
    without which a cut-off call cannot tell whether its billing stopped (target draws are short).
    """
    least = settings.stream_min_tokens
    return route == backend.CHAT_ROUTE and least is not None and int(max_tokens or 0) >= least


def request_key(route: str, endpoint: str, server: str, model: str, provider: Mapping[str, Any] | None,
                payload: Mapping[str, Any], params: Mapping[str, Any], *, sample_index: int, repeat: int,
                draw: str) -> str:
    """The request's key in the response cache: everything that makes its reply, and which draw it is.

    ``server`` is the endpoint's identity (its effective base URL unless configured); ``repeat``
    (the run's sample index) and ``draw`` (whose sample this is) enter only when set, so repeat 0
    and an unnamed draw keep older caches valid.
    """
    return cache_key({"route": route, "endpoint": endpoint, "api_base": server, "model": model,
                      "provider": dict(provider) if provider else None, **payload, **params,
                      "sample_index": sample_index,
                      **({"repeat": repeat} if repeat else {}),
                      **({"draw": draw} if draw else {})})
